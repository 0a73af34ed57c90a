import { api } from './api/client';
import { t } from './i18n';

function keyBytes(base64url: string): Uint8Array<ArrayBuffer> {
  const b64 = base64url.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (base64url.length % 4)) % 4);
  const raw = atob(b64);
  const out = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
  return out;
}

function b64url(buf: ArrayBuffer | null): string {
  if (!buf) return '';
  let s = '';
  for (const b of new Uint8Array(buf)) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

export const pushSupported = () => 'serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window;

export async function currentSubscription(): Promise<PushSubscription | null> {
  if (!pushSupported()) return null;
  const reg = await navigator.serviceWorker.ready;
  return reg.pushManager.getSubscription();
}

/** The browser's push service could not be reached (or did not answer in time). */
export class PushUnreachable extends Error {
  constructor(options?: ErrorOptions) {
    super(t('push.unreachable'), options);
  }
}

/**
 * How long the browser's push service may take. A browser whose push service is unreachable
 * (blocked network, no vendor service) may never settle `subscribe()`; the person gets an answer
 * well within 15 s of the click, registering the device included.
 */
const SUBSCRIBE_TIMEOUT_MS = 12_000;

function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new PushUnreachable());
    }, ms);
    promise.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

/** Asks for permission, subscribes with the server's VAPID key and registers this device. */
export async function enablePush(vapidPublicKey: string): Promise<PushSubscription> {
  const permission = await Notification.requestPermission();
  if (permission !== 'granted') throw new Error(t('push.denied'));
  let sub: PushSubscription;
  try {
    sub = await within(
      (async () => {
        const reg = await navigator.serviceWorker.ready;
        const existing = await reg.pushManager.getSubscription();
        return existing ?? (await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(vapidPublicKey) }));
      })(),
      SUBSCRIBE_TIMEOUT_MS,
    );
  } catch (e) {
    // A refusal that came with the subscription (permission withdrawn meanwhile) is the browser's.
    if (e instanceof DOMException && e.name === 'NotAllowedError') throw new Error(t('push.denied'), { cause: e });
    throw new PushUnreachable({ cause: e });
  }
  await api.registerDevice(sub.endpoint, b64url(sub.getKey('p256dh')), b64url(sub.getKey('auth')));
  return sub;
}

export async function disablePush(): Promise<void> {
  const sub = await currentSubscription();
  if (!sub) return;
  await api.removeDevice(sub.endpoint);
  await sub.unsubscribe();
}

/** Forgets this device locally (after sign-out or deletion, when the server no longer knows the user). */
export async function forgetDevice(): Promise<void> {
  try {
    const sub = await currentSubscription();
    await sub?.unsubscribe();
  } catch {
    // Nothing to undo when push was never set up.
  }
  if ('caches' in window) {
    for (const name of await caches.keys()) {
      if (name.startsWith('data-')) await caches.delete(name);
    }
  }
}
