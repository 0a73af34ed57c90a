import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, api, errorText, toSignIn } from '../api/client';
import type { NotificationConfig, NotificationSettings, Preferences, Protocol, User } from '../api/types';
import type { AuthFailure } from '../auth';
import { Card, LoadError, Loading, Notice, PageTitle } from '../components/ui';
import { useAction, useLoad } from '../hooks';
import { PushUnreachable, currentSubscription, disablePush, enablePush, forgetDevice, pushSupported } from '../push';
import { fmtDateTime } from '../time';
import { PROTOCOLS, fastingHours, isProtocol } from '../zones';

// better-auth's client is loaded only here, keeping it off the first screen.
const auth = () => import('../auth');

interface SettingsData {
  user: User;
  notifications: NotificationSettings;
  config: NotificationConfig;
}

async function loadSettings(): Promise<SettingsData> {
  const [me, notifications, config] = await Promise.all([api.me(), api.notificationSettings(), api.notificationConfig()]);
  return { user: me.user, notifications, config };
}

export function Settings() {
  const res = useLoad(loadSettings);
  return (
    <>
      <PageTitle>Impostazioni</PageTitle>
      <Loading when={res.loading && !res.data} />
      <LoadError error={res.error} retry={res.reload} />
      {res.data && (
        <>
          <FastingPrefs prefs={res.data.user.preferences} />
          <Reminders settings={res.data.notifications} />
          <Device config={res.data.config} />
          <Account user={res.data.user} />
          <Sessions />
          <Activity />
          <Password />
          <TwoFactor enabled={res.data.user.twoFactorEnabled} />
          <Passkeys />
          <Data />
          <SignOut />
          <DeleteAccount />
        </>
      )}
    </>
  );
}

type Status = { text: string; error: boolean } | null;

/**
 * Settings apply as they are changed: each change is sent at once, in the order made, and the
 * card says "Salvato" or why not (the control then shows the saved value again).
 */
function useAutosave() {
  const [status, setStatus] = useState<Status>(null);
  const queue = useRef<Promise<void>>(Promise.resolve());
  const save = (send: () => Promise<unknown>, revert: () => void) => {
    setStatus({ text: 'Salvataggio…', error: false });
    queue.current = queue.current.then(send).then(
      () => {
        setStatus({ text: 'Salvato.', error: false });
      },
      (e: unknown) => {
        revert();
        setStatus({ text: `Non salvato: ${errorText(e)}`, error: true });
      },
    );
  };
  return { status, save };
}

/** A checkbox saved as it is changed; a refused save puts it back. */
function AutosaveCheck(props: {
  id: string;
  initial: boolean;
  autosave: ReturnType<typeof useAutosave>;
  send: (on: boolean) => Promise<unknown>;
  children: ComponentChildren;
}) {
  const [checked, setChecked] = useState(props.initial);
  return (
    <label class="check">
      <input
        type="checkbox"
        id={props.id}
        checked={checked}
        onChange={(e) => {
          const on = e.currentTarget.checked;
          setChecked(on);
          props.autosave.save(
            () => props.send(on),
            () => {
              setChecked(!on);
            },
          );
        }}
      />
      {props.children}
    </label>
  );
}

function FastingPrefs({ prefs }: { prefs: Preferences }) {
  const [protocol, setProtocol] = useState<Protocol | ''>(prefs.fastingProtocol ?? '');
  const autosave = useAutosave();
  return (
    <Card id="prefs-title" title="Digiuno">
      <label for="pref-protocol">Protocollo preferito</label>
      <select
        id="pref-protocol"
        value={protocol}
        onChange={(e) => {
          const v = e.currentTarget.value;
          const next = isProtocol(v) ? v : '';
          const before = protocol;
          setProtocol(next);
          autosave.save(
            () => api.setPreferences({ fastingProtocol: next || null }),
            () => {
              setProtocol(before);
            },
          );
        }}
      >
        <option value="">Nessuno (la cena non avvia il digiuno)</option>
        {PROTOCOLS.map((p) => (
          <option key={p} value={p}>
            {p} · {fastingHours(p)} ore
          </option>
        ))}
      </select>
      <AutosaveCheck
        id="pref-milestones"
        initial={prefs.fastingMilestones}
        autosave={autosave}
        send={(on) => api.setPreferences({ fastingMilestones: on })}
      >
        Notifiche delle tappe (idratazione, elettroliti, fine vicina)
      </AutosaveCheck>
      <Notice message={autosave.status} testId="prefs-status" />
    </Card>
  );
}

