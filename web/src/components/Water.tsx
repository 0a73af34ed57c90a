import { useEffect, useState } from 'preact/hooks';
import { api, isLocalId } from '../api/client';
import type { Drink, WaterDay } from '../api/types';
import { useAction, useLoad } from '../hooks';
import { t } from '../i18n';
import { onSynced, pendingOf } from '../queue';
import { whoAmI } from '../session';
import { fmtNumber, fmtPercent, fmtTime, romeDate } from '../time';
import { LoadError, Loading, Notice } from './ui';

const GLASS = 250;

/** Today's water with drinks still waiting to be sent. */
async function loadWater(): Promise<WaterDay> {
  const [day, user] = await Promise.all([api.water(), whoAmI()]);
  const waiting = (user ? pendingOf(user, 'water') : [])
    .map((o) => o.optimistic as Drink)
    .filter((d) => romeDate(Date.parse(d.at)) === day.date);
  return { ...day, items: [...day.items, ...waiting], totalMl: day.totalMl + waiting.reduce((s, d) => s + d.ml, 0) };
}

/** The day's water: one tap adds a glass, a ring shows the way to the day's goal. */
export function Water() {
  const res = useLoad(loadWater);
  const action = useAction();
  const [last, setLast] = useState<string | null>(null);
  useEffect(() => onSynced(res.reload), []);
  const day = res.data;

  const add = () => {
    void action.run(async () => {
      const sent = await api.addWater(GLASS);
      if (day) res.set({ ...day, items: [...day.items, sent.data], totalMl: day.totalMl + sent.data.ml });
      setLast(sent.data.id);
      return sent.queued ? t('sync.queued') : t('water.added', { ml: fmtNumber(GLASS) });
    });
  };
  const remove = (d: Drink) => {
    void action.run(async () => {
      if (isLocalId(d.id)) throw new Error(t('water.waiting'));
      await api.deleteWater(d.id);
      if (day) res.set({ ...day, items: day.items.filter((x) => x.id !== d.id), totalMl: day.totalMl - d.ml });
      if (last === d.id) setLast(null);
      return t('water.removed', { ml: fmtNumber(d.ml) });
    });
  };

  const r = 34;
  const c = 2 * Math.PI * r;
  const ratio = day ? Math.min(1, day.totalMl / Math.max(1, day.goalMl)) : 0;
  const undoable = day?.items.find((d) => d.id === last);
  return (
    <section class="card water" aria-labelledby="water-title" data-testid="water">
      <h2 id="water-title">{t('water.title')}</h2>
      <Loading when={res.loading && !day} />
      <LoadError error={res.error} retry={res.reload} />
      {day && (
        <>
          <div class="water-row">
            <svg class="water-ring" viewBox="0 0 80 80" role="img" aria-label={t('water.ring', { total: fmtNumber(day.totalMl), goal: fmtNumber(day.goalMl), percent: fmtPercent(ratio) })}>
              <circle class="track" cx="40" cy="40" r={r} />
              {ratio > 0 && <circle class="bar" cx="40" cy="40" r={r} stroke-dasharray={`${c * ratio} ${c}`} transform="rotate(-90 40 40)" />}
            </svg>
            <p data-testid="water-total">
              <strong>{t('water.total', { total: fmtNumber(day.totalMl), goal: fmtNumber(day.goalMl) })}</strong>
            </p>
          </div>
          <div class="row">
            <button type="button" class="primary" onClick={add} disabled={action.busy} data-testid="add-water">
              {t('water.add', { ml: fmtNumber(GLASS) })}
            </button>
            {undoable && (
              <button type="button" class="secondary" onClick={() => { remove(undoable); }} disabled={action.busy}>
                {t('common.undo')}
                <span class="sr-only"> {t('water.undoWhich')}</span>
              </button>
            )}
          </div>
          {day.items.length > 0 && (
            <details>
              <summary>{t('water.entries', { count: day.items.length })}</summary>
              <ul class="sessions">
                {day.items.map((d) => (
                  <li key={d.id}>
                    <span>
                      {t('water.entry', { ml: fmtNumber(d.ml), time: fmtTime(d.at) })}
                      {isLocalId(d.id) ? ` · ${t('sync.waiting')}` : ''}
                    </span>
                    <button type="button" class="secondary" onClick={() => { remove(d); }} disabled={action.busy || isLocalId(d.id)}>
                      {t('common.delete')}
                      <span class="sr-only"> {t('water.entry', { ml: fmtNumber(d.ml), time: fmtTime(d.at) })}</span>
                    </button>
                  </li>
                ))}
              </ul>
            </details>
          )}
        </>
      )}
      <Notice message={action.message} />
    </section>
  );
}
