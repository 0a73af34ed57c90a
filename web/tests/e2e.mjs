// A person using the app in a real Chromium, through nginx on the real stack (started by the
// Rust test tests/web.rs, which passes BASE): sign-up, a fast with its diary, ending it with an
// undo, history, stats, settings, a dinner that starts a fast and its undo, the pause, offline
// and back, export, sign-out, deletion. Exits non-zero on the first failed step.
import assert from 'node:assert/strict';
import { phone, runningFastShowsOffline, signUp, step, submitSignIn } from './browser.mjs';

const BASE = process.env.BASE;
assert.ok(BASE, 'BASE is the stack address');

const { browser, context, page } = await phone();
const problems = [];
page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
page.on('console', (m) => {
  if (m.type() === 'error' && !/status of 40[14]/.test(m.text())) problems.push(`console: ${m.text()}`);
});

try {
  step('the app sends a visitor without a session to the sign-in page');
  await page.goto(`${BASE}/`);
  await page.waitForURL(/\/sign-in\?callbackURL=/);

  step('sign up on /sign-up lands on / signed in');
  await signUp(page, { name: 'Giulia Web', email: 'giulia.web@example.com' });
  await page.getByRole('heading', { level: 1, name: 'Oggi' }).waitFor();

  step('start a 16:8 fast; the timer runs');
  await page.selectOption('#protocol', '16:8');
  await page.getByRole('button', { name: 'Inizia il digiuno' }).click();
  const elapsed = page.getByTestId('elapsed');
  await elapsed.waitFor();
  const t0 = await elapsed.textContent();
  await page.waitForFunction((before) => document.querySelector('[data-testid=elapsed]')?.textContent !== before, t0);
  assert.match(await page.locator('#timer-title').textContent(), /16:8 in corso/);
  assert.match(await page.getByTestId('next-milestone').textContent(), /Idratazione \(2 ore\)/);
  await page.getByRole('heading', { name: 'Fase: Digestione' }).waitFor();

  step('the diary is saved on the running fast');
  await page.getByLabel('Mal di testa').check();
  await page.locator('input[name=energy]').fill('7');
  await page.locator('input[name=hunger]').fill('3');
  await page.getByLabel('Nota').fill('Tutto bene, un po’ di fame');
  await page.getByRole('button', { name: 'Salva diario' }).click();
  await page.getByText('Diario salvato.').waitFor();
  const current = await page.evaluate(async () => (await fetch('/me/fast-events/current')).json());
  assert.deepEqual(current.symptoms, { headache: true, energy: 7, hunger: 3, clarity: 5, note: 'Tutto bene, un po’ di fame' });
  assert.equal(current.status, 'IN_PROGRESS');

  step('end the fast, undo it within 10 s: the same fast runs again');
  await page.getByRole('button', { name: 'Termina il digiuno' }).click();
  await page.getByRole('heading', { name: 'Digiuno terminato in anticipo' }).waitFor();
  await page.getByTestId('undo-end').getByRole('button', { name: 'Annulla' }).click();
  await page.locator('#timer-title').waitFor();
  const resumed = await page.evaluate(async () => (await fetch('/me/fast-events/current')).json());
  assert.equal(resumed.id, current.id);
  assert.equal(resumed.status, 'IN_PROGRESS');
  assert.equal(resumed.symptoms.note, 'Tutto bene, un po’ di fame', 'the diary stays with the resumed fast');

  step('end the fast again');
  await page.getByRole('button', { name: 'Termina il digiuno' }).click();
  await page.getByRole('heading', { name: 'Digiuno terminato in anticipo' }).waitFor();
  await page.getByRole('button', { name: 'Inizia il digiuno' }).waitFor();

  step('history shows it with its diary');
  await page.getByRole('link', { name: 'Storico' }).click();
  await page.waitForURL(`${BASE}/history`);
  const item = page.locator('li.fast').first();
  await item.waitFor();
  assert.match(await item.textContent(), /16:8/);
  assert.match(await item.textContent(), /Terminato prima/);
  assert.match(await item.locator('.diary-summary').textContent(), /Mal di testa · Energia 7\/10 · Fame 3\/10/);

  step('stats count the ended fast');
  await page.getByRole('link', { name: 'Statistiche' }).click();
  await page.waitForURL(`${BASE}/stats`);
  await page.getByTestId('sessions').waitFor();
  assert.equal((await page.getByTestId('sessions').textContent()).trim(), '0 su 1');
  await page.getByRole('heading', { name: 'Ore di digiuno per settimana' }).waitFor();
  await page.getByRole('heading', { name: 'Calendario della serie' }).waitFor();

  step('history shows ten fasts at a time and loads the older ones on request');
  const ended = await page.evaluate(async () => {
    const post = (path, body) =>
      fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    let n = 0;
    for (let i = 0; i < 10; i++) {
      const started = await (await post('/me/fast-events', { protocol: '13:11' })).json();
      if ((await post(`/me/fast-events/${started.id}/end`, {})).ok) n++;
    }
    return n;
  });
  assert.equal(ended, 10);
  await page.getByRole('link', { name: 'Storico' }).click();
  await page.waitForURL(`${BASE}/history`);
  await page.locator('li.fast').nth(9).waitFor();
  assert.equal(await page.locator('li.fast').count(), 10);
  await page.getByRole('button', { name: 'Carica altri' }).click();
  await page.getByText('1 digiuno caricato.', { exact: true }).waitFor();
  assert.equal(await page.locator('li.fast').count(), 11);
  assert.match(await page.locator('li.fast').nth(10).textContent(), /16:8/, 'the oldest fast comes last');

  step('settings apply as they are changed: preferred protocol, milestones, reminders');
  await page.getByRole('link', { name: 'Impostazioni' }).click();
  await page.selectOption('#pref-protocol', '16:8');
  await page.getByTestId('prefs-status').getByText('Salvato.').waitFor();
  await page.getByLabel(/Notifiche delle tappe/).check();
  await page.getByLabel(/Promemoria dei pasti/).check();
  await page.getByTestId('reminders-status').getByText('Salvato.').waitFor();
  await page.waitForFunction(async () => (await (await fetch('/me/preferences')).json()).fastingMilestones === true);
  const prefs = await page.evaluate(async () => (await fetch('/me/preferences')).json());
  assert.deepEqual({ fastingProtocol: prefs.fastingProtocol, fastingMilestones: prefs.fastingMilestones }, { fastingProtocol: '16:8', fastingMilestones: true });
  const notif = await page.evaluate(async () => (await fetch('/me/notifications/settings')).json());
  assert.equal(notif.mealReminders, true);

  step('the sessions list shows this device');
  await page.getByText('questo dispositivo', { exact: false }).first().waitFor();

  step('a dinner consumed on /plan starts the fast, shown at once');
  await page.getByRole('link', { name: 'Piano' }).click();
  await page.getByRole('button', { name: 'Crea il piano di oggi' }).click();
  const dinner = page.locator('li.slot[data-category=CENA]');
  await dinner.waitFor();
  await dinner.getByRole('button', { name: /Segna come consumato/ }).click();
  await page.getByText('Il digiuno è iniziato').waitFor();
  await page.getByTestId('running-fast').waitFor();
  assert.match(await page.getByTestId('running-fast').textContent(), /16:8 in corso/);

  step('un-consuming the dinner at once also removes the fast it started');
  await dinner.getByRole('button', { name: /Annulla/ }).click();
  await page.getByText('Digiuno annullato', { exact: false }).waitFor();
  await page.getByTestId('running-fast').waitFor({ state: 'detached' });
  assert.equal(await page.evaluate(async () => (await fetch('/me/fast-events/current')).status), 404);

  step('consumed again, the dinner starts a fast again');
  await dinner.getByRole('button', { name: /Segna come consumato/ }).click();
  await page.getByText('Il digiuno è iniziato').waitFor();
  await page.getByTestId('running-fast').waitFor();
  await dinner.getByRole('button', { name: /Annulla/ }).waitFor();
  await page.getByRole('link', { name: 'Apri il timer' }).click();
  await page.waitForURL(`${BASE}/`);
  assert.match(await page.locator('#timer-title').textContent(), /avviato dalla cena/);

  step('pause until tomorrow, then resume');
  await page.getByRole('button', { name: 'Metti in pausa fino a domani' }).click();
  await page.getByTestId('pause-state').waitFor();
  const pause = await page.evaluate(async () => (await fetch('/me/fasting/pause')).json());
  assert.equal(pause.paused, true);
  await page.getByRole('button', { name: 'Termina la pausa' }).click();
  await page.getByText('Pausa terminata.').waitFor();

  step('unknown paths show the app’s own not-found page with status 404');
  const res = await page.goto(`${BASE}/non-esiste`);
  assert.equal(res.status(), 404);
  await page.getByRole('heading', { name: 'Pagina non trovata' }).waitFor();

  step('offline, the shell and the last known state still show');
  await page.goto(`${BASE}/`);
  await page.evaluate(async () => navigator.serviceWorker.ready);
  await page.reload();
  await page.locator('#timer-title').waitFor();
  await runningFastShowsOffline(page);

  step('a fast ended online shows as ended offline, and after the connection returns');
  await page.reload();
  await page.getByRole('button', { name: 'Termina il digiuno' }).click();
  await page.getByRole('button', { name: 'Inizia il digiuno' }).waitFor();
  await context.setOffline(true);
  await page.reload();
  await page.getByRole('heading', { name: 'Nessun digiuno in corso' }).waitFor();
  assert.equal(await page.locator('#timer-title').count(), 0, 'the ended fast does not show as running offline');
  await context.setOffline(false);
  await page.reload();
  await page.getByRole('heading', { name: 'Nessun digiuno in corso' }).waitFor();
  assert.equal(await page.locator('#timer-title').count(), 0);

  step('the export downloads every record as JSON');
  await page.goto(`${BASE}/settings`);
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-json').click()]);
  const exported = JSON.parse(await (await import('node:fs/promises')).readFile(await download.path(), 'utf8'));
  assert.equal(exported.user.email, 'giulia.web@example.com');
  assert.equal(exported.fasts.length, 12);
  assert.ok(exported.fasts.some((f) => f.symptoms?.note === 'Tutto bene, un po’ di fame'));

  assert.deepEqual(problems, [], 'no script errors in the app');

  step('sign out ends the session');
  await page.getByRole('button', { name: 'Esci da questo dispositivo' }).click();
  await page.waitForURL(/\/sign-in/);
  assert.equal((await page.request.get(`${BASE}/me`)).status(), 401);
  assert.ok(!(await context.cookies()).some((c) => c.name.endsWith('session_token')), 'no session cookie left');

  step('deleting the account signs out for good');
  await page.goto(`${BASE}/sign-in`);
  await submitSignIn(page, 'giulia.web@example.com');
  await page.waitForURL(`${BASE}/`);
  await page.goto(`${BASE}/settings`);
  await page.fill('#del-password', 'una-password-lunga');
  await page.getByLabel('Ho capito che i miei dati saranno cancellati').check();
  await page.getByRole('button', { name: "Elimina l'account" }).click();
  await page.waitForURL(/\/sign-in/);
  assert.equal((await page.request.get(`${BASE}/me`)).status(), 401);
  const again = await page.request.post(`${BASE}/api/auth/sign-in/email`, {
    headers: { Origin: BASE },
    data: { email: 'giulia.web@example.com', password: 'una-password-lunga' },
  });
  assert.equal(again.status(), 401, 'the account is gone');

  console.log('e2e: all steps passed');
} catch (e) {
  await page.screenshot({ path: process.env.FAIL_SCREENSHOT ?? '/tmp/e2e-failure.png', fullPage: true }).catch(() => {});
  console.error(e);
  console.error(problems.join('\n'));
  process.exitCode = 1;
} finally {
  await browser.close();
}
