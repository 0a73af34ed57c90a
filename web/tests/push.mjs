// Web Push in a real Chromium, in two phases over one browser profile (PROFILE), driven by the
// Rust test tests/web.rs:
//   PHASE=register  sign up, turn on meal reminders and push on this device from /settings, send
//                   a test push. Chromium's own push transport (a cloud service) is unreachable
//                   from a test machine, so PushManager hands the app a subscription of the test
//                   kit's push service (FAKE_ENDPOINT, FAKE_P256DH, FAKE_AUTH) instead; everything
//                   from the app's request on is real.
//   PHASE=deliver   PAYLOAD (what the push service decrypted) goes to the service worker through
//                   CDP's ServiceWorker.deliverPushMessage; the notification it shows must carry
//                   the payload's title, body and tag; a click on it opens its url (/plan) in
//                   the open window; a weekly weigh-in's click opens /weight, a page of the app.
//   LANG_CHOSEN=en  the person switches the app to English before turning reminders on.
import { chromium } from 'playwright-core';
import assert from 'node:assert/strict';
import { CHROMIUM, PHONE, signUp, T } from './browser.mjs';

const { BASE, PROFILE, PHASE } = process.env;
assert.ok(BASE && PROFILE && PHASE, 'BASE, PROFILE and PHASE are set');
// LANG_CHOSEN=en: the person switches the app to English first; every push must then be English.
const LANG = process.env.LANG_CHOSEN ?? 'it';
const TEXT = {
  it: {
    reminders: /Promemoria dei pasti/,
    saved: 'Salvato.',
    turnOn: 'Attiva le notifiche',
    on: 'Notifiche attivate su questo dispositivo.',
    test: 'Invia una prova',
    sent: 'Notifica di prova inviata a 1 dispositivo.',
    weight: 'Peso',
  },
  en: {
    reminders: /Meal reminders/,
    saved: 'Saved.',
    turnOn: 'Turn on notifications',
    on: 'Notifications turned on on this device.',
    test: 'Send a test',
    sent: 'Test notification sent to 1 device.',
    weight: 'Weight',
  },
}[LANG];

const context = await chromium.launchPersistentContext(PROFILE, {
  executablePath: CHROMIUM,
  headless: true,
  args: ['--no-sandbox'],
  ...PHONE,
});
await context.grantPermissions(['notifications'], { origin: BASE });
const page = context.pages()[0] ?? (await context.newPage());
page.setDefaultTimeout(T);
const problems = [];
page.on('pageerror', (e) => problems.push(e.message));

async function register() {
  const fake = { endpoint: process.env.FAKE_ENDPOINT, p256dh: process.env.FAKE_P256DH, auth: process.env.FAKE_AUTH };
  await context.addInitScript((f) => {
    const bytes = (s) => {
      const b = atob(s.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (s.length % 4)) % 4));
      return Uint8Array.from(b, (c) => c.charCodeAt(0)).buffer;
    };
    let active = null;
    const make = () => ({
      endpoint: f.endpoint,
      expirationTime: null,
      getKey: (name) => (name === 'p256dh' ? bytes(f.p256dh) : bytes(f.auth)),
      unsubscribe: async () => {
        active = null;
        return true;
      },
      toJSON: () => ({ endpoint: f.endpoint, keys: { p256dh: f.p256dh, auth: f.auth } }),
    });
    PushManager.prototype.subscribe = async function (options) {
      const key = new Uint8Array(options.applicationServerKey);
      window.__applicationServerKey = btoa(String.fromCharCode(...key)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
      active = make();
      return active;
    };
    PushManager.prototype.getSubscription = async function () {
      return active;
    };
  }, fake);

  await signUp(page, { name: 'Paolo Push', email: 'paolo.push@example.com' });

  await page.goto(`${BASE}/settings`);
  if (LANG !== 'it') {
    await page.selectOption('#pref-locale', LANG);
    await page.getByTestId('locale-status').getByText(TEXT.saved).waitFor();
  }
  await page.getByLabel(TEXT.reminders).check();
  await page.getByTestId('reminders-status').getByText(TEXT.saved).waitFor();

  await page.getByRole('button', { name: TEXT.turnOn }).click();
  await page.getByText(TEXT.on).waitFor();
  const config = await page.evaluate(async () => (await fetch('/me/notifications/config')).json());
  assert.equal(config.pushEnabled, true);
  assert.equal(await page.evaluate(() => window.__applicationServerKey), config.vapidPublicKey, 'subscribed with the server VAPID key');

  await page.getByRole('button', { name: TEXT.test }).click();
  await page.getByText(TEXT.sent, { exact: true }).waitFor();
}

