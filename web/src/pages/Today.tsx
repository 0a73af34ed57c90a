import { useEffect, useState } from 'preact/hooks';
import { api } from '../api/client';
import type { Fast, Pause, Protocol } from '../api/types';
import { Diary } from '../components/Diary';
import { Suggestions } from '../components/Suggestions';
import { LoadError, Loading, Notice, PageTitle } from '../components/ui';
import { useAction, useLoad, useNow } from '../hooks';
import { fmtClock, fmtDateTime, fmtHours, fmtTime } from '../time';
import { PROTOCOLS, ZONES, fastingHours, isProtocol, milestones, zoneIndexAt } from '../zones';

interface TodayData {
  current: Fast | null;
  protocol: Protocol | null;
  pause: Pause;
}

async function loadToday(): Promise<TodayData> {
  const [current, me, pause] = await Promise.all([api.currentFast(), api.me(), api.pause()]);
  return { current, protocol: me.user.preferences.fastingProtocol, pause };
}

export function Today() {
  const res = useLoad(loadToday);
  const [ended, setEnded] = useState<Fast | null>(null);
  const [undoable, setUndoable] = useState<Fast | null>(null);
  const data = res.data;
  const patch = (p: Partial<TodayData>) => {
    if (data) res.set({ ...data, ...p });
  };

  return (
    <>
      <PageTitle>Oggi</PageTitle>
      <Loading when={res.loading && !res.data} />
      <LoadError error={res.error} retry={res.reload} />
      {res.data &&
        (res.data.current ? (
          <Running
            fast={res.data.current}
            onChange={(f) => {
              patch({ current: f });
            }}
            onEnded={(f) => {
              setEnded(f);
              setUndoable(f);
              patch({ current: null });
            }}
          />
        ) : (
          <Start
            preferred={res.data.protocol}
            onStarted={(f) => {
              setEnded(null);
              setUndoable(null);
              patch({ current: f });
            }}
          />
        ))}
      {undoable && (
        <UndoEnd
          fast={undoable}
          onResumed={(f) => {
            setEnded(null);
            setUndoable(null);
            patch({ current: f });
          }}
          onExpired={() => {
            setUndoable(null);
          }}
        />
      )}
      {ended && <Ended fast={ended} onChange={setEnded} />}
      {res.data && <PauseCard pause={res.data.pause} onChange={(p) => { patch({ pause: p }); }} />}
    </>
  );
}

const UNDO_MS = 10_000;

/** "Digiuno terminato · Annulla" for 10 s after ending: a tap resumes the same fast. */
function UndoEnd({ fast, onResumed, onExpired }: { fast: Fast; onResumed: (f: Fast) => void; onExpired: () => void }) {
  const action = useAction();
  useEffect(() => {
    const left = Date.parse(fast.endedAt ?? new Date().toISOString()) + UNDO_MS - Date.now();
    const timer = setTimeout(onExpired, Math.max(0, Math.min(UNDO_MS, left)));
    return () => {
      clearTimeout(timer);
    };
    // One countdown per ended fast.
  }, [fast.id]);
  const resume = () => {
    void action.run(async () => {
      onResumed(await api.resumeFast(fast.id));
      return undefined;
    });
  };
  return (
    <div class="card undo" role="status" data-testid="undo-end">
      {action.message ? (
        <Notice message={action.message} />
      ) : (
        <p>
          Digiuno terminato ·{' '}
          <button type="button" class="secondary" onClick={resume} disabled={action.busy}>
            Annulla
          </button>
        </p>
      )}
    </div>
  );
}

function Start({ preferred, onStarted }: { preferred: Protocol | null; onStarted: (f: Fast) => void }) {
  const [protocol, setProtocol] = useState<Protocol>(preferred ?? '16:8');
  const action = useAction();
  const submit = action.submit(async () => {
    onStarted(await api.startFast(protocol));
    return undefined;
  });
  return (
    <form class="card" onSubmit={submit}>
      <h2>Nessun digiuno in corso</h2>
      <label for="protocol">Protocollo</label>
      <select id="protocol" name="protocol" value={protocol} onChange={(e) => { const v = e.currentTarget.value; if (isProtocol(v)) setProtocol(v); }}>
        {PROTOCOLS.map((p) => (
          <option key={p} value={p}>
            {p} · {fastingHours(p)} ore di digiuno
          </option>
        ))}
      </select>
      <button type="submit" class="primary" disabled={action.busy}>
        Inizia il digiuno
      </button>
      <Notice message={action.message} />
    </form>
  );
}

