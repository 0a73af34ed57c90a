import { useEffect, useState } from 'preact/hooks';
import { api, isLocalId } from '../api/client';
import type { Fast, Protocol } from '../api/types';
import { Diary } from '../components/Diary';
import { Suggestions } from '../components/Suggestions';
import { LoadError, Loading, Notice, PageTitle } from '../components/ui';
import { useAction, useLoad } from '../hooks';
import { t } from '../i18n';
import { onSynced } from '../queue';
import { fmtDateTime, fmtHours, romeInstant, romeLocalInput } from '../time';
import { PROTOCOLS, fastingHours, isProtocol } from '../zones';

const PAGE = 10;
const DAY = 24 * 3_600_000;

export function History() {
  const first = useLoad(() => api.fasts(PAGE));
  const [more, setMore] = useState<Fast[]>([]);
  const [next, setNext] = useState<string | null | undefined>(undefined);
  const action = useAction();
  const items = [...(first.data?.items ?? []), ...more];
  const cursor = next === undefined ? first.data?.nextBefore : next;
  const reload = () => {
    setMore([]);
    setNext(undefined);
    first.reload();
  };
  useEffect(() => onSynced(reload), []);

  const loadMore = () => {
    if (!cursor) return;
    void action.run(async () => {
      const page = await api.fasts(PAGE, cursor);
      setMore((m) => [...m, ...page.items]);
      setNext(page.nextBefore);
      return t('history.loaded', { count: page.items.length });
    });
  };

  const replace = (f: Fast) => {
    if (first.data) first.set({ ...first.data, items: first.data.items.map((x) => (x.id === f.id ? f : x)) });
    setMore((m) => m.map((x) => (x.id === f.id ? f : x)));
  };
  const drop = (id: string) => {
    if (first.data) first.set({ ...first.data, items: first.data.items.filter((x) => x.id !== id) });
    setMore((m) => m.filter((x) => x.id !== id));
  };

  return (
    <>
      <PageTitle>{t('history.title')}</PageTitle>
      <PastFast onAdded={reload} />
      <Loading when={first.loading && !first.data} />
      <LoadError error={first.error} retry={first.reload} />
      {first.data && items.length === 0 && <p>{t('history.empty')}</p>}
      <ul class="history">
        {items.map((f) => (
          <FastItem key={f.id} fast={f} onChange={replace} onDeleted={drop} />
        ))}
      </ul>
      {cursor && (
        <button type="button" class="secondary" onClick={loadMore} disabled={action.busy}>
          {t('history.more')}
        </button>
      )}
      <Notice message={action.message} />
    </>
  );
}

/** The form's start and end, checked before the server sees them, with a sentence for each mistake. */
function span(start: string, end: string | null): { startedAt: string; endedAt: string | null } {
  const s = romeInstant(start);
  if (Number.isNaN(s)) throw new Error(t('history.errors.noStart'));
  const now = Date.now();
  if (s > now) throw new Error(t('history.errors.startFuture'));
  if (s < now - 365 * DAY) throw new Error(t('history.errors.tooOld'));
  if (end === null) return { startedAt: new Date(s).toISOString(), endedAt: null };
  const e = romeInstant(end);
  if (Number.isNaN(e)) throw new Error(t('history.errors.noEnd'));
  if (e > now) throw new Error(t('history.errors.endFuture'));
  if (e <= s) throw new Error(t('history.errors.endBeforeStart'));
  return { startedAt: new Date(s).toISOString(), endedAt: new Date(e).toISOString() };
}

function ProtocolSelect({ id, value, onChange }: { id: string; value: Protocol; onChange: (p: Protocol) => void }) {
  return (
    <select id={id} value={value} onChange={(e) => { const v = e.currentTarget.value; if (isProtocol(v)) onChange(v); }}>
      {PROTOCOLS.map((p) => (
        <option key={p} value={p}>
          {t('today.protocolOption', { protocol: p, count: fastingHours(p) })}
        </option>
      ))}
    </select>
  );
}

/** "Add a past fast": start, end and protocol of a fast not recorded at the time. */
function PastFast({ onAdded }: { onAdded: () => void }) {
  const [open, setOpen] = useState(false);
  const [start, setStart] = useState('');
  const [end, setEnd] = useState('');
  const [protocol, setProtocol] = useState<Protocol>('16:8');
  const action = useAction();
  const submit = action.submit(async () => {
    const s = span(start, end);
    await api.addPastFast(protocol, s.startedAt, s.endedAt ?? '');
    setStart('');
    setEnd('');
    setOpen(false);
    onAdded();
    return t('history.added');
  });
  if (!open) {
    return (
      <div class="stack">
        <button type="button" class="secondary" onClick={() => { setOpen(true); }} data-testid="add-past">
          {t('history.addPast')}
        </button>
        <Notice message={action.message} />
      </div>
    );
  }
  return (
    <form class="card" onSubmit={submit} aria-labelledby="past-title" data-testid="past-form">
      <h2 id="past-title">{t('history.addPast')}</h2>
      <label for="past-start">{t('history.start')}</label>
      <input id="past-start" type="datetime-local" required value={start} onInput={(e) => { setStart(e.currentTarget.value); }} />
      <label for="past-end">{t('history.end')}</label>
      <input id="past-end" type="datetime-local" required value={end} onInput={(e) => { setEnd(e.currentTarget.value); }} />
      <label for="past-protocol">{t('today.protocol')}</label>
      <ProtocolSelect id="past-protocol" value={protocol} onChange={setProtocol} />
      <div class="row">
        <button type="submit" class="primary" disabled={action.busy}>
          {t('history.save')}
        </button>
        <button type="button" class="secondary" onClick={() => { setOpen(false); }}>
          {t('common.cancel')}
        </button>
      </div>
      <Notice message={action.message} />
    </form>
  );
}