async function deliver() {
  const payload = JSON.parse(process.env.PAYLOAD);
  await page.goto(`${BASE}/`);
  await page.evaluate(async () => {
    await navigator.serviceWorker.ready;
  });
  const cdp = await context.newCDPSession(page);
  const registrations = [];
  cdp.on('ServiceWorker.workerRegistrationUpdated', (e) => registrations.push(...e.registrations));
  await cdp.send('ServiceWorker.enable');
  const deadline = Date.now() + T;
  while (!registrations.some((r) => r.scopeURL === `${BASE}/` && !r.isDeleted) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
  }
  const reg = registrations.find((r) => r.scopeURL === `${BASE}/` && !r.isDeleted);
  assert.ok(reg, `a service worker registration for ${BASE}/: ${JSON.stringify(registrations)}`);
  // Chromium drops a notification from getNotifications() for good when the call lands between
  // the notification's storage and its display, so nothing may ask before the worker's own
  // showNotification() has settled. CDP reports neither, hence the observer: it forwards every
  // call unchanged and keeps the outcome where the test can wait for it.
  const worker = context.serviceWorkers().find((w) => w.url().startsWith(BASE)) ?? (await context.waitForEvent('serviceworker'));
  await worker.evaluate(() => {
    const registration = self.registration;
    const show = registration.showNotification.bind(registration);
    self.__shown = [];
    registration.showNotification = (...args) => {
      const outcome = show(...args);
      self.__shown.push(outcome.then(() => 'shown', (e) => `refused: ${e}`));
      return outcome;
    };
  });
  await cdp.send('ServiceWorker.deliverPushMessage', { origin: BASE, registrationId: reg.registrationId, data: process.env.PAYLOAD });
  const outcome = await worker.evaluate(async (timeout) => {
    const deadline = Date.now() + timeout;
    while (!self.__shown.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    return self.__shown.length ? Promise.all(self.__shown) : [];
  }, T);
  assert.deepEqual(outcome, ['shown'], 'the push handler shows one notification');

  const notes = await page.evaluate(async () =>
    (await (await navigator.serviceWorker.ready).getNotifications()).map((n) => ({ title: n.title, body: n.body, tag: n.tag, url: n.data?.url })),
  );
  assert.deepEqual(notes, [{ title: payload.title, body: payload.body, tag: payload.tag, url: payload.url }]);
  console.log(`shown: ${JSON.stringify(notes[0])}`);

  // A click on a system notification cannot be produced through CDP, so the service worker's
  // own listener gets the event it would get: a notificationclick for the notification it showed.
  assert.equal(new URL(payload.url, BASE).pathname, '/plan', 'a lunch reminder opens the plan');
  assert.ok(await page.evaluate(() => navigator.serviceWorker.controller !== null), 'the page is controlled');
  await worker.evaluate(async () => {
    const [shown] = await self.registration.getNotifications();
    self.dispatchEvent(new self.NotificationEvent('notificationclick', { notification: shown }));
  });
  await page.waitForURL(`${BASE}/plan`);
  await page.getByRole('heading', { level: 1 }).waitFor();
  const left = await page.evaluate(async () => (await (await navigator.serviceWorker.ready).getNotifications()).length);
  assert.equal(left, 0, 'the clicked notification is closed');
  console.log(`clicked: ${page.url()}`);

  // The weekly weigh-in leads to /weight, a page of the app (CONTRACT section 9).
  // The weigh-in as push-scheduler words it in the person's language (WEIGH_IN, from its catalogue).
  const weighIn = JSON.parse(process.env.WEIGH_IN);
  assert.equal(weighIn.url, '/weight');
  await worker.evaluate(() => {
    self.__shown = [];
  });
  await cdp.send('ServiceWorker.deliverPushMessage', { origin: BASE, registrationId: reg.registrationId, data: JSON.stringify(weighIn) });
  const second = await worker.evaluate(async (timeout) => {
    const deadline = Date.now() + timeout;
    while (!self.__shown.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    return self.__shown.length ? Promise.all(self.__shown) : [];
  }, T);
  assert.deepEqual(second, ['shown']);
  await worker.evaluate(async () => {
    const [shown] = await self.registration.getNotifications({ tag: 'weekly_weigh_in' });
    self.dispatchEvent(new self.NotificationEvent('notificationclick', { notification: shown }));
  });
  await page.waitForURL(`${BASE}/weight`);
  await page.getByRole('heading', { level: 1, name: TEXT.weight }).waitFor();
  assert.equal(await page.evaluate(() => document.documentElement.lang), LANG);
  console.log(`clicked: ${page.url()}`);
}

try {
  if (PHASE === 'register') await register();
  else await deliver();
  assert.deepEqual(problems, []);
  console.log(`push ${PHASE}: passed`);
} catch (e) {
  console.error(e);
  process.exitCode = 1;
} finally {
  await context.close();
}
