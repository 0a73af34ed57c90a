import { api } from '../api/client';
import type { Fast, Stats as StatsData } from '../api/types';
import { Fact, LoadError, Loading, PageTitle } from '../components/ui';
import { useLoad } from '../hooks';
import { addDays, dateFormat, firstOfMonth, fmtDecimal, fmtNumber, fmtPercent, mondayOf, overlapHours, romeDate, romeMidnight } from '../time';
import { t } from '../i18n';
import { onSynced } from '../queue';
import { useEffect } from 'preact/hooks';

const WEEKS = 8;
const MONTHS = 6;
const CAL_WEEKS = 5;
const MAX_PAGES = 10;

async function loadStats(): Promise<{ stats: StatsData; fasts: Fast[] }> {
  const today = romeDate(Date.now());
  const horizon = romeMidnight(firstOfMonth(today, MONTHS - 1));
  const [stats, page] = await Promise.all([api.stats(), api.fasts(50)]);
  const fasts = [...page.items];
  let before = page.nextBefore;
  // Older pages only as far back as the charts reach.
  for (let i = 1; before && i < MAX_PAGES; i++) {
    const last = fasts[fasts.length - 1];
    if (last && Date.parse(last.startedAt) < horizon) break;
    const p = await api.fasts(50, before);
    fasts.push(...p.items);
    before = p.nextBefore;
  }
  return { stats, fasts };
}

interface Bar {
  label: string;
  long: string;
  hours: number;
}

function hoursIn(fasts: Fast[], from: number, to: number, now: number): number {
  return fasts.reduce((sum, f) => {
    const end = f.endedAt ? Date.parse(f.endedAt) : now;
    return sum + overlapHours(Date.parse(f.startedAt), end, from, to);
  }, 0);
}

const monthName = () => dateFormat('monthShort', { month: 'short', timeZone: 'UTC' });
const monthLong = () => dateFormat('monthLong', { month: 'long', year: 'numeric', timeZone: 'UTC' });
const dayLong = () => dateFormat('dayLong', { day: 'numeric', month: 'long', timeZone: 'UTC' });
const dayShort = () => dateFormat('dayShort', { day: 'numeric', month: 'numeric', timeZone: 'UTC' });

function weekBars(fasts: Fast[], now: number): Bar[] {
  const monday = mondayOf(romeDate(now));
  return Array.from({ length: WEEKS }, (_, i) => {
    const start = addDays(monday, -7 * (WEEKS - 1 - i));
    const hours = hoursIn(fasts, romeMidnight(start), romeMidnight(addDays(start, 7)), now);
    const d = new Date(`${start}T00:00:00Z`);
    return { label: dayShort().format(d), long: t('stats.weekOf', { day: dayLong().format(d) }), hours };
  });
}

function monthBars(fasts: Fast[], now: number): Bar[] {
  const today = romeDate(now);
  return Array.from({ length: MONTHS }, (_, i) => {
    const start = firstOfMonth(today, MONTHS - 1 - i);
    const end = firstOfMonth(addDays(start, 40));
    const hours = hoursIn(fasts, romeMidnight(start), romeMidnight(end), now);
    const d = new Date(`${start}T00:00:00Z`);
    return { label: monthName().format(d), long: monthLong().format(d), hours };
  });
}

/** Rome days that count for a streak: a completed fast ended on them or a completed 24 h+ fast covered them. */
function streakDays(fasts: Fast[]): Set<string> {
  const days = new Set<string>();
  for (const f of fasts) {
    if (f.status !== 'COMPLETED' || !f.endedAt) continue;
    const start = Date.parse(f.startedAt);
    const end = Date.parse(f.endedAt);
    days.add(romeDate(end));
    if (end - start >= 24 * 3_600_000) {
      for (let d = romeDate(start); d <= romeDate(end); d = addDays(d, 1)) {
        if (romeMidnight(d) >= start && romeMidnight(addDays(d, 1)) <= end) days.add(d);
      }
    }
  }
  return days;
}