function Reminders({ settings }: { settings: NotificationSettings }) {
  const autosave = useAutosave();
  return (
    <Card id="rem-title" title="Promemoria">
      <AutosaveCheck
        id="meal-reminders"
        initial={settings.mealReminders}
        autosave={autosave}
        send={(on) => api.setNotificationSettings({ mealReminders: on })}
      >
        Promemoria dei pasti (13:00, 16:00, 19:00)
      </AutosaveCheck>
      <AutosaveCheck
        id="weekly-weigh-in"
        initial={settings.weeklyWeighIn}
        autosave={autosave}
        send={(on) => api.setNotificationSettings({ weeklyWeighIn: on })}
      >
        Pesata settimanale (lunedì alle 9:00)
      </AutosaveCheck>
      <Notice message={autosave.status} testId="reminders-status" />
    </Card>
  );
}

function Device({ config }: { config: NotificationConfig }) {
  const [subscribed, setSubscribed] = useState<boolean | null>(null);
  const [unreachable, setUnreachable] = useState(false);
  const action = useAction();
  useEffect(() => {
    currentSubscription().then(
      (s) => {
        setSubscribed(s !== null && Notification.permission === 'granted');
      },
      () => {
        setSubscribed(false);
      },
    );
  }, []);
  const supported = pushSupported();
  const key = config.vapidPublicKey;
  const turnOn = (vapidKey: string) => {
    setUnreachable(false);
    void action.run(async () => {
      try {
        await enablePush(vapidKey);
      } catch (e) {
        if (e instanceof PushUnreachable) setUnreachable(true);
        throw e;
      }
      setSubscribed(true);
      return 'Notifiche attivate su questo dispositivo.';
    });
  };
  return (
    <Card id="push-title" title="Notifiche su questo dispositivo">
      {!config.pushEnabled || !key ? (
        <p>Le notifiche push non sono attive su questo server.</p>
      ) : !supported ? (
        <p>Questo browser non supporta le notifiche push.</p>
      ) : (
        <>
          <p data-testid="push-state">{subscribed ? 'Attive su questo dispositivo.' : 'Non attive su questo dispositivo.'}</p>
          {subscribed ? (
            <div class="row">
              <button
                type="button"
                class="secondary"
                disabled={action.busy}
                onClick={() =>
                  void action.run(async () => {
                    await disablePush();
                    setSubscribed(false);
                    return 'Notifiche disattivate su questo dispositivo.';
                  })
                }
              >
                Disattiva
              </button>
              <button
                type="button"
                disabled={action.busy}
                onClick={() =>
                  void action.run(async () => {
                    const r = await api.testPush();
                    return r.sent > 0
                      ? `Notifica di prova inviata a ${r.sent} ${r.sent === 1 ? 'dispositivo' : 'dispositivi'}.`
                      : 'Nessun dispositivo ha ricevuto la prova.';
                  })
                }
              >
                Invia una prova
              </button>
            </div>
          ) : (
            <button
              type="button"
              class="primary"
              disabled={action.busy}
              onClick={() => {
                turnOn(key);
              }}
            >
              {action.busy ? 'Attivazione in corso…' : 'Attiva le notifiche'}
            </button>
          )}
        </>
      )}
      <Notice message={action.message} />
      {unreachable && key && !action.busy && (
        <button
          type="button"
          class="secondary"
          onClick={() => {
            turnOn(key);
          }}
        >
          Riprova
        </button>
      )}
    </Card>
  );
}

function Account({ user }: { user: User }) {
  const action = useAction();
  return (
    <Card id="acc-title" title="Account">
      <p>
        {user.name} · {user.email}
      </p>
      {user.emailVerified ? (
        <p>E-mail verificata.</p>
      ) : (
        <>
          <p>E-mail non ancora verificata.</p>
          <button
            type="button"
            class="secondary"
            disabled={action.busy}
            onClick={() =>
              void action.run(async () => {
                const { authClient, unwrap } = await auth();
                unwrap(await authClient.sendVerificationEmail({ email: user.email, callbackURL: '/settings' }));
                return `Ti abbiamo inviato un link di verifica a ${user.email}.`;
              })
            }
          >
            Invia l'e-mail di verifica
          </button>
        </>
      )}
      <Notice message={action.message} />
    </Card>
  );
}

