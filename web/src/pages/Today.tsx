import { useEffect, useState } from 'preact/hooks';
import { api } from '../api/client';
import type { Fast, Pause, Preferences, Protocol } from '../api/types';
import { Diary } from '../components/Diary';
import { Safety } from '../components/Safety';
import { Suggestions } from '../components/Suggestions';
import { Water } from '../components/Water';
import { Fact, LoadError, Loading, Notice, PageTitle } from '../components/ui';
import { useAction, useLoad, useNow } from '../hooks';
import { t } from '../i18n';
import { onSynced, pendingOf } from '../queue';
import { fmtClock, fmtDateTime, fmtHours, fmtTime } from '../time';
import { PROTOCOLS, fastingHours, isProtocol, milestones, zoneIndexAt, zones } from '../zones';

interface TodayData {
  current: Fast | null;
  prefs: Preferences;
  pause: Pause;
}

/** The server's state, with the starts and ends still waiting to be sent laid over it. */
function withPending(user: string, current: Fast | null): Fast | null {
  let fast = current;
  for (const op of pendingOf(user)) {
    if (op.kind === 'start') fast = op.optimistic as Fast;
    else if (op.kind === 'end' && fast && op.target === fast.id) fast = null;
    else if (op.kind === 'patch' && fast && op.target === fast.id) fast = op.optimistic as Fast;
  }
  return fast;
}

async function loadToday(): Promise<TodayData> {
  const [current, me, pause] = await Promise.all([api.currentFast(), api.me(), api.pause()]);
  return { current: withPending(me.user.id, current), prefs: me.user.preferences, pause };
}

