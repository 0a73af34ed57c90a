// Dates as the product counts them: Europe/Rome days, weeks starting on Monday.

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

const timeFmt = new Intl.DateTimeFormat('it-IT', { timeZone: TZ, hour: '2-digit', minute: '2-digit' });
const dateTimeFmt = new Intl.DateTimeFormat('it-IT', {
  timeZone: TZ,
  weekday: 'short',
  day: 'numeric',
  month: 'short',
  hour: '2-digit',
  minute: '2-digit',
});
const dateFmt = new Intl.DateTimeFormat('it-IT', { timeZone: TZ, weekday: 'long', day: 'numeric', month: 'long' });

export const fmtTime = (iso: string | number) => timeFmt.format(new Date(iso));
export const fmtDateTime = (iso: string | number) => dateTimeFmt.format(new Date(iso));
export const fmtDate = (iso: string | number) => dateFmt.format(new Date(iso));

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

// Numbers as an Italian reader writes them: `90,7`, `1.200`.
const decimalFmt = new Intl.NumberFormat('it-IT', { minimumFractionDigits: 1, maximumFractionDigits: 1 });
const numberFmt = new Intl.NumberFormat('it-IT', { maximumFractionDigits: 1 });
const percentFmt = new Intl.NumberFormat('it-IT', { style: 'percent', maximumFractionDigits: 0 });

/** One decimal always: `1,5`, `16,0`. */
export const fmtDecimal = (n: number) => decimalFmt.format(n);
/** At most one decimal: `12`, `12,5`, `1.200`. */
export const fmtNumber = (n: number) => numberFmt.format(n);
/** A ratio as a percentage: 0.5 → `50%`. */
export const fmtPercent = (ratio: number) => percentFmt.format(ratio);
