import { useEffect, useState } from 'preact/hooks';
import { api, isLocalId } from '../api/client';
import type { Weight as WeightEntry, Weights } from '../api/types';
import { Fact, LoadError, Loading, Notice, PageTitle } from '../components/ui';
import { useAction, useLoad } from '../hooks';
import { t } from '../i18n';
import { onSynced, pendingOf } from '../queue';
import { whoAmI } from '../session';
import { dateFormat, fmtDay, fmtDecimal, parseDecimal, romeDate } from '../time';

/** The weights with those still waiting to be sent; one a day, as the server keeps them. */
async function loadWeights(): Promise<Weights> {
  const [w, user] = await Promise.all([api.weights(), whoAmI()]);
  const waiting = (user ? pendingOf(user, 'weight') : []).map((o) => o.optimistic as WeightEntry);
  if (waiting.length === 0) return w;
  const days = new Set(waiting.map((x) => x.measuredOn));
  const items = [...w.items.filter((x) => !days.has(x.measuredOn)), ...waiting].sort((a, b) => a.measuredOn.localeCompare(b.measuredOn));
  return { ...w, items };
}

export function Weight() {
  const res = useLoad(loadWeights);
  useEffect(() => onSynced(res.reload), []);
  const w = res.data;
  return (
    <>
      <PageTitle>{t('weight.title')}</PageTitle>
      <Loading when={res.loading && !w} />
      <LoadError error={res.error} retry={res.reload} />
      {w && (
        <>
          <Record
            onRecorded={(entry, queued) => {
              if (queued) {
                const items = [...w.items.filter((x) => x.measuredOn !== entry.measuredOn), entry].sort((a, b) => a.measuredOn.localeCompare(b.measuredOn));
                res.set({ ...w, items });
              } else res.reload();
            }}
          />
          <Summary w={w} />
          <Chart w={w} />
          <List w={w} onDeleted={res.reload} />
          <Body w={w} onSaved={res.reload} />
        </>
      )}
    </>
  );
}

function Record({ onRecorded }: { onRecorded: (w: WeightEntry, queued: boolean) => void }) {
  const today = romeDate(Date.now());
  const [kg, setKg] = useState('');
  const [date, setDate] = useState(today);
  const [note, setNote] = useState('');
  const action = useAction();
  const submit = action.submit(async () => {
    const value = parseDecimal(kg);
    if (Number.isNaN(value) || value < 20 || value > 400 || Math.round(value * 10) !== value * 10) throw new Error(t('weight.errors.kg'));
    if (date > today) throw new Error(t('weight.errors.future'));
    const sent = await api.recordWeight({ kg: value, measuredOn: date || today, ...(note.trim() ? { note: note.trim() } : {}) });
    const entry = { ...sent.data, measuredOn: sent.data.measuredOn || date || today };
    onRecorded(entry, sent.queued);
    setKg('');
    setNote('');
    setDate(today);
    return sent.queued ? t('sync.queued') : t('weight.recorded', { kg: fmtDecimal(entry.kg) });
  });
  return (
    <form class="card" onSubmit={submit} aria-labelledby="record-title">
      <h2 id="record-title">{t('weight.record')}</h2>
      <label for="weight-kg">{t('weight.kg')}</label>
      <input id="weight-kg" type="text" inputMode="decimal" autocomplete="off" required placeholder={fmtDecimal(70.5)} value={kg} onInput={(e) => { setKg(e.currentTarget.value); }} />
      <label for="weight-date">{t('weight.date')}</label>
      <input id="weight-date" type="date" value={date} onInput={(e) => { setDate(e.currentTarget.value); }} />
      <label for="weight-note">{t('weight.note')}</label>
      <input id="weight-note" type="text" maxLength={500} value={note} onInput={(e) => { setNote(e.currentTarget.value); }} />
      <button type="submit" class="primary" disabled={action.busy}>
        {t('weight.save')}
      </button>
      <Notice message={action.message} testId="weight-status" />
    </form>
  );
}