function FastItem({ fast, onChange, onDeleted }: { fast: Fast; onChange: (f: Fast) => void; onDeleted: (id: string) => void }) {
  const [mode, setMode] = useState<'view' | 'edit' | 'delete'>('view');
  const [start, setStart] = useState('');
  const [end, setEnd] = useState('');
  const [protocol, setProtocol] = useState<Protocol>(fast.protocol);
  const action = useAction();
  const endMs = fast.endedAt ? Date.parse(fast.endedAt) : Date.now();
  const length = endMs - Date.parse(fast.startedAt);
  const s = fast.symptoms;
  const id = fast.id.replace(/[^a-zA-Z0-9_-]/g, '');
  const waiting = isLocalId(fast.id);

  const edit = () => {
    setStart(romeLocalInput(fast.startedAt));
    setEnd(fast.endedAt ? romeLocalInput(fast.endedAt) : '');
    setProtocol(fast.protocol);
    setMode('edit');
  };
  const save = action.submit(async () => {
    const sp = span(start, fast.endedAt ? end : null);
    const sent = await api.correctFast(fast, { startedAt: sp.startedAt, ...(sp.endedAt ? { endedAt: sp.endedAt } : {}), protocol });
    onChange(sent.data);
    setMode('view');
    return sent.queued ? t('sync.queued') : t('history.corrected');
  });
  const remove = () => {
    void action.run(async () => {
      await api.deleteFast(fast.id);
      onDeleted(fast.id);
      return undefined;
    });
  };

  return (
    <li class="card fast" data-status={fast.status} data-testid="fast">
      <h2>
        {fmtDateTime(fast.startedAt)} · {fast.protocol}
      </h2>
      <p>
        <span class={`badge ${fast.status.toLowerCase()}`}>{t(`status.${fast.status}`)}</span> {fmtHours(length)}
        {fast.autoStarted ? ` · ${t('history.auto')}` : ''}
        {fast.endedAt ? ` · ${t('history.until', { time: fmtDateTime(fast.endedAt) })}` : ''}
      </p>
      {s && (
        <p class="muted diary-summary">
          {s.headache ? `${t('diary.headache')} · ` : ''}
          {t('history.summary', { energy: s.energy ?? '–', hunger: s.hunger ?? '–', clarity: s.clarity ?? '–' })}
          {s.note ? ` · “${s.note}”` : ''}
        </p>
      )}
      {mode === 'edit' && (
        <form class="stack" onSubmit={save} aria-label={t('history.editLabel')}>
          <label for={`start-${id}`}>{t('history.start')}</label>
          <input id={`start-${id}`} type="datetime-local" required value={start} onInput={(e) => { setStart(e.currentTarget.value); }} />
          {fast.endedAt && (
            <>
              <label for={`end-${id}`}>{t('history.end')}</label>
              <input id={`end-${id}`} type="datetime-local" required value={end} onInput={(e) => { setEnd(e.currentTarget.value); }} />
            </>
          )}
          <label for={`protocol-${id}`}>{t('today.protocol')}</label>
          <ProtocolSelect id={`protocol-${id}`} value={protocol} onChange={setProtocol} />
          <div class="row">
            <button type="submit" class="primary" disabled={action.busy}>
              {t('history.save')}
            </button>
            <button type="button" class="secondary" onClick={() => { setMode('view'); }}>
              {t('common.cancel')}
            </button>
          </div>
        </form>
      )}
      {mode === 'delete' && (
        <div class="notice" role="alert">
          <p>{t('history.confirmDelete')}</p>
          <div class="row">
            <button type="button" class="danger" onClick={remove} disabled={action.busy}>
              {t('history.yesDelete')}
            </button>
            <button type="button" class="secondary" onClick={() => { setMode('view'); }}>
              {t('history.keep')}
            </button>
          </div>
        </div>
      )}
      {mode === 'view' && !waiting && (
        <div class="row">
          <button type="button" class="secondary" onClick={edit}>
            {t('history.edit')}
            <span class="sr-only"> {fmtDateTime(fast.startedAt)}</span>
          </button>
          <button type="button" class="secondary" onClick={() => { setMode('delete'); }}>
            {t('common.delete')}
            <span class="sr-only"> {fmtDateTime(fast.startedAt)}</span>
          </button>
        </div>
      )}
      <Notice message={action.message} />
      <details>
        <summary>{length >= DAY && fast.endedAt ? t('history.diaryAndSuggestions') : t('history.diary')}</summary>
        <Diary fast={fast} onSaved={onChange} />
        {length >= DAY && fast.endedAt && !waiting && <Suggestions fastId={fast.id} />}
      </details>
    </li>
  );
}
