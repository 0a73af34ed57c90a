import { api } from '../api/client';
import type { Recipe, Slot, SlotCategory, TodayPlan } from '../api/types';
import { LoadError, Loading, Notice, PageTitle } from '../components/ui';
import { useAction, useLoad } from '../hooks';
import { fmtDate, fmtNumber, fmtTime } from '../time';
import { t } from '../i18n';

const CATEGORY: Record<SlotCategory, { label: string; recipe: Recipe['category'] }> = {
  COL: { label: 'plan.meals.COL', recipe: 'COLAZIONE' },
  PRA: { label: 'plan.meals.PRA', recipe: 'PRANZO' },
  SPU: { label: 'plan.meals.SPU', recipe: 'SPUNTINO' },
  CENA: { label: 'plan.meals.CENA', recipe: 'CENA' },
};

export function Plan() {
  const res = useLoad(api.todayPlan);
  const current = useLoad(api.currentFast);
  const action = useAction();

  const create = () => {
    void action.run(async () => {
      const plan = res.data;
      if (!plan) return undefined;
      const order: SlotCategory[] = ['COL', 'PRA', 'SPU', 'CENA'];
      const picks = await Promise.all(order.map((c) => api.recipes(CATEGORY[c].recipe)));
      // A different recipe every day, from the catalogue's own order.
      const day = Number(plan.date.slice(8, 10));
      const slots = order.map((category, i) => {
        const list = picks[i]?.recipes ?? [];
        const r = list.length ? list[day % list.length] : undefined;
        return r ? { category, recipeId: r.id } : { category, title: t(CATEGORY[category].label) };
      });
      await api.createPlan(plan.date, false, slots);
      res.reload();
      return t('plan.created');
    });
  };

  const update = (slot: Slot) => {
    const plan = res.data;
    if (!plan) return;
    res.set({ ...plan, slots: plan.slots.map((s) => (s.id === slot.id ? slot : s)) } satisfies TodayPlan);
  };

  return (
    <>
      <PageTitle>{t('plan.title')}</PageTitle>
      {res.data && <p class="muted">{fmtDate(`${res.data.date}T12:00:00Z`)}</p>}
      {current.data && (
        <section class="card running-banner" aria-live="polite" data-testid="running-fast">
          <h2>{t('today.running', { protocol: current.data.protocol })}</h2>
          <p>
            {t(current.data.autoStarted ? 'plan.runningAuto' : 'plan.runningText', { start: fmtTime(current.data.startedAt), end: fmtTime(current.data.plannedEndAt) })}{' '}
            <a href="/">{t('plan.openTimer')}</a>
          </p>
        </section>
      )}
      <Loading when={res.loading && !res.data} />
      <LoadError error={res.error} retry={res.reload} />
      {res.data && res.data.slots.length === 0 && (
        <section class="card">
          <h2>{t('plan.none')}</h2>
          <p>{t('plan.noneText')}</p>
          <button type="button" class="primary" onClick={create} disabled={action.busy}>
            {t('plan.create')}
          </button>
        </section>
      )}
      {res.data && res.data.slots.length > 0 && (
        <ul class="slots">
          {res.data.slots.map((s) => (
            <SlotItem key={s.id} slot={s} onChange={update} onFastChanged={current.reload} />
          ))}
        </ul>
      )}
      <Notice message={action.message} />
    </>
  );
}

function SlotItem({ slot, onChange, onFastChanged }: { slot: Slot; onChange: (s: Slot) => void; onFastChanged: () => void }) {
  const action = useAction();
  const meal = t(CATEGORY[slot.category].label);
  const name = slot.recipe?.name ?? slot.title ?? meal;
  const toggle = () => {
    void action.run(async () => {
      if (slot.consumed) {
        const res = await api.unconsume(slot.id);
        onChange(res.slot);
        if (res.removedFast) {
          onFastChanged();
          return `${t('plan.fastCancelled')} ${t('plan.unconsumed', { meal })}`;
        }
        return t('plan.unconsumed', { meal });
      }
      const res = await api.consume(slot.id);
      onChange(res.slot);
      if (res.autoStartedFast) onFastChanged();
      return res.autoStartedFast ? t('plan.fastStarted') : t('plan.consumed', { meal });
    });
  };
  return (
    <li class={slot.consumed ? 'card slot consumed' : 'card slot'} data-category={slot.category}>
      <h2>{meal}</h2>
      <p class="slot-name">{name}</p>
      {slot.recipe && (
        <p class="muted">
          {fmtNumber(slot.recipe.kcal)} kcal · {fmtNumber(slot.recipe.prepMinutes)} min
        </p>
      )}
      {slot.consumed && slot.consumedAt && <p class="muted">{t('plan.consumedAt', { time: fmtTime(slot.consumedAt) })}</p>}
      <button type="button" class={slot.consumed ? 'secondary' : 'primary'} aria-pressed={slot.consumed} onClick={toggle} disabled={action.busy}>
        {slot.consumed ? t('common.undo') : t('plan.consume')}
        <span class="sr-only"> · {meal}</span>
      </button>
      <Notice message={action.message} />
    </li>
  );
}