export function Today() {
  const res = useLoad(loadToday);
  const [ended, setEnded] = useState<Fast | null>(null);
  const [undoable, setUndoable] = useState<Fast | null>(null);
  // Kept apart from the loaded data, which the start that follows replaces as a whole.
  const [acknowledged, setAcknowledged] = useState(false);
  const data = res.data;
  const patch = (p: Partial<TodayData>) => {
    if (data) res.set({ ...data, ...p });
  };
  // Once the waiting changes are sent, the server's ids and times replace the stand-ins.
  useEffect(() => onSynced(res.reload), []);

  return (
    <>
      <PageTitle>{t('today.title')}</PageTitle>
      <Loading when={res.loading && !res.data} />
      <LoadError error={res.error} retry={res.reload} />
      {res.data &&
        (res.data.current ? (
          <Running
            fast={res.data.current}
            onChange={(f) => {
              patch({ current: f });
            }}
            onEnded={(f, queued) => {
              setEnded(f);
              // A fast ended offline is resumed by nobody: the undo needs the server.
              setUndoable(queued ? null : f);
              patch({ current: null });
            }}
          />
        ) : (
          <Start
            prefs={res.data.prefs}
            acknowledged={acknowledged || res.data.prefs.longFastAcknowledged}
            onAcknowledged={() => {
              setAcknowledged(true);
            }}
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
      {res.data && <Water />}
      {res.data && (
        <section class="card" aria-labelledby="weight-link-title">
          <h2 id="weight-link-title">{t('today.weightTitle')}</h2>
          <p>
            <a href="/weight">{t('today.weightLink')}</a>
          </p>
        </section>
      )}
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
          {t('today.ended')} ·{' '}
          <button type="button" class="secondary" onClick={resume} disabled={action.busy}>
            {t('common.undo')}
          </button>
        </p>
      )}
    </div>
  );
}

function Start({ prefs, acknowledged, onStarted, onAcknowledged }: { prefs: Preferences; acknowledged: boolean; onStarted: (f: Fast) => void; onAcknowledged: () => void }) {
  const [protocol, setProtocol] = useState<Protocol>(prefs.fastingProtocol ?? '16:8');
  const [asking, setAsking] = useState(false);
  const action = useAction();
  const start = () =>
    action.run(async () => {
      const sent = await api.startFast(protocol);
      onStarted(sent.data);
      return sent.queued ? t('sync.queuedStart') : undefined;
    });
  const submit = (e: Event) => {
    e.preventDefault();
    // The first fast of a day or more waits for the person to read who should not fast alone.
    if (fastingHours(protocol) >= 24 && !acknowledged) {
      setAsking(true);
      return;
    }
    void start();
  };
  if (asking) {
    return (
      <Safety
        protocol={protocol}
        onAccept={async () => {
          await api.setPreferences({ longFastAcknowledged: true });
          onAcknowledged();
          setAsking(false);
          await start();
        }}
        onCancel={() => {
          setAsking(false);
          setProtocol('16:8');
        }}
      />
    );
  }
  return (
    <form class="card" onSubmit={submit}>
      <h2>{t('today.noFast')}</h2>
      <label for="protocol">{t('today.protocol')}</label>
      <select id="protocol" name="protocol" value={protocol} onChange={(e) => { const v = e.currentTarget.value; if (isProtocol(v)) setProtocol(v); }}>
        {PROTOCOLS.map((p) => (
          <option key={p} value={p}>
            {t('today.protocolOption', { protocol: p, count: fastingHours(p) })}
          </option>
        ))}
      </select>
      <button type="submit" class="primary" disabled={action.busy}>
        {t('today.start')}
      </button>
      <Notice message={action.message} />
    </form>
  );
}

function Running({ fast, onChange, onEnded }: { fast: Fast; onChange: (f: Fast) => void; onEnded: (f: Fast, queued: boolean) => void }) {
  const now = useNow();
  const action = useAction();
  const start = Date.parse(fast.startedAt);
  const end = Date.parse(fast.plannedEndAt);
  const elapsed = now - start;
  const progress = Math.min(1, elapsed / (end - start));
  const hours = elapsed / 3_600_000;
  const zi = zoneIndexAt(hours);
  const all = zones();
  const zone = all[zi];
  const next = milestones(start, end).find((m) => m.at > now);
  const r = 52;
  const c = 2 * Math.PI * r;

  const finish = () => {
    void action.run(async () => {
      const sent = await api.endFast(fast);
      onEnded(sent.data, sent.queued);
      return undefined;
    });
  };

  return (
    <>
      <section class="card timer" aria-labelledby="timer-title">
        <h2 id="timer-title">
          {t(fast.autoStarted ? 'today.runningAuto' : 'today.running', { protocol: fast.protocol })}
        </h2>
        <div class="ring">
          <svg viewBox="0 0 120 120" role="img" aria-label={t('today.progress', { percent: Math.round(progress * 100) })}>
            <circle class="track" cx="60" cy="60" r={r} />
            <circle class="bar" cx="60" cy="60" r={r} stroke-dasharray={`${c * progress} ${c}`} transform="rotate(-90 60 60)" />
          </svg>
          <div class="ring-text">
            <span class="clock" data-testid="elapsed" role="timer" aria-label={t('today.elapsed', { time: fmtHours(elapsed) })}>
              {fmtClock(elapsed)}
            </span>
            <span class="muted">{Math.round(progress * 100)}%</span>
          </div>
        </div>
        <dl class="facts">
          <Fact term={t('today.startedAt')}>{fmtDateTime(fast.startedAt)}</Fact>
          <Fact term={t('today.plannedEnd')}>{fmtDateTime(fast.plannedEndAt)}</Fact>
          <Fact term={now < end ? t('today.left') : t('today.beyond')}>{fmtHours(Math.abs(end - now))}</Fact>
          <Fact term={t('today.nextMilestone')} testId="next-milestone">
            {next ? t('today.milestoneAt', { label: next.label, time: fmtTime(next.at) }) : t('today.none')}
          </Fact>
        </dl>
        <button type="button" class="primary" onClick={finish} disabled={action.busy}>
          {t('today.end')}
        </button>
        <Notice message={action.message} />
      </section>
      {zone && (
        <section class="card" aria-labelledby="zone-title">
          <h2 id="zone-title">{t('today.zone', { title: zone.title })}</h2>
          <p>{zone.summary}</p>
          <p class="source">
            {t('today.source')}{' '}
            <a href={zone.sourceUrl} rel="noopener noreferrer" target="_blank">
              {zone.source}
            </a>
          </p>
          <ol class="zones" aria-label={t('today.zones')}>
            {all.map((z, i) => (
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
        <h2 id="ended-title">{fast.status === 'COMPLETED' ? t('today.completed') : t('today.endedEarly')}</h2>
        <p>{t('today.length', { length: fmtHours(length), count: fastingHours(fast.protocol) })}</p>
      </section>
      {length >= 24 * 3_600_000 && !fast.id.startsWith('local:') && <Suggestions fastId={fast.id} />}
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
      return p.paused ? t('pause.on') : t('pause.off');
    });
  };
  return (
    <section class="card" aria-labelledby="pause-title">
      <h2 id="pause-title">{t('pause.title')}</h2>
      {pause.paused && pause.fastingPausedUntil ? (
        <>
          <p data-testid="pause-state">{t('pause.until', { time: fmtDateTime(pause.fastingPausedUntil) })}</p>
          <button type="button" class="secondary" onClick={() => { set(null); }} disabled={action.busy}>
            {t('pause.end')}
          </button>
        </>
      ) : (
        <>
          <p>{t('pause.explain')}</p>
          <button type="button" class="secondary" onClick={() => { set(); }} disabled={action.busy}>
            {t('pause.start')}
          </button>
        </>
      )}
      <Notice message={action.message} />
    </section>
  );
}
