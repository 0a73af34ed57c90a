import { api } from '../api/client';
import type { Recipe, Slot, SlotCategory, TodayPlan } from '../api/types';
import { LoadError, Loading, Notice, PageTitle } from '../components/ui';
import { useAction, useLoad } from '../hooks';
import { fmtDate, fmtNumber, fmtTime } from '../time';

const CATEGORY: Record<SlotCategory, { label: string; recipe: Recipe['category'] }> = {
  COL: { label: 'Colazione', recipe: 'COLAZIONE' },
  PRA: { label: 'Pranzo', recipe: 'PRANZO' },
  SPU: { label: 'Spuntino', recipe: 'SPUNTINO' },
  CENA: { label: 'Cena', recipe: 'CENA' },
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
        return r ? { category, recipeId: r.id } : { category, title: CATEGORY[category].label };
      });
      await api.createPlan(plan.date, false, slots);
      res.reload();
      return 'Piano di oggi creato.';
    });
  };

  const update = (slot: Slot) => {
    const plan = res.data;
    if (!plan) return;
    res.set({ ...plan, slots: plan.slots.map((s) => (s.id === slot.id ? slot : s)) } satisfies TodayPlan);
  };

  return (
    <>
      <PageTitle>Piano di oggi</PageTitle>
      {res.data && <p class="muted">{fmtDate(`${res.data.date}T12:00:00Z`)}</p>}
      {current.data && (
        <section class="card running-banner" aria-live="polite" data-testid="running-fast">
          <h2>Digiuno {current.data.protocol} in corso</h2>
          <p>
            Iniziato alle {fmtTime(current.data.startedAt)}
            {current.data.autoStarted ? ' con la cena' : ''}, fine prevista alle {fmtTime(current.data.plannedEndAt)}.{' '}
            <a href="/">Apri il timer</a>
          </p>
        </section>
      )}
      <Loading when={res.loading && !res.data} />
      <LoadError error={res.error} retry={res.reload} />
      {res.data && res.data.slots.length === 0 && (
        <section class="card">
          <h2>Nessun piano per oggi</h2>
          <p>Crea un piano con una ricetta per ogni pasto: segnare la cena come consumata avvia il digiuno col tuo protocollo.</p>
          <button type="button" class="primary" onClick={create} disabled={action.busy}>
            Crea il piano di oggi
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
  const name = slot.recipe?.name ?? slot.title ?? CATEGORY[slot.category].label;
  const toggle = () => {
    void action.run(async () => {
      if (slot.consumed) {
        const res = await api.unconsume(slot.id);
        onChange(res.slot);
        if (res.removedFast) {
          onFastChanged();
          return `Digiuno annullato. ${CATEGORY[slot.category].label}: segnato come non consumato.`;
        }
        return `${CATEGORY[slot.category].label}: segnato come non consumato.`;
      }
      const res = await api.consume(slot.id);
      onChange(res.slot);
      if (res.autoStartedFast) onFastChanged();
      return res.autoStartedFast
        ? 'Il digiuno è iniziato: lo trovi in Oggi. Annulla entro 10 minuti toglie anche il digiuno.'
        : `${CATEGORY[slot.category].label}: consumato.`;
    });
  };
  return (
    <li class={slot.consumed ? 'card slot consumed' : 'card slot'} data-category={slot.category}>
      <h2>{CATEGORY[slot.category].label}</h2>
      <p class="slot-name">{name}</p>
      {slot.recipe && (
        <p class="muted">
          {fmtNumber(slot.recipe.kcal)} kcal · {fmtNumber(slot.recipe.prepMinutes)} min
        </p>
      )}
      {slot.consumed && slot.consumedAt && <p class="muted">Consumato alle {fmtTime(slot.consumedAt)}</p>}
      <button type="button" class={slot.consumed ? 'secondary' : 'primary'} aria-pressed={slot.consumed} onClick={toggle} disabled={action.busy}>
        {slot.consumed ? 'Annulla' : 'Segna come consumato'}
        <span class="sr-only"> · {CATEGORY[slot.category].label}</span>
      </button>
      <Notice message={action.message} />
    </li>
  );
}