interface SessionRow {
  id: string;
  token: string;
  createdAt: Date | string;
  updatedAt: Date | string;
  userAgent?: string | null | undefined;
  ipAddress?: string | null | undefined;
  current?: boolean;
}

function device(ua: string | null | undefined): string {
  if (!ua) return 'Dispositivo sconosciuto';
  const browser = /Firefox\//.test(ua) ? 'Firefox' : /Edg\//.test(ua) ? 'Edge' : /Chrom(e|ium)\//.test(ua) ? 'Chrome' : /Safari\//.test(ua) ? 'Safari' : 'Browser';
  const os = /Android/.test(ua) ? 'Android' : /iPhone|iPad/.test(ua) ? 'iOS' : /Mac OS X/.test(ua) ? 'macOS' : /Windows/.test(ua) ? 'Windows' : /Linux/.test(ua) ? 'Linux' : '';
  return os ? `${browser} su ${os}` : browser;
}

function Sessions() {
  const list = useLoad(async () => {
    const { authClient, unwrap } = await auth();
    const rows: SessionRow[] = unwrap(await authClient.listSessions());
    return rows;
  });
  const action = useAction();
  const revoke = (s: SessionRow) => {
    void action.run(async () => {
      const { authClient, unwrap } = await auth();
      unwrap(await authClient.revokeSession({ token: s.token }));
      list.reload();
      return 'Sessione chiusa.';
    });
  };
  const others = () => {
    void action.run(async () => {
      const { authClient, unwrap } = await auth();
      unwrap(await authClient.revokeOtherSessions());
      list.reload();
      return 'Tutte le altre sessioni sono state chiuse.';
    });
  };
  return (
    <Card id="sess-title" title="Sessioni attive">
      <Loading when={list.loading && !list.data} />
      <LoadError error={list.error} retry={list.reload} />
      <ul class="sessions">
        {list.data?.map((s) => (
          <li key={s.id}>
            <span>
              {device(s.userAgent)}
              {s.current ? ' · questo dispositivo' : ''}
              <br />
              <span class="muted">dal {fmtDateTime(new Date(s.createdAt).getTime())}</span>
            </span>
            {!s.current && (
              <button type="button" class="secondary" onClick={() => { revoke(s); }} disabled={action.busy}>
                Chiudi<span class="sr-only"> la sessione {device(s.userAgent)}</span>
              </button>
            )}
          </li>
        ))}
      </ul>
      {list.data && list.data.length > 1 && (
        <button type="button" class="secondary" onClick={others} disabled={action.busy}>
          Chiudi tutte le altre sessioni
        </button>
      )}
      <Notice message={action.message} />
    </Card>
  );
}

function Password() {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [revokeOthers, setRevokeOthers] = useState(true);
  const action = useAction();
  const submit = action.submit(async () => {
    const { authClient, unwrap } = await auth();
    unwrap(await authClient.changePassword({ currentPassword: current, newPassword: next, revokeOtherSessions: revokeOthers }));
    setCurrent('');
    setNext('');
    return 'Password cambiata.';
  });
  return (
    <form class="card" onSubmit={submit} aria-labelledby="pw-title">
      <h2 id="pw-title">Password</h2>
      <label for="pw-current">Password attuale</label>
      <input id="pw-current" type="password" autocomplete="current-password" required value={current} onInput={(e) => { setCurrent(e.currentTarget.value); }} />
      <label for="pw-new">Nuova password (almeno 8 caratteri)</label>
      <input id="pw-new" type="password" autocomplete="new-password" required minLength={8} maxLength={128} value={next} onInput={(e) => { setNext(e.currentTarget.value); }} />
      <label class="check">
        <input type="checkbox" checked={revokeOthers} onChange={(e) => { setRevokeOthers(e.currentTarget.checked); }} />
        Esci dagli altri dispositivi
      </label>
      <button type="submit" disabled={action.busy}>
        Cambia password
      </button>
      <Notice message={action.message} />
    </form>
  );
}

