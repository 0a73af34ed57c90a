// Promises of the product to the person using it (CONTRACT sections 9 and 11), each checked in a
// real Chromium through nginx on the real stack. The Rust tests in tests/web.rs start one stack per
// case and pass BASE and CASE (one of the names in CASES below); the script prints
// `case <name>: passed` or exits non-zero on the first failed step.
import { chromium } from 'playwright-core';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHROMIUM, PHONE, runningFastShowsOffline, signUp as signUpAs, step, submitSignIn } from './browser.mjs';
import { BASE, controlled, json, newPage, runCase, watch } from './one-case.mjs';

/** Browsers of their own (persistent profiles), closed whatever the outcome. */
const closers = [];

let people = 0;
async function signUp(page, name = 'Anna Prova') {
  const email = `persona${++people}.${Date.now()}@example.com`;
  await signUpAs(page, { name, email });
  await page.getByRole('heading', { level: 1, name: 'Oggi' }).waitFor();
  return email;
}

/** What the service worker keeps, to say why an offline page showed what it showed. */
const keptAnswers = (page) =>
  page.evaluate(async () => {
    const out = [];
    for (const name of await caches.keys()) {
      if (!name.startsWith('data-')) continue;
      const cache = await caches.open(name);
      for (const key of await cache.keys()) out.push(`${name} ${new URL(key.url).pathname}${new URL(key.url).search} ${(await cache.match(key))?.status}`);
    }
    return JSON.stringify(out);
  });

