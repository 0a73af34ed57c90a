import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, api, errorText, toSignIn } from '../api/client';
import type { ImportReport, NotificationConfig, NotificationSettings, Preferences, Protocol, User } from '../api/types';
import type { AuthFailure } from '../auth';
import { Card, LoadError, Loading, Notice, PageTitle } from '../components/ui';
import { useAction, useLoad } from '../hooks';
import { PushUnreachable, currentSubscription, disablePush, enablePush, forgetDevice, pushSupported } from '../push';
import { fmtDateTime, parseDecimal } from '../time';
import { locale, lookup, setLocale, t } from '../i18n';
import type { Locale } from '../i18n';
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
      <PageTitle>{t('settings.title')}</PageTitle>
      <Loading when={res.loading && !res.data} />
      <LoadError error={res.error} retry={res.reload} />
      {res.data && (
        <>
          <Language />
          <FastingPrefs prefs={res.data.user.preferences} />
          <BodyPrefs prefs={res.data.user.preferences} />
          <Import />
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
    setStatus({ text: t('settings.saving'), error: false });
    queue.current = queue.current.then(send).then(
      () => {
        setStatus({ text: t('common.saved'), error: false });
      },
      (e: unknown) => {
        revert();
        setStatus({ text: t('settings.notSaved', { reason: errorText(e) }), error: true });
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
    <Card id="prefs-title" title={t('settings.fasting')}>
      <label for="pref-protocol">{t('settings.protocol')}</label>
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
        <option value="">{t('settings.noProtocol')}</option>
        {PROTOCOLS.map((p) => (
          <option key={p} value={p}>
            {t('settings.protocolOption', { protocol: p, count: fastingHours(p) })}
          </option>
        ))}
      </select>
      <AutosaveCheck
        id="pref-milestones"
        initial={prefs.fastingMilestones}
        autosave={autosave}
        send={(on) => api.setPreferences({ fastingMilestones: on })}
      >
        {t('settings.milestones')}
      </AutosaveCheck>
      <Notice message={autosave.status} testId="prefs-status" />
    </Card>
  );
}

function Reminders({ settings }: { settings: NotificationSettings }) {
  const autosave = useAutosave();
  return (
    <Card id="rem-title" title={t('settings.reminders')}>
      <AutosaveCheck
        id="meal-reminders"
        initial={settings.mealReminders}
        autosave={autosave}
        send={(on) => api.setNotificationSettings({ mealReminders: on })}
      >
        {t('settings.mealReminders')}
      </AutosaveCheck>
      <AutosaveCheck
        id="weekly-weigh-in"
        initial={settings.weeklyWeighIn}
        autosave={autosave}
        send={(on) => api.setNotificationSettings({ weeklyWeighIn: on })}
      >
        {t('settings.weighIn')}
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
      return t('settings.push.on');
    });
  };
  return (
    <Card id="push-title" title={t('settings.push.title')}>
      {!config.pushEnabled || !key ? (
        <p>{t('settings.push.serverOff')}</p>
      ) : !supported ? (
        <p>{t('settings.push.unsupported')}</p>
      ) : (
        <>
          <p data-testid="push-state">{subscribed ? t('settings.push.active') : t('settings.push.inactive')}</p>
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
                    return t('settings.push.off');
                  })
                }
              >
                {t('settings.push.turnOff')}
              </button>
              <button
                type="button"
                disabled={action.busy}
                onClick={() =>
                  void action.run(async () => {
                    const r = await api.testPush();
                    return r.sent > 0 ? t('settings.push.testSent', { count: r.sent }) : t('settings.push.testNone');
                  })
                }
              >
                {t('settings.push.test')}
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
              {action.busy ? t('settings.push.turningOn') : t('settings.push.turnOn')}
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
          {t('common.retry')}
        </button>
      )}
    </Card>
  );
}