/** An `otpauth://` URI as a QR code an authenticator app can scan, drawn as one SVG path. */
function QrCode({ text }: { text: string }) {
  const [matrix, setMatrix] = useState<boolean[][] | null>(null);
  useEffect(() => {
    void import('uqr').then(({ encode }) => {
      setMatrix(encode(text, { border: 4 }).data);
    });
  }, [text]);
  if (!matrix) return null;
  const path = matrix.flatMap((row, y) => row.flatMap((dark, x) => (dark ? [`M${x} ${y}h1v1h-1z`] : []))).join('');
  return (
    <svg class="qr" viewBox={`0 0 ${matrix.length} ${matrix.length}`} role="img" aria-label="Codice QR per l'app di autenticazione" shape-rendering="crispEdges">
      <rect width="100%" height="100%" fill="#fff" />
      <path d={path} fill="#000" />
    </svg>
  );
}

/** Backup codes, shown once, with a way to keep them. */
function BackupCodes({ codes }: { codes: string[] }) {
  return (
    <>
      <p>Codici di riserva: ognuno vale una volta, se non hai il telefono. Conservali ora: non li mostreremo più.</p>
      <ul class="codes" data-testid="backup-codes">
        {codes.map((c) => (
          <li key={c}>
            <code>{c}</code>
          </li>
        ))}
      </ul>
    </>
  );
}

/** Two-factor sign-in: set up with an authenticator app, new backup codes, turned off. */
function TwoFactor({ enabled }: { enabled: boolean }) {
  const [on, setOn] = useState(enabled);
  const [password, setPassword] = useState('');
  const [setup, setSetup] = useState<{ uri: string; codes: string[] } | null>(null);
  const [codes, setCodes] = useState<string[] | null>(null);
  const [code, setCode] = useState('');
  const action = useAction();
  const begin = action.submit(async () => {
    const { authClient, unwrap } = await auth();
    const started = unwrap(await authClient.twoFactor.enable({ password }));
    if (started.method !== 'totp') throw new Error("Il server non ha dato la chiave per l'app.");
    setSetup({ uri: started.totpURI, codes: started.backupCodes });
    setPassword('');
    return undefined;
  });
  const confirm = action.submit(async () => {
    const { authClient, unwrap } = await auth();
    unwrap(await authClient.twoFactor.verifyTotp({ code }));
    setOn(true);
    setCodes(setup?.codes ?? null);
    setSetup(null);
    setCode('');
    return 'Verifica in due passaggi attiva.';
  });
  const renew = () => {
    void action.run(async () => {
      const { authClient, unwrap } = await auth();
      setCodes(unwrap(await authClient.twoFactor.generateBackupCodes({ password })).backupCodes);
      setPassword('');
      return 'Nuovi codici di riserva: i precedenti non valgono più.';
    });
  };
  const disable = () => {
    void action.run(async () => {
      const { authClient, unwrap } = await auth();
      unwrap(await authClient.twoFactor.disable({ password }));
      setOn(false);
      setCodes(null);
      setPassword('');
      return 'Verifica in due passaggi disattivata.';
    });
  };
  const secret = setup ? (new URL(setup.uri).searchParams.get('secret') ?? '') : '';
  return (
    <Card id="tfa-title" title="Verifica in due passaggi">
      {setup ? (
        <form onSubmit={confirm} class="stack">
          <p>Inquadra il codice con un'app di autenticazione (per esempio Google Authenticator o Aegis), poi scrivi il codice di 6 cifre che mostra.</p>
          <QrCode text={setup.uri} />
          <p class="muted">
            Oppure inserisci a mano la chiave: <code data-testid="totp-secret">{secret}</code>
          </p>
          <label for="tfa-code">Codice dell'app</label>
          <input id="tfa-code" inputMode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxLength={6} required value={code} onInput={(e) => { setCode(e.currentTarget.value); }} />
          <button type="submit" disabled={action.busy}>
            Attiva
          </button>
        </form>
      ) : (
        <>
          <p>{on ? 'Attiva: dopo la password ti chiediamo un codice dell\'app.' : "Dopo la password, ti chiediamo anche un codice dell'app di autenticazione."}</p>
          <label for="tfa-password">Password</label>
          <input id="tfa-password" type="password" autocomplete="current-password" value={password} onInput={(e) => { setPassword(e.currentTarget.value); }} />
          {on ? (
            <div class="row">
              <button type="button" class="secondary" disabled={action.busy || !password} onClick={renew}>
                Nuovi codici di riserva
              </button>
              <button type="button" class="secondary" disabled={action.busy || !password} onClick={disable}>
                Disattiva
              </button>
            </div>
          ) : (
            <form onSubmit={begin}>
              <button type="submit" disabled={action.busy || !password}>
                Configura
              </button>
            </form>
          )}
        </>
      )}
      {codes && <BackupCodes codes={codes} />}
      <Notice message={action.message} />
    </Card>
  );
}

