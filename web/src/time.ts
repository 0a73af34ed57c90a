// Dates as the product counts them: Europe/Rome days, weeks starting on Monday.

import { intlLocale } from './i18n';

export const TZ = 'Europe/Rome';

const dayFmt = new Intl.DateTimeFormat('en-CA', { timeZone: TZ, year: 'numeric', month: '2-digit', day: '2-digit' });
const offsetFmt = new Intl.DateTimeFormat('en-US', { timeZone: TZ, timeZoneName: 'longOffset' });

/** The Rome calendar date (`YYYY-MM-DD`) of an instant. */
export function romeDate(t: Date | number): string {
  return dayFmt.format(t);
}

function offsetMinutes(t: number): number {
  const name = offsetFmt.formatToParts(t).find((p) => p.type === 'timeZoneName')?.value ?? 'GMT';
  const m = /GMT([+-])(\d{2}):(\d{2})/.exec(name);
  if (!m) return 0;
  return (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3]));
}

/** The instant a Rome calendar date begins (midnight Rome). */
export function romeMidnight(date: string): number {
  const [y, mo, d] = date.split('-').map(Number) as [number, number, number];
  const utc = Date.UTC(y, mo - 1, d);
  // The offset at midnight can differ from the one a few hours later on a DST day; two passes settle it.
  let t = utc - offsetMinutes(utc) * 60_000;
  t = utc - offsetMinutes(t) * 60_000;
  return t;
}

export function addDays(date: string, n: number): string {
  const [y, mo, d] = date.split('-').map(Number) as [number, number, number];
  return new Date(Date.UTC(y, mo - 1, d + n)).toISOString().slice(0, 10);
}

/** Monday of the Rome week holding `date`. */
export function mondayOf(date: string): string {
  const [y, mo, d] = date.split('-').map(Number) as [number, number, number];
  const wd = (new Date(Date.UTC(y, mo - 1, d)).getUTCDay() + 6) % 7;
  return addDays(date, -wd);
}

export function firstOfMonth(date: string, back = 0): string {
  const [y, mo] = date.split('-').map(Number) as [number, number];
  const dt = new Date(Date.UTC(y, mo - 1 - back, 1));
  return dt.toISOString().slice(0, 10);
}

/** Hours of [start, end) inside [from, to), one decimal place is for display. */
export function overlapHours(start: number, end: number, from: number, to: number): number {
  const ms = Math.min(end, to) - Math.max(start, from);
  return ms > 0 ? ms / 3_600_000 : 0;
}

// Formatters for the app's language, made once per language.
const cache = new Map<string, Intl.DateTimeFormat | Intl.NumberFormat>();
/** The formatter called `name` for the app's language, made by `make` the first time. */
function cached<F extends Intl.DateTimeFormat | Intl.NumberFormat>(name: string, make: (locale: string) => F): F {
  const key = `${intlLocale()}:${name}`;
  let f = cache.get(key) as F | undefined;
  if (!f) {
    f = make(intlLocale());
    cache.set(key, f);
  }
  return f;
}
const dtf = (name: string, options: Intl.DateTimeFormatOptions) => cached(name, (locale) => new Intl.DateTimeFormat(locale, options));
const nf = (name: string, options: Intl.NumberFormatOptions) => cached(name, (locale) => new Intl.NumberFormat(locale, options));

export const fmtTime = (iso: string | number) => dtf('time', { timeZone: TZ, hour: '2-digit', minute: '2-digit' }).format(new Date(iso));
export const fmtDateTime = (iso: string | number) =>
  dtf('dateTime', { timeZone: TZ, weekday: 'short', day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' }).format(new Date(iso));
export const fmtDate = (iso: string | number) => dtf('date', { timeZone: TZ, weekday: 'long', day: 'numeric', month: 'long' }).format(new Date(iso));
/** A calendar date (`YYYY-MM-DD`) as "12 nov 2026". */
export const fmtDay = (date: string) => dtf('day', { timeZone: 'UTC', day: 'numeric', month: 'short', year: 'numeric' }).format(new Date(`${date}T00:00:00Z`));
/** Any Intl date format of the app's language (charts' labels). */
export const dateFormat = (name: string, options: Intl.DateTimeFormatOptions) => dtf(name, options);

/** `h:mm:ss` of a duration. */
export function fmtClock(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  return `${h}:${String(m).padStart(2, '0')}:${String(sec).padStart(2, '0')}`;
}

/** "16 h 5 min" */
export function fmtHours(ms: number): string {
  const min = Math.max(0, Math.round(ms / 60_000));
  const h = Math.floor(min / 60);
  const m = min % 60;
  return h > 0 ? `${h} h ${m} min` : `${m} min`;
}

// Numbers as the reader writes them: `90,7` and `1.200` in Italian, `90.7` and `1,200` in English.
/** One decimal always: `1,5`, `16,0`. */
export const fmtDecimal = (n: number) => nf('decimal', { minimumFractionDigits: 1, maximumFractionDigits: 1 }).format(n);
/** At most one decimal: `12`, `12,5`, `1.200`. */
export const fmtNumber = (n: number) => nf('number', { maximumFractionDigits: 1 }).format(n);
/** A ratio as a percentage: 0.5 → `50%`. */
export const fmtPercent = (ratio: number) => nf('percent', { style: 'percent', maximumFractionDigits: 0 }).format(ratio);

/** A number typed by a person in either language: `90,7` or `90.7`; NaN when it is not one. */
export function parseDecimal(text: string): number {
  const s = text.trim().replace(/\s/g, '').replace(',', '.');
  return /^\d+(\.\d+)?$/.test(s) ? Number(s) : NaN;
}

/** A `datetime-local` value (`YYYY-MM-DDTHH:mm`) read as Rome time, as an instant. */
export function romeInstant(local: string): number {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})/.exec(local);
  if (!m) return NaN;
  const utc = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]));
  let t = utc - offsetMinutes(utc) * 60_000;
  t = utc - offsetMinutes(t) * 60_000;
  return t;
}

/** An instant as a `datetime-local` value in Rome time. */
export function romeLocalInput(t: string | number): string {
  const ms = typeof t === 'number' ? t : Date.parse(t);
  const local = new Date(ms + offsetMinutes(ms) * 60_000);
  return local.toISOString().slice(0, 16);
}