function Summary({ w }: { w: Weights }) {
  const latest = w.items[w.items.length - 1];
  const trend = w.trend[w.trend.length - 1];
  if (!latest) return null;
  return (
    <dl class="card kpis" data-testid="weight-summary">
      <Fact term={t('weight.latest')} testId="weight-latest">{fmtDecimal(latest.kg)} kg</Fact>
      {trend && <Fact term={t('weight.trend')}>{fmtDecimal(trend.kg)} kg</Fact>}
      {w.goalKg !== null && <Fact term={t('weight.goal')}>{fmtDecimal(w.goalKg)} kg</Fact>}
      {w.bmi !== null && <Fact term={t('weight.bmi')} testId="bmi">{fmtDecimal(w.bmi)}</Fact>}
    </dl>
  );
}

/** The 7-day trend as a line, each weight as a dot, the goal as a dashed line. */
function Chart({ w }: { w: Weights }) {
  if (w.items.length === 0) {
    return (
      <figure class="card chart" aria-labelledby="wchart-cap">
        <figcaption id="wchart-cap">
          <h2>{t('weight.chart')}</h2>
        </figcaption>
        <p class="empty">{t('weight.chartEmpty')}</p>
      </figure>
    );
  }
  const width = 320;
  const height = 180;
  const pad = { l: 34, r: 8, t: 10, b: 24 };
  const values = [...w.items.map((x) => x.kg), ...w.trend.map((x) => x.kg), ...(w.goalKg !== null ? [w.goalKg] : [])];
  const lo = Math.floor(Math.min(...values) - 1);
  const hi = Math.ceil(Math.max(...values) + 1);
  const day = (d: string) => Date.parse(`${d}T00:00:00Z`);
  const first = day(w.items[0]?.measuredOn ?? romeDate(Date.now()));
  const last = Math.max(day(w.items[w.items.length - 1]?.measuredOn ?? romeDate(Date.now())), first + 86_400_000);
  const x = (d: string) => pad.l + ((day(d) - first) / (last - first)) * (width - pad.l - pad.r);
  const y = (kg: number) => pad.t + ((hi - kg) / (hi - lo)) * (height - pad.t - pad.b);
  const line = w.trend.map((p, i) => `${i ? 'L' : 'M'}${x(p.date).toFixed(1)} ${y(p.kg).toFixed(1)}`).join('');
  const short = dateFormat('dayShortMonth', { day: 'numeric', month: 'short', timeZone: 'UTC' });
  const firstDay = w.items[0]?.measuredOn ?? '';
  const lastDay = w.items[w.items.length - 1]?.measuredOn ?? '';
  return (
    <figure class="card chart" aria-labelledby="wchart-cap">
      <figcaption id="wchart-cap">
        <h2>{t('weight.chart')}</h2>
      </figcaption>
      <svg viewBox={`0 0 ${width} ${height}`} role="img" aria-labelledby="wchart-cap" aria-describedby="wchart-table" data-testid="weight-chart">
        <line class="axis" x1={pad.l} y1={height - pad.b} x2={width - pad.r} y2={height - pad.b} />
        <text class="label" x={pad.l - 4} y={y(hi) + 4} text-anchor="end">
          {hi}
        </text>
        <text class="label" x={pad.l - 4} y={y(lo)} text-anchor="end">
          {lo}
        </text>
        {w.goalKg !== null && (
          <g>
            <line class="goal" x1={pad.l} y1={y(w.goalKg)} x2={width - pad.r} y2={y(w.goalKg)} />
            <text class="label" x={width - pad.r} y={y(w.goalKg) - 4} text-anchor="end">
              {t('weight.goalShort', { kg: fmtDecimal(w.goalKg) })}
            </text>
          </g>
        )}
        {w.items.map((p) => (
          <circle key={p.id} class="dot" cx={x(p.measuredOn)} cy={y(p.kg)} r="3" />
        ))}
        <path class="trend" d={line} />
        <text class="label" x={pad.l} y={height - 6} text-anchor="start">
          {short.format(new Date(`${firstDay}T00:00:00Z`))}
        </text>
        {lastDay !== firstDay && (
          <text class="label" x={width - pad.r} y={height - 6} text-anchor="end">
            {short.format(new Date(`${lastDay}T00:00:00Z`))}
          </text>
        )}
      </svg>
      <div class="sr-only">
        <table id="wchart-table">
          <caption>{t('weight.chart')}</caption>
          <thead>
            <tr>
              <th scope="col">{t('weight.date')}</th>
              <th scope="col">{t('weight.kg')}</th>
              <th scope="col">{t('weight.trend')}</th>
            </tr>
          </thead>
          <tbody>
            {w.items.map((p) => (
              <tr key={p.id}>
                <th scope="row">{fmtDay(p.measuredOn)}</th>
                <td>{fmtDecimal(p.kg)}</td>
                <td>{(() => { const tp = w.trend.find((x) => x.date === p.measuredOn); return tp ? fmtDecimal(tp.kg) : '–'; })()}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </figure>
  );
}

function List({ w, onDeleted }: { w: Weights; onDeleted: () => void }) {
  const action = useAction();
  const [confirm, setConfirm] = useState<string | null>(null);
  if (w.items.length === 0) return null;
  const remove = (x: WeightEntry) => {
    void action.run(async () => {
      await api.deleteWeight(x.id);
      setConfirm(null);
      onDeleted();
      return t('weight.deleted', { day: fmtDay(x.measuredOn) });
    });
  };
  return (
    <section class="card" aria-labelledby="wlist-title">
      <h2 id="wlist-title">{t('weight.list')}</h2>
      <ul class="sessions" data-testid="weights">
        {[...w.items].reverse().map((x) => (
          <li key={x.id}>
            <span>
              <strong>{fmtDecimal(x.kg)} kg</strong> · {fmtDay(x.measuredOn)}
              {isLocalId(x.id) ? ` · ${t('sync.waiting')}` : ''}
              {x.note && (
                <>
                  <br />
                  <span class="muted">{x.note}</span>
                </>
              )}
            </span>
            {confirm === x.id ? (
              <span class="row">
                <button type="button" class="danger" onClick={() => { remove(x); }} disabled={action.busy}>
                  {t('history.yesDelete')}
                </button>
                <button type="button" class="secondary" onClick={() => { setConfirm(null); }}>
                  {t('history.keep')}
                </button>
              </span>
            ) : (
              <button type="button" class="secondary" onClick={() => { setConfirm(x.id); }} disabled={action.busy || isLocalId(x.id)}>
                {t('common.delete')}
                <span class="sr-only"> {fmtDay(x.measuredOn)}</span>
              </button>
            )}
          </li>
        ))}
      </ul>
      <Notice message={action.message} />
    </section>
  );
}

/** Goal and height: the goal line of the chart and the BMI. */
function Body({ w, onSaved }: { w: Weights; onSaved: () => void }) {
  const [goal, setGoal] = useState(w.goalKg === null ? '' : fmtDecimal(w.goalKg));
  const [height, setHeight] = useState(w.heightCm === null ? '' : String(w.heightCm));
  const action = useAction();
  const submit = action.submit(async () => {
    const g = goal.trim() === '' ? null : parseDecimal(goal);
    const h = height.trim() === '' ? null : parseDecimal(height);
    if (g !== null && (Number.isNaN(g) || g < 20 || g > 400 || Math.round(g * 10) !== g * 10)) throw new Error(t('weight.errors.goal'));
    if (h !== null && (Number.isNaN(h) || h < 100 || h > 250 || !Number.isInteger(h))) throw new Error(t('weight.errors.height'));
    await api.setPreferences({ weightGoalKg: g, heightCm: h });
    onSaved();
    return t('common.saved');
  });
  return (
    <form class="card" onSubmit={submit} aria-labelledby="body-title">
      <h2 id="body-title">{t('weight.body')}</h2>
      <label for="goal-kg">{t('weight.goalKg')}</label>
      <input id="goal-kg" type="text" inputMode="decimal" autocomplete="off" value={goal} onInput={(e) => { setGoal(e.currentTarget.value); }} />
      <label for="height-cm">{t('weight.heightCm')}</label>
      <input id="height-cm" type="text" inputMode="numeric" autocomplete="off" value={height} onInput={(e) => { setHeight(e.currentTarget.value); }} />
      <p class="muted">{t('weight.bmiNote')}</p>
      <button type="submit" disabled={action.busy}>
        {t('weight.saveBody')}
      </button>
      <Notice message={action.message} />
    </form>
  );
}