/** The session is too old for what was asked (403 SESSION_NOT_FRESH): the password makes it fresh again. */
class SessionNotFresh extends Error {}

/** `unwrap` for what needs a recent sign-in: SESSION_NOT_FRESH becomes {@link SessionNotFresh}. */
async function unwrapFresh<T>(res: { data: T | null; error: AuthFailure | null }): Promise<T> {
  if (res.error?.code === 'SESSION_NOT_FRESH') throw new SessionNotFresh();
  const { unwrap } = await auth();
  return unwrap(res);
}

interface PasswordPrompt {
  /** Prefix of the form's element ids. */
  id: string;
  /** Why the password is asked for. */
  why: string;
  /** The submit button. */
  confirm: string;
  /** What to do without a password. */
  otherwise: string;
}

/**
 * Runs what needs a recent sign-in (the export, a new passkey) as `action`. When the session is
 * too old for it, `prompt` asks for the password, which keeps the session fresh for five minutes
 * (`/confirm-password`), and the task runs once more.
 */
function useFreshSession(action: ReturnType<typeof useAction>, texts: PasswordPrompt) {
  const [pending, setPending] = useState<(() => Promise<string | undefined>) | null>(null);
  const [password, setPassword] = useState('');
  const run = (task: () => Promise<string | undefined>) => {
    void action.run(async () => {
      try {
        return await task();
      } catch (e) {
        if (!(e instanceof SessionNotFresh)) throw e;
        setPending(() => task);
        return undefined;
      }
    });
  };
  const confirm = action.submit(async () => {
    const { authClient, unwrap } = await auth();
    unwrap(await authClient.$fetch('/confirm-password', { method: 'POST', body: { password } }));
    setPassword('');
    const task = pending;
    setPending(null);
    if (!task) return undefined;
    try {
      return await task();
    } catch (e) {
      throw e instanceof SessionNotFresh ? new Error('Conferma non riuscita: riprova.') : e;
    }
  });
  const prompt = pending && (
    <form onSubmit={confirm} aria-labelledby={`${texts.id}-confirm`}>
      <p id={`${texts.id}-confirm`}>{texts.why}</p>
      <label for={`${texts.id}-password`}>Password</label>
      <input id={`${texts.id}-password`} type="password" autocomplete="current-password" required value={password} onInput={(e) => { setPassword(e.currentTarget.value); }} />
      <button type="submit" disabled={action.busy}>
        {texts.confirm}
      </button>
      <p class="muted">{texts.otherwise}</p>
    </form>
  );
  return { run, prompt };
}

interface PasskeyRow {
  id: string;
  name?: string | null | undefined;
  createdAt: Date | string;
}