function Account({ user }: { user: User }) {
  const action = useAction();
  return (
    <Card id="acc-title" title={t('settings.account.title')}>
      <p>
        {user.name} · {user.email}
      </p>
      {user.emailVerified ? (
        <p>{t('settings.account.verified')}</p>
      ) : (
        <>
          <p>{t('settings.account.unverified')}</p>
          <button
            type="button"
            class="secondary"
            disabled={action.busy}
            onClick={() =>
              void action.run(async () => {
                const { authClient, unwrap } = await auth();
                unwrap(await authClient.sendVerificationEmail({ email: user.email, callbackURL: '/settings' }));
                return t('settings.account.sent', { email: user.email });
              })
            }
          >
            {t('settings.account.send')}
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
  if (!ua) return t('settings.device.unknown');
  const browser = /Firefox\//.test(ua) ? 'Firefox' : /Edg\//.test(ua) ? 'Edge' : /Chrom(e|ium)\//.test(ua) ? 'Chrome' : /Safari\//.test(ua) ? 'Safari' : 'Browser';
  const os = /Android/.test(ua) ? 'Android' : /iPhone|iPad/.test(ua) ? 'iOS' : /Mac OS X/.test(ua) ? 'macOS' : /Windows/.test(ua) ? 'Windows' : /Linux/.test(ua) ? 'Linux' : '';
  return os ? t('settings.device.on', { browser, os }) : browser;
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
      return t('settings.sessions.closed');
    });
  };
  const others = () => {
    void action.run(async () => {
      const { authClient, unwrap } = await auth();
      unwrap(await authClient.revokeOtherSessions());
      list.reload();
      return t('settings.sessions.othersClosed');
    });
  };
  return (
    <Card id="sess-title" title={t('settings.sessions.title')}>
      <Loading when={list.loading && !list.data} />
      <LoadError error={list.error} retry={list.reload} />
      <ul class="sessions">
        {list.data?.map((s) => (
          <li key={s.id}>
            <span>
              {device(s.userAgent)}
              {s.current ? ` · ${t('settings.sessions.thisDevice')}` : ''}
              <br />
              <span class="muted">{t('settings.sessions.since', { time: fmtDateTime(new Date(s.createdAt).getTime()) })}</span>
            </span>
            {!s.current && (
              <button type="button" class="secondary" onClick={() => { revoke(s); }} disabled={action.busy}>
                {t('settings.sessions.close')}<span class="sr-only"> {t('settings.sessions.closeWhich', { device: device(s.userAgent) })}</span>
              </button>
            )}
          </li>
        ))}
      </ul>
      {list.data && list.data.length > 1 && (
        <button type="button" class="secondary" onClick={others} disabled={action.busy}>
          {t('settings.sessions.closeOthers')}
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
    return t('settings.password.changed');
  });
  return (
    <form class="card" onSubmit={submit} aria-labelledby="pw-title">
      <h2 id="pw-title">{t('settings.password.title')}</h2>
      <label for="pw-current">{t('settings.password.current')}</label>
      <input id="pw-current" type="password" autocomplete="current-password" required value={current} onInput={(e) => { setCurrent(e.currentTarget.value); }} />
      <label for="pw-new">{t('settings.password.new')}</label>
      <input id="pw-new" type="password" autocomplete="new-password" required minLength={8} maxLength={128} value={next} onInput={(e) => { setNext(e.currentTarget.value); }} />
      <label class="check">
        <input type="checkbox" checked={revokeOthers} onChange={(e) => { setRevokeOthers(e.currentTarget.checked); }} />
        {t('settings.password.signOutOthers')}
      </label>
      <button type="submit" disabled={action.busy}>
        {t('settings.password.change')}
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
    <svg class="qr" viewBox={`0 0 ${matrix.length} ${matrix.length}`} role="img" aria-label={t('settings.tfa.qr')} shape-rendering="crispEdges">
      <rect width="100%" height="100%" fill="#fff" />
      <path d={path} fill="#000" />
    </svg>
  );
}

/** Backup codes, shown once, with a way to keep them. */
function BackupCodes({ codes }: { codes: string[] }) {
  return (
    <>
      <p>{t('settings.tfa.backupIntro')}</p>
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
    if (started.method !== 'totp') throw new Error(t('settings.tfa.noKey'));
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
    return t('settings.tfa.enabled');
  });
  const renew = () => {
    void action.run(async () => {
      const { authClient, unwrap } = await auth();
      setCodes(unwrap(await authClient.twoFactor.generateBackupCodes({ password })).backupCodes);
      setPassword('');
      return t('settings.tfa.newCodes');
    });
  };
  const disable = () => {
    void action.run(async () => {
      const { authClient, unwrap } = await auth();
      unwrap(await authClient.twoFactor.disable({ password }));
      setOn(false);
      setCodes(null);
      setPassword('');
      return t('settings.tfa.disabled');
    });
  };
  const secret = setup ? (new URL(setup.uri).searchParams.get('secret') ?? '') : '';
  return (
    <Card id="tfa-title" title={t('settings.tfa.title')}>
      {setup ? (
        <form onSubmit={confirm} class="stack">
          <p>{t('settings.tfa.scan')}</p>
          <QrCode text={setup.uri} />
          <p class="muted">
            {t('settings.tfa.manual')} <code data-testid="totp-secret">{secret}</code>
          </p>
          <label for="tfa-code">{t('settings.tfa.code')}</label>
          <input id="tfa-code" inputMode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxLength={6} required value={code} onInput={(e) => { setCode(e.currentTarget.value); }} />
          <button type="submit" disabled={action.busy}>
            {t('settings.tfa.enable')}
          </button>
        </form>
      ) : (
        <>
          <p>{on ? t('settings.tfa.onText') : t('settings.tfa.offText')}</p>
          <label for="tfa-password">{t('settings.password.title')}</label>
          <input id="tfa-password" type="password" autocomplete="current-password" value={password} onInput={(e) => { setPassword(e.currentTarget.value); }} />
          {on ? (
            <div class="row">
              <button type="button" class="secondary" disabled={action.busy || !password} onClick={renew}>
                {t('settings.tfa.renew')}
              </button>
              <button type="button" class="secondary" disabled={action.busy || !password} onClick={disable}>
                {t('settings.push.turnOff')}
              </button>
            </div>
          ) : (
            <form onSubmit={begin}>
              <button type="submit" disabled={action.busy || !password}>
                {t('settings.tfa.setUp')}
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
      throw e instanceof SessionNotFresh ? new Error(t('settings.fresh.failed')) : e;
    }
  });
  const prompt = pending && (
    <form onSubmit={confirm} aria-labelledby={`${texts.id}-confirm`}>
      <p id={`${texts.id}-confirm`}>{texts.why}</p>
      <label for={`${texts.id}-password`}>{t('settings.password.title')}</label>
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
    why: t('settings.passkeys.why'),
    confirm: t('settings.passkeys.confirm'),
    otherwise: t('settings.passkeys.otherwise'),
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
      return t('settings.passkeys.added');
    });
  };
  const rename = (p: PasskeyRow) =>
    action.submit(async () => {
      const { authClient, unwrap } = await auth();
      unwrap(await authClient.passkey.updatePasskey({ id: p.id, name }));
      setEditing(null);
      list.reload();
      return t('settings.passkeys.renamed');
    });
  const remove = (p: PasskeyRow) => {
    void action.run(async () => {
      const { authClient, unwrap } = await auth();
      unwrap(await authClient.passkey.deletePasskey({ id: p.id }));
      list.reload();
      return t('settings.passkeys.removed');
    });
  };
  return (
    <section class="card" aria-labelledby="passkey-title" data-testid="passkeys">
      <h2 id="passkey-title">{t('settings.passkeys.title')}</h2>
      <p>{t('settings.passkeys.intro')}</p>
      <Loading when={list.loading && !list.data} />
      <LoadError error={list.error} retry={list.reload} />
      {list.data?.length === 0 && <p class="muted">{t('settings.passkeys.none')}</p>}
      <ul class="sessions">
        {list.data?.map((p) => {
          const label = p.name ?? t('settings.passkeys.unnamed');
          return editing === p.id ? (
            <li key={p.id}>
              <form onSubmit={rename(p)} class="stack">
                <label for="passkey-name">{t('settings.passkeys.newName')}</label>
                <input id="passkey-name" required maxLength={100} value={name} onInput={(e) => { setName(e.currentTarget.value); }} />
                <div class="row">
                  <button type="submit" disabled={action.busy}>
                    {t('common.save')}
                  </button>
                  <button type="button" class="secondary" onClick={() => { setEditing(null); }}>
                    {t('common.cancel')}
                  </button>
                </div>
              </form>
            </li>
          ) : (
            <li key={p.id}>
              <span>
                <span>{label}</span>
                <br />
                <span class="muted">{t('settings.passkeys.addedAt', { time: fmtDateTime(new Date(p.createdAt).getTime()) })}</span>
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
                  {t('settings.passkeys.rename')}<span class="sr-only"> {t('settings.passkeys.which', { label })}</span>
                </button>
                <button type="button" class="secondary" disabled={action.busy} onClick={() => { remove(p); }}>
                  {t('common.delete')}<span class="sr-only"> {t('settings.passkeys.which', { label })}</span>
                </button>
              </span>
            </li>
          );
        })}
      </ul>
      {supported ? (
        <button type="button" class="primary" disabled={action.busy} onClick={add}>
          {t('settings.passkeys.add')}
        </button>
      ) : (
        <p>{t('settings.passkeys.unsupported')}</p>
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
    throw new ApiError(0, 'OFFLINE', t('errors.OFFLINE'));
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
    why: t('settings.data.why'),
    confirm: t('settings.data.confirm'),
    otherwise: t('settings.data.otherwise'),
  });
  const download = (format: ExportFormat) => {
    fresh.run(async () => {
      await downloadExport(format);
      return t('settings.data.started');
    });
  };
  return (
    <Card id="data-title" title={t('settings.data.title')}>
      <p>{t('settings.data.intro')}</p>
      <div class="row">
        <button type="button" class="secondary" onClick={() => { download('json'); }} disabled={action.busy} data-testid="export-json">
          {t('settings.data.json')}
        </button>
        <button type="button" class="secondary" onClick={() => { download('csv'); }} disabled={action.busy}>
          {t('settings.data.csv')}
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


/** Where the account was used in the last 90 days: what, when, from which browser and network. */
function Activity() {
  const list = useLoad(async () => {
    const { authClient, unwrap } = await auth();
    return unwrap(await authClient.$fetch<{ items: ActivityItem[] }>('/activity', { method: 'GET' })).items;
  });
  return (
    <Card id="activity-title" title={t('settings.activity.title')}>
      <Loading when={list.loading && !list.data} />
      <LoadError error={list.error} retry={list.reload} />
      <p class="muted">{t('settings.activity.intro')}</p>
      <ul class="sessions" data-testid="activity">
        {list.data?.slice(0, 50).map((item) => (
          <li key={`${item.at}-${item.kind}`}>
            <span>
              <span>{t(`settings.activity.kinds.${item.kind}`, { defaultValue: item.kind })}</span>
              <br />
              <span class="muted">
                {fmtDateTime(new Date(item.at).getTime())} · {device(item.userAgent)}
                {item.ip ? ` · ${t('settings.activity.network', { ip: item.ip })}` : ''}
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
    <Card id="out-title" title={t('settings.signOut.title')}>
      <button type="button" class="secondary" onClick={out} disabled={action.busy}>
        {t('settings.signOut.button')}
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
      <h2 id="del-title">{t('settings.delete.title')}</h2>
      <p>{t('settings.delete.text')}</p>
      <label for="del-password">{t('settings.password.title')}</label>
      <input id="del-password" type="password" autocomplete="current-password" required value={password} onInput={(e) => { setPassword(e.currentTarget.value); }} />
      <label class="check">
        <input type="checkbox" id="del-confirm" required checked={confirm} onChange={(e) => { setConfirm(e.currentTarget.checked); }} />
        {t('settings.delete.confirm')}
      </label>
      <button type="submit" class="danger" disabled={action.busy || !confirm}>
        {t('settings.delete.title')}
      </button>
      <Notice message={action.message} />
    </form>
  );
}

/** The app's language, saved as the account's and applied at once. */
function Language() {
  const [value, setValue] = useState<Locale>(locale());
  const autosave = useAutosave();
  return (
    <Card id="lang-title" title={t('settings.language.title')}>
      <label for="pref-locale">{t('settings.language.label')}</label>
      <select
        id="pref-locale"
        lang={value}
        value={value}
        onChange={(e) => {
          const next: Locale = e.currentTarget.value === 'en' ? 'en' : 'it';
          const before = value;
          setValue(next);
          setLocale(next);
          autosave.save(
            () => api.setPreferences({ locale: next }),
            () => {
              setValue(before);
              setLocale(before);
            },
          );
        }}
      >
        <option value="it" lang="it">
          Italiano
        </option>
        <option value="en" lang="en">
          English
        </option>
      </select>
      <Notice message={autosave.status} testId="locale-status" />
    </Card>
  );
}

/** A number field saved when it is left, when its value is valid; else the card says why. */
function NumberPref(props: {
  id: string;
  label: string;
  initial: number | null;
  decimals: boolean;
  min: number;
  max: number;
  optional: boolean;
  invalid: string;
  autosave: ReturnType<typeof useAutosave>;
  send: (v: number | null) => Promise<unknown>;
}) {
  const show = (v: number | null) => (v === null ? '' : props.decimals ? String(v).replace('.', locale() === 'it' ? ',' : '.') : String(v));
  const [text, setText] = useState(show(props.initial));
  const [saved, setSaved] = useState(props.initial);
  const commit = () => {
    const raw = text.trim();
    const v = raw === '' ? null : parseDecimal(raw);
    if (v === saved) return;
    const ok = v === null ? props.optional : !Number.isNaN(v) && v >= props.min && v <= props.max && (props.decimals ? Math.round(v * 10) === v * 10 : Number.isInteger(v));
    if (!ok) {
      props.autosave.save(
        () => Promise.reject(new Error(props.invalid)),
        () => {
          setText(show(saved));
        },
      );
      return;
    }
    const before = saved;
    setSaved(v);
    props.autosave.save(
      () => props.send(v),
      () => {
        setSaved(before);
        setText(show(before));
      },
    );
  };
  return (
    <>
      <label for={props.id}>{props.label}</label>
      <input
        id={props.id}
        type="text"
        inputMode={props.decimals ? 'decimal' : 'numeric'}
        autocomplete="off"
        value={text}
        onInput={(e) => {
          setText(e.currentTarget.value);
        }}
        onChange={commit}
      />
    </>
  );
}

function BodyPrefs({ prefs }: { prefs: Preferences }) {
  const autosave = useAutosave();
  return (
    <Card id="body-prefs-title" title={t('settings.body.title')}>
      <NumberPref
        id="pref-goal"
        label={t('weight.goalKg')}
        initial={prefs.weightGoalKg}
        decimals
        min={20}
        max={400}
        optional
        invalid={t('weight.errors.goal')}
        autosave={autosave}
        send={(v) => api.setPreferences({ weightGoalKg: v })}
      />
      <NumberPref
        id="pref-height"
        label={t('weight.heightCm')}
        initial={prefs.heightCm}
        decimals={false}
        min={100}
        max={250}
        optional
        invalid={t('weight.errors.height')}
        autosave={autosave}
        send={(v) => api.setPreferences({ heightCm: v })}
      />
      <NumberPref
        id="pref-water"
        label={t('settings.body.waterGoal')}
        initial={prefs.waterGoalMl}
        decimals={false}
        min={500}
        max={6000}
        optional={false}
        invalid={t('settings.body.waterInvalid')}
        autosave={autosave}
        send={(v) => api.setPreferences({ waterGoalMl: v })}
      />
      <Notice message={autosave.status} testId="body-status" />
    </Card>
  );
}

/** Import of fasts from Zero's export or this app's own CSV, with what was skipped and why. */
function Import() {
  const [file, setFile] = useState<File | null>(null);
  const [report, setReport] = useState<ImportReport | null>(null);
  const action = useAction();
  const submit = action.submit(async () => {
    if (!file) throw new Error(t('settings.import.noFile'));
    if (file.size > 1024 * 1024) throw new Error(t('errors.PAYLOAD_TOO_LARGE'));
    setReport(null);
    let r: ImportReport;
    try {
      r = await api.importFasts(await file.text());
    } catch (e) {
      // The server names the two ways a whole file is refused only in its message.
      if (e instanceof ApiError && e.code === 'VALIDATION_ERROR') throw new Error(t(/rows/.test(e.message) ? 'settings.import.tooMany' : 'settings.import.unknownFormat'), { cause: e });
      throw e;
    }
    setReport(r);
    return undefined;
  });
  return (
    <form class="card" onSubmit={submit} aria-labelledby="import-title" data-testid="import">
      <h2 id="import-title">{t('settings.import.title')}</h2>
      <p>{t('settings.import.intro')}</p>
      <label for="import-file">{t('settings.import.file')}</label>
      <input
        id="import-file"
        type="file"
        accept=".csv,text/csv"
        onChange={(e) => {
          setFile(e.currentTarget.files?.[0] ?? null);
          setReport(null);
        }}
      />
      <button type="submit" class="primary" disabled={action.busy || !file}>
        {action.busy ? t('settings.import.busy') : t('settings.import.button')}
      </button>
      <Notice message={action.message} />
      {report && (
        <div role="status" data-testid="import-report">
          <p>
            <strong>{t('settings.import.imported', { count: report.imported })}</strong>
            {report.skipped.length > 0 ? ` ${t('settings.import.skipped', { count: report.skipped.length })}` : ''}
          </p>
          {report.skipped.length > 0 && (
            <ul>
              {report.skipped.slice(0, 100).map((s) => (
                <li key={s.line}>{t('settings.import.line', { line: s.line, reason: lookup('settings.import.reasons', s.reason) ?? s.reason })}</li>
              ))}
            </ul>
          )}
          {report.skipped.length > 100 && <p class="muted">{t('settings.import.more', { count: report.skipped.length - 100 })}</p>}
        </div>
      )}
    </form>
  );
}