function Running({ fast, onChange, onEnded }: { fast: Fast; onChange: (f: Fast) => void; onEnded: (f: Fast) => void }) {
  const now = useNow();
  const action = useAction();
  const start = Date.parse(fast.startedAt);
  const end = Date.parse(fast.plannedEndAt);
  const elapsed = now - start;
  const progress = Math.min(1, elapsed / (end - start));
  const hours = elapsed / 3_600_000;
  const zi = zoneIndexAt(hours);
  const zone = ZONES[zi];
  const next = milestones(start, end).find((m) => m.at > now);
  const r = 52;
  const c = 2 * Math.PI * r;

  const finish = () => {
    void action.run(async () => {
      onEnded(await api.endFast(fast.id));
      return undefined;
    });
  };

  return (
    <>
      <section class="card timer" aria-labelledby="timer-title">
        <h2 id="timer-title">
          Digiuno {fast.protocol} in corso{fast.autoStarted ? ' (avviato dalla cena)' : ''}
        </h2>
        <div class="ring">
          <svg viewBox="0 0 120 120" role="img" aria-label={`Completato al ${Math.round(progress * 100)}%`}>
            <circle class="track" cx="60" cy="60" r={r} />
            <circle class="bar" cx="60" cy="60" r={r} stroke-dasharray={`${c * progress} ${c}`} transform="rotate(-90 60 60)" />
          </svg>
          <div class="ring-text">
            <span class="clock" data-testid="elapsed" role="timer" aria-label={`Trascorso ${fmtHours(elapsed)}`}>
              {fmtClock(elapsed)}
            </span>
            <span class="muted">{Math.round(progress * 100)}%</span>
          </div>
        </div>
        <dl class="facts">
          <div>
            <dt>Iniziato</dt>
            <dd>{fmtDateTime(fast.startedAt)}</dd>
          </div>
          <div>
            <dt>Fine prevista</dt>
            <dd>{fmtDateTime(fast.plannedEndAt)}</dd>
          </div>
          <div>
            <dt>{now < end ? 'Mancano' : 'Oltre il previsto'}</dt>
            <dd>{fmtHours(Math.abs(end - now))}</dd>
          </div>
          <div>
            <dt>Prossima tappa</dt>
            <dd data-testid="next-milestone">{next ? `${next.label} alle ${fmtTime(next.at)}` : 'Nessuna'}</dd>
          </div>
        </dl>
        <button type="button" class="primary" onClick={finish} disabled={action.busy}>
          Termina il digiuno
        </button>
        <Notice message={action.message} />
      </section>
      {zone && (
        <section class="card" aria-labelledby="zone-title">
          <h2 id="zone-title">Fase: {zone.title}</h2>
          <p>{zone.summary}</p>
          <p class="source">
            Fonte:{' '}
            <a href={zone.sourceUrl} rel="noopener noreferrer" target="_blank">
              {zone.source}
            </a>
          </p>
          <ol class="zones" aria-label="Fasi del digiuno">
            {ZONES.map((z, i) => (
              <li key={z.key} class={i < zi ? 'done' : i === zi ? 'now' : ''} aria-current={i === zi ? 'step' : undefined}>
                <span class="zone-hour">{z.fromHour} h</span> {z.title}
              </li>
            ))}
          </ol>
        </section>
      )}
      <Diary fast={fast} onSaved={onChange} />
    </>
  );
}

function Ended({ fast, onChange }: { fast: Fast; onChange: (f: Fast) => void }) {
  const length = Date.parse(fast.endedAt ?? fast.plannedEndAt) - Date.parse(fast.startedAt);
  return (
    <>
      <section class="card" aria-labelledby="ended-title">
        <h2 id="ended-title">{fast.status === 'COMPLETED' ? 'Digiuno completato' : 'Digiuno terminato in anticipo'}</h2>
        <p>
          Durata: <strong>{fmtHours(length)}</strong> (obiettivo {fastingHours(fast.protocol)} ore).
        </p>
      </section>
      {length >= 24 * 3_600_000 && <Suggestions fastId={fast.id} />}
      <Diary fast={fast} onSaved={onChange} />
    </>
  );
}

function PauseCard({ pause, onChange }: { pause: Pause; onChange: (p: Pause) => void }) {
  const action = useAction();
  const set = (until?: null) => {
    void action.run(async () => {
      const p = await api.setPause(until);
      onChange(p);
      return p.paused ? 'Pausa attivata.' : 'Pausa terminata.';
    });
  };
  return (
    <section class="card" aria-labelledby="pause-title">
      <h2 id="pause-title">Giorno libero</h2>
      {pause.paused && pause.fastingPausedUntil ? (
        <>
          <p data-testid="pause-state">In pausa fino a {fmtDateTime(pause.fastingPausedUntil)}: niente promemoria e la serie non si interrompe.</p>
          <button type="button" class="secondary" onClick={() => { set(null); }} disabled={action.busy}>
            Termina la pausa
          </button>
        </>
      ) : (
        <>
          <p>Una pausa sospende i promemoria fino a domani alle 06:00 senza interrompere la serie.</p>
          <button type="button" class="secondary" onClick={() => { set(); }} disabled={action.busy}>
            Metti in pausa fino a domani
          </button>
        </>
      )}
      <Notice message={action.message} />
    </section>
  );
}
