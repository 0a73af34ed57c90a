import { useState } from 'preact/hooks';
import { api } from '../api/client';
import type { Fast } from '../api/types';
import { Diary } from '../components/Diary';
import { Suggestions } from '../components/Suggestions';
import { LoadError, Loading, Notice, PageTitle } from '../components/ui';
import { useAction, useLoad } from '../hooks';
import { fmtDateTime, fmtHours } from '../time';

const PAGE = 10;

const STATUS: Record<Fast['status'], string> = {
  IN_PROGRESS: 'In corso',
  COMPLETED: 'Completato',
  ENDED_EARLY: 'Terminato prima',
};

export function History() {
  const first = useLoad(() => api.fasts(PAGE));
  const [more, setMore] = useState<Fast[]>([]);
  const [next, setNext] = useState<string | null | undefined>(undefined);
  const action = useAction();
  const items = [...(first.data?.items ?? []), ...more];
  const cursor = next === undefined ? first.data?.nextBefore : next;

  const loadMore = () => {
    if (!cursor) return;
    void action.run(async () => {
      const page = await api.fasts(PAGE, cursor);
      setMore((m) => [...m, ...page.items]);
      setNext(page.nextBefore);
      const n = page.items.length;
      return `${n} ${n === 1 ? 'digiuno caricato' : 'digiuni caricati'}.`;
    });
  };

  const replace = (f: Fast) => {
    if (first.data) first.set({ ...first.data, items: first.data.items.map((x) => (x.id === f.id ? f : x)) });
    setMore((m) => m.map((x) => (x.id === f.id ? f : x)));
  };

  return (
    <>
      <PageTitle>Storico</PageTitle>
      <Loading when={first.loading && !first.data} />
      <LoadError error={first.error} retry={first.reload} />
      {first.data && items.length === 0 && <p>Nessun digiuno ancora. Inizia dalla pagina Oggi.</p>}
      <ul class="history">
        {items.map((f) => (
          <FastItem key={f.id} fast={f} onChange={replace} />
        ))}
      </ul>
      {cursor && (
        <button type="button" class="secondary" onClick={loadMore} disabled={action.busy}>
          Carica altri
        </button>
      )}
      <Notice message={action.message} />
    </>
  );
}

function FastItem({ fast, onChange }: { fast: Fast; onChange: (f: Fast) => void }) {
  const end = fast.endedAt ? Date.parse(fast.endedAt) : Date.now();
  const length = end - Date.parse(fast.startedAt);
  const s = fast.symptoms;
  return (
    <li class="card fast" data-status={fast.status}>
      <h2>
        {fmtDateTime(fast.startedAt)} · {fast.protocol}
      </h2>
      <p>
        <span class={`badge ${fast.status.toLowerCase()}`}>{STATUS[fast.status]}</span> {fmtHours(length)}
        {fast.autoStarted ? ' · avviato dalla cena' : ''}
      </p>
      {s && (
        <p class="muted diary-summary">
          {s.headache ? 'Mal di testa · ' : ''}Energia {s.energy ?? '–'}/10 · Fame {s.hunger ?? '–'}/10 · Lucidità {s.clarity ?? '–'}/10
          {s.note ? ` · “${s.note}”` : ''}
        </p>
      )}
      <details>
        <summary>Diario{length >= 24 * 3_600_000 && fast.endedAt ? ' e suggerimenti' : ''}</summary>
        <Diary fast={fast} onSaved={onChange} />
        {length >= 24 * 3_600_000 && fast.endedAt && <Suggestions fastId={fast.id} />}
      </details>
    </li>
  );
}