const CASES = {
  /** Turning push on answers within 15 s even where no push service can be reached. */
  async 'push-unreachable'() {
    // A profile on disk, as people have: an incognito context refuses push at once, while a real
    // profile asks the browser's push service, which a test machine cannot reach.
    const dir = await mkdtemp(join(tmpdir(), 'push-profile-'));
    const context = await chromium.launchPersistentContext(dir, {
      executablePath: CHROMIUM,
      args: ['--no-sandbox'],
      ...PHONE,
    });
    closers.push(async () => {
      await context.close();
      await rm(dir, { recursive: true, force: true });
    });
    const page = context.pages()[0] ?? (await context.newPage());
    watch(page);
    await signUp(page);
    await context.grantPermissions(['notifications'], { origin: BASE });
    await page.goto(`${BASE}/settings`);
    const on = page.getByRole('button', { name: 'Attiva le notifiche' });
    await on.click();
    step('an answer within 15 s: subscribed, refused, or no push service with a retry');
    const started = Date.now();
    const answer = page.getByText(/Notifiche attivate su questo dispositivo|nessun servizio di notifiche raggiungibile|negato dal browser/);
    await answer.waitFor({ timeout: 20_000 });
    const took = Date.now() - started;
    assert.ok(took <= 16_000, `answered after ${took} ms`);
    const text = await answer.textContent();
    console.log(`  answer after ${took} ms: ${text}`);
    if (/nessun servizio/.test(text)) {
      const retry = page.getByRole('button', { name: 'Riprova' });
      await retry.waitFor();
      assert.ok(await retry.isEnabled(), 'the retry button can be pressed');
    }
    step('no control stays disabled');
    assert.deepEqual(await page.locator('#push-title').locator('..').locator('button:disabled').count(), 0);
  },

  /** Offline shows the last state, never a stale one, and nothing personal of another person. */
  async offline() {
    const { context, page } = await newPage();
    await signUp(page);
    await controlled(page);
    step('start a fast and end it online, without a reload');
    await page.getByRole('button', { name: 'Inizia il digiuno' }).click();
    await page.locator('#timer-title').waitFor();
    await page.reload();
    await page.locator('#timer-title').waitFor();
    await page.getByRole('button', { name: 'Termina il digiuno' }).click();
    await page.getByRole('button', { name: 'Inizia il digiuno' }).waitFor();
    step('offline, / shows no running fast');
    await context.setOffline(true);
    await page.reload();
    await page
      .getByRole('heading', { name: 'Nessun digiuno in corso' })
      .waitFor()
      .catch(async (e) => {
        console.log(`  kept answers: ${await keptAnswers(page)}`);
        throw e;
      });
    assert.equal(await page.locator('#timer-title').count(), 0, 'the ended fast is not shown as running');
    step('started again online, offline shows it running');
    await context.setOffline(false);
    await page.reload();
    await page.getByRole('button', { name: 'Inizia il digiuno' }).click();
    await page.locator('#timer-title').waitFor();
    await runningFastShowsOffline(page);

    step('another person signing in on this browser never sees the first one’s cached data');
    await page.goto(`${BASE}/stats`);
    await page.getByTestId('sessions').waitFor();
    await context.clearCookies();
    await signUp(page, 'Bruno Altro');
    await context.setOffline(true);
    await page.goto(`${BASE}/stats`).catch(() => {});
    await page.getByRole('heading', { level: 1, name: 'Statistiche' }).waitFor();
    await page.getByRole('alert').waitFor();
    assert.equal(await page.getByTestId('sessions').count(), 0, 'no statistics of the first person');
    await context.setOffline(false);

    step('after sign-out, offline shows nothing personal');
    await page.goto(`${BASE}/`);
    await page.getByRole('heading', { name: 'Nessun digiuno in corso' }).waitFor();
    await page.goto(`${BASE}/settings`);
    await page.getByRole('button', { name: 'Esci da questo dispositivo' }).click();
    await page.waitForURL(/\/sign-in/);
    await context.setOffline(true);
    await page.goto(`${BASE}/`).catch(() => {});
    await page.getByRole('heading', { level: 1, name: 'Oggi' }).waitFor();
    await page.getByRole('alert').waitFor();
    assert.equal(await page.getByRole('heading', { name: 'Nessun digiuno in corso' }).count(), 0);
    assert.equal(await page.getByRole('heading', { name: 'Giorno libero' }).count(), 0);
    await context.setOffline(false);
  },

  /** A note typed when the session ends is kept and offered again after signing in. */
  async 'lost-session'() {
    const { page } = await newPage();
    const email = await signUp(page);
    await page.getByRole('button', { name: 'Inizia il digiuno' }).click();
    await page.locator('#timer-title').waitFor();
    await page.getByLabel('Nota').fill('Nota scritta prima della fine della sessione');
    await page.getByLabel('Mal di testa').check();
    step('another device closes every session of the account');
    const other = await newPage();
    await other.page.goto(`${BASE}/sign-in`);
    await submitSignIn(other.page, email);
    await other.page.waitForURL(`${BASE}/`);
    const revoked = await other.page.evaluate(async () => (await fetch('/api/auth/revoke-sessions', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' })).status);
    assert.equal(revoked, 200);
    await other.context.close();
    step('saving lands on sign-in; after it the note is there with a line saying why');
    await page.getByRole('button', { name: 'Salva diario' }).click();
    await page.waitForURL(/\/sign-in/);
    await submitSignIn(page, email);
    await page.waitForURL(`${BASE}/`);
    await page.getByText('La sessione è scaduta: abbiamo conservato la nota che stavi scrivendo.').waitFor();
    assert.equal(await page.getByLabel('Nota').inputValue(), 'Nota scritta prima della fine della sessione');
    assert.ok(await page.getByLabel('Mal di testa').isChecked());
    await page.getByRole('button', { name: 'Salva diario' }).click();
    await page.getByText('Diario salvato.').waitFor();
    const current = await json(page, '/me/fast-events/current');
    assert.equal(current.body.symptoms.note, 'Nota scritta prima della fine della sessione');

    step('another person on this browser never sees it');
    await page.getByLabel('Nota').fill('Una seconda nota, mai salvata');
    await page.context().clearCookies();
    await page.getByRole('button', { name: 'Salva diario' }).click();
    await page.waitForURL(/\/sign-in/);
    await signUp(page, 'Carla Altra');
    await page.getByRole('button', { name: 'Inizia il digiuno' }).click();
    await page.locator('#timer-title').waitFor();
    assert.equal(await page.getByLabel('Nota').inputValue(), '');
    assert.equal(await page.getByText('La sessione è scaduta').count(), 0);
  },

  /** Ending a fast can be undone for 10 s. */
  async 'undo-end'() {
    const { page } = await newPage();
    await signUp(page);
    await page.getByRole('button', { name: 'Inizia il digiuno' }).click();
    await page.locator('#timer-title').waitFor();
    const id = (await json(page, '/me/fast-events/current')).body.id;
    await page.getByRole('button', { name: 'Termina il digiuno' }).click();
    await page.getByText('Digiuno terminato', { exact: false }).first().waitFor();
    await page.getByRole('button', { name: 'Annulla' }).click();
    await page.locator('#timer-title').waitFor();
    const current = await json(page, '/me/fast-events/current');
    assert.equal(current.body.id, id, 'the same fast runs again');
    assert.equal(current.body.status, 'IN_PROGRESS');
    step('ended again, the undo goes away after 10 s');
    await page.getByRole('button', { name: 'Termina il digiuno' }).click();
    await page.getByRole('button', { name: 'Annulla' }).waitFor();
    await page.getByRole('button', { name: 'Annulla' }).waitFor({ state: 'detached', timeout: 12_000 });
    assert.equal((await json(page, '/me/fast-events/current')).status, 404);
  },

  /** The dinner that starts a fast says so, and un-consuming it removes that fast. */
  async 'dinner-undo'() {
    const { page } = await newPage();
    await signUp(page);
    await json(page, '/me/preferences', 'PATCH', { fastingProtocol: '16:8' });
    await page.getByRole('link', { name: 'Piano' }).click();
    await page.getByRole('button', { name: 'Crea il piano di oggi' }).click();
    const dinner = page.locator('li.slot[data-category=CENA]');
    await dinner.getByRole('button', { name: /Segna come consumato/ }).click();
    await page.getByText(/Il digiuno è iniziato:/).waitFor();
    await page.getByTestId('running-fast').waitFor();
    await dinner.getByRole('button', { name: /Annulla/ }).click();
    await page.getByText('Digiuno annullato', { exact: false }).waitFor();
    await page.getByTestId('running-fast').waitFor({ state: 'detached' });
    assert.equal((await json(page, '/me/fast-events/current')).status, 404);
  },

  /** Settings save as they are changed; no separate save to forget. */
  async 'settings-autosave'() {
    const { page } = await newPage();
    await signUp(page);
    await page.goto(`${BASE}/settings`);
    await page.selectOption('#pref-protocol', '18:6');
    await page.getByText('Salvato', { exact: false }).first().waitFor();
    await page.getByLabel(/Notifiche delle tappe/).check();
    await page.getByLabel(/Promemoria dei pasti/).check();
    await page.getByLabel(/Pesata settimanale/).uncheck();
    await page.waitForFunction(async () => {
      const [p, n] = await Promise.all([fetch('/me/preferences').then((r) => r.json()), fetch('/me/notifications/settings').then((r) => r.json())]);
      return p.fastingProtocol === '18:6' && p.fastingMilestones && n.mealReminders && !n.weeklyWeighIn;
    });
    assert.equal(await page.getByRole('button', { name: /^Salva/ }).count(), 0, 'no separate save button');
    step('a reload shows what was saved');
    await page.reload();
    await page.locator('#pref-protocol').waitFor();
    assert.equal(await page.locator('#pref-protocol').inputValue(), '18:6');
    assert.ok(await page.getByLabel(/Promemoria dei pasti/).isChecked());
    assert.ok(!(await page.getByLabel(/Pesata settimanale/).isChecked()));
  },

  /** The skip link moves the focus to the page's content. */
  async 'skip-link'() {
    const { page } = await newPage();
    await signUp(page);
    for (const path of ['/', '/plan']) {
      await page.goto(`${BASE}${path}`);
      await page.getByRole('heading', { level: 1 }).waitFor();
      await page.keyboard.press('Tab');
      assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Vai al contenuto');
      await page.keyboard.press('Enter');
      await page.waitForFunction(() => document.activeElement?.id === 'main');
      assert.equal(new URL(page.url()).pathname, path);
    }
  },

  /** Nothing is wider than a 320 px screen. */
  async narrow() {
    const { page } = await newPage({ viewport: { width: 320, height: 640 } });
    await signUp(page);
    await json(page, '/me/fast-events', 'POST', { protocol: '16:8', startedAt: new Date(Date.now() - 3_600_000).toISOString() });
    await json(page, '/me/weights', 'POST', { kg: 80.4, note: 'una nota abbastanza lunga da andare a capo su uno schermo stretto' });
    await json(page, '/me/preferences', 'PATCH', { weightGoalKg: 75, heightCm: 180 });
    await json(page, '/me/water', 'POST', { ml: 250 });
    const wide = [];
    for (const path of ['/', '/plan', '/history', '/stats', '/settings', '/weight', '/non-esiste']) {
      await page.goto(`${BASE}${path}`);
      await page.getByRole('heading', { level: 1 }).waitFor();
      await page.waitForLoadState('networkidle');
      const w = await page.evaluate(() => document.documentElement.scrollWidth);
      if (process.env.SHOTS) await page.screenshot({ path: `${process.env.SHOTS}/narrow${path.replace(/\//g, '-')}.png` });
      console.log(`  ${path}: ${w} px`);
      // Fixed bars do not widen the page but can still be cut off: every box and every text must fit.
      const cut = await page.evaluate(() =>
        [...document.querySelectorAll('body *')]
          .filter((el) => el.closest('.sr-only') === null && getComputedStyle(el).visibility !== 'hidden')
          .flatMap((el) => [...el.childNodes].filter((n) => n.nodeType === Node.TEXT_NODE && n.textContent.trim()))
          .filter((n) => {
            const r = document.createRange();
            r.selectNodeContents(n);
            const box = r.getBoundingClientRect();
            const parent = n.parentElement.getBoundingClientRect();
            return box.width > 0 && (box.right > 320.5 || box.left < -0.5 || box.right > parent.right + 0.5 || box.left < parent.left - 0.5);
          })
          .filter((n) => !n.parentElement.closest('.skip'))
          .map((n) => `"${n.textContent.trim().slice(0, 40)}"`),
      );
      if (cut.length) wide.push(`${path}: text cut off or spilling out of its box: ${cut.join(', ')}`);
      if (w > 320) {
        // What sticks out, to say where to look.
        const out = await page.evaluate(() =>
          [...document.querySelectorAll('body *')]
            .filter((el) => el.getBoundingClientRect().right > 320.5)
            .slice(0, 8)
            .map((el) => `${el.tagName.toLowerCase()}.${el.className} ${Math.round(el.getBoundingClientRect().right)}`)
            .concat(
              [...document.querySelectorAll('body *')].flatMap((el) =>
                [...el.childNodes]
                  .filter((n) => n.nodeType === Node.TEXT_NODE && n.textContent.trim())
                  .filter((n) => {
                    const r = document.createRange();
                    r.selectNodeContents(n);
                    return r.getBoundingClientRect().right > 320.5;
                  })
                  .map((n) => `"${n.textContent.trim().slice(0, 40)}"`),
              ),
            ),
        );
        wide.push(`${path}: ${w} px (${out.join(', ')})`);
      }
    }
    assert.deepEqual(wide, [], 'pages wider than 320 px');
  },

  /** Charts without data say so in a sentence. */
  async 'empty-charts'() {
    const { page } = await newPage();
    await signUp(page);
    await page.goto(`${BASE}/stats`);
    await page.getByText('Ancora nessun digiuno concluso', { exact: false }).first().waitFor();
    assert.ok(await page.getByText('Ancora nessun digiuno concluso', { exact: false }).first().isVisible());
  },

  /** Numbers are written the Italian way: 1,5 not 1.5. */
  async 'decimal-comma'() {
    const { page } = await newPage();
    await signUp(page);
    const started = await json(page, '/me/fast-events', 'POST', { protocol: '16:8', startedAt: new Date(Date.now() - 90 * 60_000).toISOString() });
    await json(page, `/me/fast-events/${started.body.id}/end`, 'POST', {});
    await page.goto(`${BASE}/stats`);
    const weekly = (await page.getByTestId('weekly-hours').textContent()).trim();
    assert.match(weekly, /^\d+,\d$/, `weekly hours "${weekly}"`);
    const labels = await page.locator('.chart text.value').allTextContents();
    assert.ok(labels.some((l) => /,/.test(l)), `chart values ${JSON.stringify(labels)}`);
    assert.ok(!labels.some((l) => /\d\.\d/.test(l)), `chart values ${JSON.stringify(labels)}`);
  },

  /** /weight is a page of the app, never the not-found page. */
  async weight() {
    const { page } = await newPage();
    await signUp(page);
    await page.goto(`${BASE}/weight`);
    await page.getByRole('heading', { level: 1, name: 'Peso' }).waitFor();
    assert.equal(await page.getByText('Pagina non trovata').count(), 0);
    await page.getByRole('heading', { name: 'Registra il peso' }).waitFor();
    await page.getByRole('link', { name: 'Oggi' }).click();
    await page.waitForURL(`${BASE}/`);
  },
};

await runCase('case', CASES, closers);