/** Passkeys: sign-in with the device's fingerprint, face or PIN, listed, added, renamed, removed. */
function Passkeys() {
  const list = useLoad(async () => {
    const { authClient, unwrap } = await auth();
    const rows: PasskeyRow[] = unwrap(await authClient.passkey.listUserPasskeys());
    return rows;
  });
  const action = useAction();
  const fresh = useFreshSession(action, {
    id: 'passkey',
    why: 'Per aggiungere una passkey, conferma che sei tu: inserisci la password.',
    confirm: 'Conferma e aggiungi',
    otherwise: "Hai effettuato l'accesso senza password? Esci e accedi di nuovo, poi aggiungi la passkey.",
  });
  const [editing, setEditing] = useState<string | null>(null);
  const [name, setName] = useState('');
  // Without WebAuthn a passkey can be neither made nor used here; those made elsewhere stay listed.
  const supported = 'PublicKeyCredential' in window;
  const add = () => {
    fresh.run(async () => {
      const { authClient } = await auth();
      const added = await unwrapFresh(await authClient.passkey.addPasskey());
      // Named once made: a name given to the ceremony would also stand for the account in the
      // device's list of passkeys, in place of the address. Unnamed, it is listed as "Passkey".
      await authClient.passkey.updatePasskey({ id: added.id, name: device(navigator.userAgent) }).catch(() => undefined);
      list.reload();
      return 'Passkey aggiunta: da ora puoi accedere da questo dispositivo senza password.';
    });
  };
  const rename = (p: PasskeyRow) =>
    action.submit(async () => {
      const { authClient, unwrap } = await auth();
      unwrap(await authClient.passkey.updatePasskey({ id: p.id, name }));
      setEditing(null);
      list.reload();
      return 'Nome della passkey salvato.';
    });
  const remove = (p: PasskeyRow) => {
    void action.run(async () => {
      const { authClient, unwrap } = await auth();
      unwrap(await authClient.passkey.deletePasskey({ id: p.id }));
      list.reload();
      return 'Passkey eliminata. Toglila anche dal gestore delle password del dispositivo: non vale più.';
    });
  };
  return (
    <section class="card" aria-labelledby="passkey-title" data-testid="passkeys">
      <h2 id="passkey-title">Passkey</h2>
      <p>Con una passkey accedi con l'impronta, il volto o il PIN del dispositivo, senza scrivere né l'indirizzo né la password.</p>
      <Loading when={list.loading && !list.data} />
      <LoadError error={list.error} retry={list.reload} />
      {list.data?.length === 0 && <p class="muted">Nessuna passkey.</p>}
      <ul class="sessions">
        {list.data?.map((p) => {
          const label = p.name ?? 'Passkey';
          return editing === p.id ? (
            <li key={p.id}>
              <form onSubmit={rename(p)} class="stack">
                <label for="passkey-name">Nuovo nome</label>
                <input id="passkey-name" required maxLength={100} value={name} onInput={(e) => { setName(e.currentTarget.value); }} />
                <div class="row">
                  <button type="submit" disabled={action.busy}>
                    Salva
                  </button>
                  <button type="button" class="secondary" onClick={() => { setEditing(null); }}>
                    Annulla
                  </button>
                </div>
              </form>
            </li>
          ) : (
            <li key={p.id}>
              <span>
                <span>{label}</span>
                <br />
                <span class="muted">aggiunta {fmtDateTime(new Date(p.createdAt).getTime())}</span>
              </span>
              <span class="row">
                <button
                  type="button"
                  class="secondary"
                  disabled={action.busy}
                  onClick={() => {
                    setName(label);
                    setEditing(p.id);
                  }}
                >
                  Rinomina<span class="sr-only"> la passkey {label}</span>
                </button>
                <button type="button" class="secondary" disabled={action.busy} onClick={() => { remove(p); }}>
                  Elimina<span class="sr-only"> la passkey {label}</span>
                </button>
              </span>
            </li>
          );
        })}
      </ul>
      {supported ? (
        <button type="button" class="primary" disabled={action.busy} onClick={add}>
          Aggiungi una passkey
        </button>
      ) : (
        <p>Questo browser non supporta le passkey: per aggiungerne una usa un browser aggiornato.</p>
      )}
      {fresh.prompt}
      <Notice message={action.message} />
    </section>
  );
}

type ExportFormat = 'json' | 'csv';

/**
 * Fetches the export and hands it to the browser as a file; {@link SessionNotFresh} when the
 * session is too old to export.
 */
async function downloadExport(format: ExportFormat): Promise<void> {
  let res: Response;
  try {
    res = await fetch(format === 'csv' ? '/me/export?format=csv' : '/me/export', { credentials: 'same-origin' });
  } catch {
    throw new ApiError(0, 'OFFLINE', 'Sei offline: riprova quando la connessione torna.');
  }
  if (res.status === 401) toSignIn();
  if (!res.ok) {
    const body = (await res.json().catch(() => null)) as { code?: string; message?: string } | null;
    if (res.status === 403 && body?.code === 'SESSION_NOT_FRESH') throw new SessionNotFresh();
    throw new ApiError(res.status, body?.code ?? 'ERROR', body?.message ?? `HTTP ${res.status}`);
  }
  const name = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '')?.[1] ?? `digiuno-export.${format}`;
  const url = URL.createObjectURL(await res.blob());
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => { URL.revokeObjectURL(url); }, 60_000);
}