function BarChart({ title, bars, id, empty }: { title: string; bars: Bar[]; id: string; empty: string }) {
  if (bars.every((b) => b.hours < 0.05)) {
    return (
      <figure class="card chart" aria-labelledby={`${id}-cap`}>
        <figcaption id={`${id}-cap`}>
          <h2>{title}</h2>
        </figcaption>
        <p class="empty">{empty}</p>
      </figure>
    );
  }
  const max = Math.max(24, ...bars.map((b) => b.hours));
  const w = 320;
  const h = 160;
  const bw = w / bars.length;
  return (
    <figure class="card chart" aria-labelledby={`${id}-cap`}>
      <figcaption id={`${id}-cap`}>
        <h2>{title}</h2>
      </figcaption>
      <svg viewBox={`0 0 ${w} ${h + 34}`} role="img" aria-labelledby={`${id}-cap`} aria-describedby={`${id}-table`}>
        <line class="axis" x1="0" y1={h} x2={w} y2={h} />
        {bars.map((b, i) => {
          const bh = (b.hours / max) * (h - 16);
          return (
            <g key={b.label}>
              <rect class="bar" x={i * bw + bw * 0.15} y={h - bh} width={bw * 0.7} height={bh} rx="3" />
              <text class="value" x={i * bw + bw / 2} y={h - bh - 4} text-anchor="middle">
                {b.hours >= 0.05 ? (b.hours < 10 ? fmtDecimal(b.hours) : fmtNumber(Math.round(b.hours))) : ''}
              </text>
              <text class="label" x={i * bw + bw / 2} y={h + 22} text-anchor="middle">
                {b.label}
              </text>
            </g>
          );
        })}
      </svg>
      {/* A table is as wide as its cells whatever its own width: the wrapper keeps it out of the layout. */}
      <div class="sr-only">
      <table id={`${id}-table`}>
        <caption>{title}</caption>
        <tbody>
          {bars.map((b) => (
            <tr key={b.label}>
              <th scope="row">{b.long}</th>
              <td>{t('stats.hours', { hours: fmtDecimal(b.hours) })}</td>
            </tr>
          ))}
        </tbody>
      </table>
      </div>
    </figure>
  );
}

function Calendar({ days, now }: { days: Set<string>; now: number }) {
  const today = romeDate(now);
  const first = addDays(mondayOf(today), -7 * (CAL_WEEKS - 1));
  const cells = Array.from({ length: CAL_WEEKS * 7 }, (_, i) => addDays(first, i));
  const size = 40;
  return (
    <figure class="card chart" aria-labelledby="cal-cap">
      <figcaption id="cal-cap">
        <h2>{t('stats.calendar')}</h2>
        <p class="muted">{t('stats.calendarText', { count: CAL_WEEKS })}</p>
      </figcaption>
      {cells.every((d) => !days.has(d)) && (
        <p class="empty">{t('stats.calendarEmpty')}</p>
      )}
      <svg viewBox={`0 0 ${7 * size} ${CAL_WEEKS * size + 20}`} role="img" aria-labelledby="cal-cap" aria-describedby="cal-list">
        {(t('stats.weekdays', { returnObjects: true }) as string[]).map((d, i) => (
          <text key={`h${i}`} class="label" x={i * size + size / 2} y="14" text-anchor="middle">
            {d}
          </text>
        ))}
        {cells.map((d, i) => {
          const on = days.has(d);
          const future = d > today;
          return (
            <g key={d}>
              <rect
                class={on ? 'day on' : future ? 'day future' : 'day'}
                x={(i % 7) * size + 3}
                y={Math.floor(i / 7) * size + 22}
                width={size - 6}
                height={size - 6}
                rx="6"
              />
              <text class={on ? 'daynum on' : 'daynum'} x={(i % 7) * size + size / 2} y={Math.floor(i / 7) * size + 22 + size / 2} text-anchor="middle">
                {Number(d.slice(8))}
              </text>
            </g>
          );
        })}
      </svg>
      <p class="sr-only" id="cal-list">
        {cells.filter((d) => days.has(d)).length === 0
          ? t('stats.noDays')
          : t('stats.days', {
              days: cells
                .filter((d) => days.has(d))
                .map((d) => dayLong().format(new Date(`${d}T00:00:00Z`)))
                .join(', '),
            })}
      </p>
    </figure>
  );
}

const days = (n: number) => t('stats.dayCount', { count: n });

export function Stats() {
  const res = useLoad(loadStats);
  useEffect(() => onSynced(res.reload), []);
  const now = Date.now();
  const s = res.data?.stats;
  return (
    <>
      <PageTitle>{t('stats.title')}</PageTitle>
      <Loading when={res.loading && !res.data} />
      <LoadError error={res.error} retry={res.reload} />
      {s && res.data && (
        <>
          <dl class="card kpis" data-testid="kpis">
            <Fact term={t('stats.weekHours')} testId="weekly-hours">{fmtDecimal(s.weeklyHours)}</Fact>
            <Fact term={t('stats.monthHours')}>{fmtDecimal(s.monthlyHours)}</Fact>
            <Fact term={t('stats.currentStreak')} testId="current-streak">{days(s.currentStreak)}</Fact>
            <Fact term={t('stats.longestStreak')}>{days(s.longestStreak)}</Fact>
            <Fact term={t('stats.completed')} testId="sessions">
              {t('stats.of', { done: s.completedSessions, total: s.totalSessions })}
            </Fact>
            <Fact term={t('stats.rate')}>{fmtPercent(s.completionRate)}</Fact>
          </dl>
          <BarChart
            id="weeks"
            title={t('stats.perWeek')}
            bars={weekBars(res.data.fasts, now)}
            empty={t('stats.weeksEmpty', { count: WEEKS })}
          />
          <BarChart
            id="months"
            title={t('stats.perMonth')}
            bars={monthBars(res.data.fasts, now)}
            empty={t('stats.monthsEmpty', { count: MONTHS })}
          />
          <Calendar days={streakDays(res.data.fasts)} now={now} />
        </>
      )}
    </>
  );
}