function Data() {
  const action = useAction();
  const fresh = useFreshSession(action, {
    id: 'export',
    why: 'Per proteggere i tuoi dati, conferma che sei tu: inserisci la password.',
    confirm: 'Conferma e scarica',
    otherwise: "Hai effettuato l'accesso senza password? Esci e accedi di nuovo, poi esporta.",
  });
  const download = (format: ExportFormat) => {
    fresh.run(async () => {
      await downloadExport(format);
      return 'Download avviato.';
    });
  };
  return (
    <Card id="data-title" title="I tuoi dati">
      <p>Scarica una copia di tutto ciò che conserviamo su di te.</p>
      <div class="row">
        <button type="button" class="secondary" onClick={() => { download('json'); }} disabled={action.busy} data-testid="export-json">
          Esporta (JSON)
        </button>
        <button type="button" class="secondary" onClick={() => { download('csv'); }} disabled={action.busy}>
          Digiuni (CSV)
        </button>
      </div>
      {fresh.prompt}
      <Notice message={action.message} />
    </Card>
  );
}

interface ActivityItem {
  kind: string;
  at: string;
  userAgent: string | null;
  ip: string | null;
}

const ACTIVITY: Record<string, string> = {
  sign_in: 'Accesso',
  sign_in_failed: 'Accesso non riuscito',
  password_changed: 'Password cambiata',
  email_changed: 'E-mail cambiata',
  two_factor_enabled: 'Verifica in due passaggi attivata',
  two_factor_disabled: 'Verifica in due passaggi disattivata',
  passkey_added: 'Passkey aggiunta',
  passkey_removed: 'Passkey rimossa',
  sessions_revoked: 'Sessioni chiuse',
  export: 'Dati esportati',
};

/** Where the account was used in the last 90 days: what, when, from which browser and network. */
function Activity() {
  const list = useLoad(async () => {
    const { authClient, unwrap } = await auth();
    return unwrap(await authClient.$fetch<{ items: ActivityItem[] }>('/activity', { method: 'GET' })).items;
  });
  return (
    <Card id="activity-title" title="Attività dell'account">
      <Loading when={list.loading && !list.data} />
      <LoadError error={list.error} retry={list.reload} />
      <p class="muted">Gli ultimi 90 giorni. Non riconosci qualcosa? Cambia la password e chiudi le altre sessioni.</p>
      <ul class="sessions" data-testid="activity">
        {list.data?.slice(0, 50).map((item) => (
          <li key={`${item.at}-${item.kind}`}>
            <span>
              <span>{ACTIVITY[item.kind] ?? item.kind}</span>
              <br />
              <span class="muted">
                {fmtDateTime(new Date(item.at).getTime())} · {device(item.userAgent)}
                {item.ip ? ` · rete ${item.ip}` : ''}
              </span>
            </span>
          </li>
        ))}
      </ul>
    </Card>
  );
}

/** Once the session is over: this device forgets the account, and the browser goes to sign in. */
async function leaveForSignIn(): Promise<undefined> {
  await forgetDevice();
  location.assign('/sign-in');
  return undefined;
}

function SignOut() {
  const action = useAction();
  const out = () => {
    void action.run(async () => {
      const { authClient, unwrap } = await auth();
      // The device leaves the account first: the server forgets its push endpoint.
      await disablePush().catch(() => undefined);
      unwrap(await authClient.signOut());
      return leaveForSignIn();
    });
  };
  return (
    <Card id="out-title" title="Esci">
      <button type="button" class="secondary" onClick={out} disabled={action.busy}>
        Esci da questo dispositivo
      </button>
      <Notice message={action.message} />
    </Card>
  );
}

function DeleteAccount() {
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState(false);
  const action = useAction();
  const submit = action.submit(async () => {
    const { authClient, unwrap } = await auth();
    unwrap(await authClient.deleteUser({ password }));
    return leaveForSignIn();
  });
  return (
    <form class="card danger" onSubmit={submit} aria-labelledby="del-title">
      <h2 id="del-title">Elimina l'account</h2>
      <p>Cancella per sempre l'account e tutti i dati: digiuni, diario, piani, dispositivi. Non si può annullare.</p>
      <label for="del-password">Password</label>
      <input id="del-password" type="password" autocomplete="current-password" required value={password} onInput={(e) => { setPassword(e.currentTarget.value); }} />
      <label class="check">
        <input type="checkbox" id="del-confirm" required checked={confirm} onChange={(e) => { setConfirm(e.currentTarget.checked); }} />
        Ho capito che i miei dati saranno cancellati
      </label>
      <button type="submit" class="danger" disabled={action.busy || !confirm}>
        Elimina l'account
      </button>
      <Notice message={action.message} />
    </form>
  );
}
