// What keeps people using the app (CONTRACT section 11), in a real Chromium through nginx on the
// real stack: weights and their trend, water, corrected and past fasts, Zero's export imported,
// the safety notice, English, and a fast started and ended offline. tests/web.rs starts one stack
// per case and passes BASE and CASE; the script prints `tracking <name>: passed` or exits
// non-zero on the first failed step.
import assert from 'node:assert/strict';
import { signUp as signUpAs, step, submitSignIn } from './browser.mjs';
import { BASE, controlled, json, newPage, runCase } from './one-case.mjs';

const H = 3_600_000;

async function signUp(page, heading = 'Oggi') {
  const email = `tracking.${Date.now()}.${Math.random().toString(36).slice(2, 8)}@example.com`;
  await signUpAs(page, { name: 'Carla Prova', email });
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  return email;
}

/** An instant as a `datetime-local` value in Rome time. */
function romeLocal(ms) {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-CA', { timeZone: 'Europe/Rome', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' })
      .formatToParts(ms)
      .map((p) => [p.type, p.value]),
  );
  return `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}`;
}

const romeDay = (ms) => romeLocal(ms).slice(0, 10);

const CASES = {
  /** A weight recorded with a date and a note, a second one, the trend, goal line and BMI; one deleted. */
  async weight() {
    const { page } = await newPage();
    await signUp(page);
    step('Today links to the weight page');
    await page.getByRole('link', { name: /Registra il peso/ }).click();
    await page.getByRole('heading', { level: 1, name: 'Peso' }).waitFor();
    await page.getByText('Ancora nessun peso').waitFor();
    step('a weight of three days ago with a note, typed with a decimal comma');
    await page.fill('#weight-kg', '80,4');
    await page.fill('#weight-date', romeDay(Date.now() - 3 * 24 * H));
    await page.fill('#weight-note', 'dopo la corsa');
    await page.getByRole('button', { name: 'Salva il peso' }).click();
    await page.getByTestId('weight-status').getByText('Peso salvato: 80,4 kg.').waitFor();
    step("today's weight");
    await page.fill('#weight-kg', '79,8');
    await page.getByRole('button', { name: 'Salva il peso' }).click();
    await page.getByTestId('weight-status').getByText('Peso salvato: 79,8 kg.').waitFor();
    await page.getByTestId('weight-latest').getByText('79,8 kg').waitFor();
    const list = page.getByTestId('weights');
    await list.getByText('dopo la corsa').waitFor();
    assert.equal(await list.locator('li').count(), 2);
    step('goal and height: the goal line and the BMI');
    await page.fill('#goal-kg', '75');
    await page.fill('#height-cm', '180');
    await page.getByRole('button', { name: 'Salva obiettivo e altezza' }).click();
    await page.getByTestId('bmi').getByText('24,6').waitFor();
    const chart = page.getByTestId('weight-chart');
    await chart.locator('line.goal').waitFor({ state: 'attached' });
    const d = await chart.locator('path.trend').getAttribute('d');
    assert.equal((d.match(/[ML]/g) ?? []).length, 2, `a trend of two points: ${d}`);
    assert.equal(await chart.locator('circle.dot').count(), 2);
    const rows = await page.locator('#wchart-table tbody tr').allTextContents();
    assert.equal(rows.length, 2, JSON.stringify(rows));
    assert.ok(rows[1].includes('79,8') && rows[1].includes('80,1'), `the 7-day trend is the mean of both: ${JSON.stringify(rows)}`);
    step('the server agrees');
    const server = await json(page, '/me/weights');
    assert.deepEqual(server.body.items.map((w) => w.kg), [80.4, 79.8]);
    assert.equal(server.body.goalKg, 75);
    assert.equal(server.body.bmi, 24.6);
    step('deleting one asks first');
    await list.locator('li').first().getByRole('button', { name: /Elimina/ }).click();
    await list.getByRole('button', { name: 'Sì, elimina' }).click();
    await page.getByText(/eliminato/).waitFor();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=weights] li').length === 1);
    assert.equal((await json(page, '/me/weights')).body.items.length, 1);
  },

  /** One tap adds a glass, the ring follows the day's goal, a glass can be undone or deleted. */
  async water() {
    const { page } = await newPage();
    await signUp(page);
    const card = page.getByTestId('water');
    await card.getByTestId('water-total').getByText('0 di 2000 ml').waitFor();
    step('+250 ml twice');
    await card.getByRole('button', { name: '+250 ml' }).click();
    await card.getByTestId('water-total').getByText('250 di 2000 ml').waitFor();
    await card.getByRole('button', { name: '+250 ml' }).click();
    await card.getByTestId('water-total').getByText('500 di 2000 ml').waitFor();
    const ring = await card.locator('svg.water-ring').getAttribute('aria-label');
    assert.match(ring, /500 ml di 2000 ml, 25\s?%/);
    step('undo the last glass');
    await card.getByRole('button', { name: 'Annulla' }).click();
    await card.getByTestId('water-total').getByText('250 di 2000 ml').waitFor();
    step('a new goal in the settings');
    await page.goto(`${BASE}/settings`);
    await page.fill('#pref-water', '2500');
    await page.locator('#pref-water').blur();
    await page.getByTestId('body-status').getByText('Salvato.').waitFor();
    step('the day after a reload, and each glass deleted from the list');
    await page.goto(`${BASE}/`);
    await card.getByTestId('water-total').getByText('250 di 2500 ml').waitFor();
    await card.getByText('1 bicchiere oggi').click();
    await card.getByRole('button', { name: /Elimina/ }).click();
    await card.getByTestId('water-total').getByText('0 di 2500 ml').waitFor();
    const day = await json(page, '/me/water');
    assert.equal(day.body.totalMl, 0);
    assert.equal(day.body.goalMl, 2500);
  },

  /** A fast's start corrected on /history: the statistics and the streak follow. */
  async 'correct-fast'() {
    const { page } = await newPage();
    await signUp(page);
    const end = Date.now() - 2 * H;
    const started = await json(page, '/me/fast-events', 'POST', { protocol: '16:8', startedAt: new Date(end - 10 * H).toISOString() });
    assert.equal(started.status, 201);
    const ended = await json(page, `/me/fast-events/${started.body.id}/end`, 'POST', { endedAt: new Date(end).toISOString() });
    assert.equal(ended.body.status, 'ENDED_EARLY');
    step('ended early: no streak');
    await page.goto(`${BASE}/stats`);
    await page.getByTestId('sessions').getByText('0 su 1').waitFor();
    assert.equal((await page.getByTestId('current-streak').textContent()).trim(), '0 giorni');
    step('the start moved 8 hours earlier on /history');
    await page.goto(`${BASE}/history`);
    const item = page.getByTestId('fast').first();
    await item.getByRole('button', { name: /Modifica/ }).click();
    await item.locator('input[type=datetime-local]').first().fill(romeLocal(end - 18 * H));
    await item.getByRole('button', { name: 'Salva' }).click();
    await item.getByText('Digiuno corretto.').waitFor();
    await item.getByText('Completato', { exact: true }).waitFor();
    step('completed: the statistics and the streak follow');
    await page.getByRole('link', { name: 'Statistiche' }).click();
    await page.getByTestId('sessions').getByText('1 su 1').waitFor();
    assert.equal((await page.getByTestId('current-streak').textContent()).trim(), '1 giorno');
    step('a start after the end is refused with a sentence');
    await page.goto(`${BASE}/history`);
    await item.getByRole('button', { name: /Modifica/ }).click();
    await item.locator('input[type=datetime-local]').first().fill(romeLocal(end + H));
    await item.getByRole('button', { name: 'Salva' }).click();
    await item.getByText("La fine deve venire dopo l'inizio.").waitFor();
    await item.getByRole('button', { name: 'Annulla' }).click();
    step('deleting it asks first, then the statistics are empty');
    await item.getByRole('button', { name: /Elimina/ }).click();
    await item.getByRole('button', { name: 'Sì, elimina' }).click();
    await page.getByText('Nessun digiuno ancora').waitFor();
    const stats = await json(page, '/me/fasting/stats');
    assert.equal(stats.body.totalSessions, 0);
  },

  /** A past fast added on /history; one overlapping it is refused with a clear sentence. */
  async 'past-fast'() {
    const { page } = await newPage();
    await signUp(page);
    await page.goto(`${BASE}/history`);
    const start = Date.now() - 3 * 24 * H;
    step('add a past fast of 18 hours');
    await page.getByRole('button', { name: 'Aggiungi un digiuno passato' }).click();
    await page.fill('#past-start', romeLocal(start));
    await page.fill('#past-end', romeLocal(start + 18 * H));
    await page.selectOption('#past-protocol', '18:6');
    await page.getByTestId('past-form').getByRole('button', { name: 'Salva' }).click();
    await page.getByText('Digiuno aggiunto.').waitFor();
    await page.getByTestId('fast').getByText('Completato', { exact: true }).waitFor();
    step('one overlapping it: FAST_OVERLAP as a sentence');
    await page.getByRole('button', { name: 'Aggiungi un digiuno passato' }).click();
    await page.fill('#past-start', romeLocal(start + 10 * H));
    await page.fill('#past-end', romeLocal(start + 30 * H));
    await page.getByTestId('past-form').getByRole('button', { name: 'Salva' }).click();
    await page.getByTestId('past-form').getByText(/si sovrappone a un altro già registrato/).waitFor();
    step('one ending in the future: refused before it is sent');
    await page.fill('#past-start', romeLocal(Date.now() - 2 * H));
    await page.fill('#past-end', romeLocal(Date.now() + 2 * H));
    await page.getByTestId('past-form').getByRole('button', { name: 'Salva' }).click();
    await page.getByTestId('past-form').getByText('La fine non può essere nel futuro.').waitFor();
    const list = await json(page, '/me/fast-events?limit=10');
    assert.equal(list.body.items.length, 1);
    assert.equal(list.body.items[0].protocol, '18:6');
    assert.equal(list.body.items[0].status, 'COMPLETED');
  },

  /** Zero's export imported from the settings: a report of the lines taken and skipped, twice. */
  async 'import-zero'() {
    const { page } = await newPage();
    await signUp(page);
    await page.goto(`${BASE}/settings`);
    const csv = ['Date,Start,End,Hours,Night Eating', '1/17/21,19:15,12:00,16,1', '1/18/21,20:00,14:00,18,0', '1/19/21,ieri,12:00,16,1', ''].join('\n');
    const card = page.getByTestId('import');
    const importFile = async () => {
      await card.locator('#import-file').setInputFiles({ name: 'zero-export.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
      await card.getByRole('button', { name: 'Importa' }).click();
      return card.getByTestId('import-report');
    };
    step('the first import: two fasts, one line skipped with its reason');
    let report = await importFile();
    await report.getByText('2 digiuni importati.').waitFor();
    await report.getByText('1 riga saltata:').waitFor();
    await report.getByText('Riga 4: Start non è un orario (HH:MM)').waitFor();
    const fasts = (await json(page, '/me/fast-events?limit=10')).body.items;
    assert.deepEqual(
      fasts.map((f) => [new Date(f.startedAt).toISOString(), new Date(f.endedAt).toISOString(), f.protocol]).sort(),
      [
        ['2021-01-17T18:15:00.000Z', '2021-01-18T11:00:00.000Z', '16:8'],
        ['2021-01-18T19:00:00.000Z', '2021-01-19T13:00:00.000Z', '18:6'],
      ],
    );
    step('the same file again imports nothing');
    report = await importFile();
    await report.getByText('0 digiuni importati.').waitFor();
    await report.getByText('Riga 2: già registrato').waitFor();
    assert.equal((await json(page, '/me/fast-events?limit=10')).body.items.length, 2);
    step('a file of another kind is refused with a sentence');
    await card.locator('#import-file').setInputFiles({ name: 'altro.csv', mimeType: 'text/csv', buffer: Buffer.from('a,b\n1,2\n') });
    await card.getByRole('button', { name: 'Importa' }).click();
    await card.getByText(/Formato non riconosciuto/).waitFor();
  },

  /** The first fast of 24 h or more waits for the safety notice, acknowledged once. */
  async safety() {
    const { page } = await newPage();
    await signUp(page);
    step('24:0 shows who should not fast without a doctor');
    await page.selectOption('#protocol', '24:0');
    await page.getByRole('button', { name: 'Inizia il digiuno' }).click();
    const notice = page.getByTestId('safety');
    for (const who of ['incinta o allatti', 'meno di 18 anni', 'disturbi alimentari', 'diabete', 'sottopeso']) await notice.getByText(who).waitFor();
    assert.equal((await json(page, '/me/fast-events/current')).status, 404, 'nothing started yet');
    const accept = notice.getByRole('button', { name: 'Ho capito, inizia' });
    assert.ok(await accept.isDisabled(), 'the start waits for the box to be ticked');
    await notice.getByLabel(/Ho letto/).check();
    await accept.click();
    await page.locator('#timer-title').getByText('Digiuno 24:0 in corso').waitFor();
    const me = await json(page, '/me');
    assert.equal(me.body.user.preferences.longFastAcknowledged, true);
    step('never again: a 36:0 fast starts at once');
    await page.getByRole('button', { name: 'Termina il digiuno' }).click();
    await page.selectOption('#protocol', '36:0');
    await page.getByRole('button', { name: 'Inizia il digiuno' }).click();
    await page.locator('#timer-title').getByText('Digiuno 36:0 in corso').waitFor();
    assert.equal(await page.getByTestId('safety').count(), 0);
    step('after a reload too');
    await page.getByRole('button', { name: 'Termina il digiuno' }).click();
    // The reload waits for the end to be shown: one sent a moment before can still be in flight.
    await page.getByRole('button', { name: 'Inizia il digiuno' }).waitFor();
    await page.reload();
    await page.selectOption('#protocol', '48:0');
    await page.getByRole('button', { name: 'Inizia il digiuno' }).click();
    await page.locator('#timer-title').waitFor();
    assert.equal(await page.getByTestId('safety').count(), 0);
  },

  /** English chosen in the settings: every screen in English at once, numbers with a point. */
  async english() {
    const { context, page } = await newPage();
    await signUp(page);
    assert.equal(await page.evaluate(() => document.documentElement.lang), 'it');
    step('the switch on /settings re-renders at once');
    await page.goto(`${BASE}/settings`);
    await page.selectOption('#pref-locale', 'en');
    await page.getByRole('heading', { level: 1, name: 'Settings' }).waitFor();
    await page.getByTestId('locale-status').getByText('Saved.').waitFor();
    assert.equal(await page.evaluate(() => document.documentElement.lang), 'en');
    assert.equal((await json(page, '/me/preferences')).body.locale, 'en');
    step('a weight, a fast and water, so that every screen has something to say');
    await json(page, '/me/weights', 'POST', { kg: 90.7 });
    await json(page, '/me/fast-events', 'POST', { protocol: '16:8', startedAt: new Date(Date.now() - 3 * H).toISOString() });
    await json(page, '/me/water', 'POST', { ml: 1500 });
    // Words of the Italian catalogue that no English screen may show (the brand "Digiuno" aside).
    const italian = /\b(Oggi|Piano|Storico|Statistiche|Impostazioni|Caricamento|Salva|Elimina|Annulla|digiuno|digiuni|Peso|Acqua|ore|Iniziato|Prossima|Nessun[oa]?|Lingua|Esci|Riprova|Registra)\b/;
    const screens = [
      ['/', 'Today'],
      ['/plan', "Today's plan"],
      ['/history', 'History'],
      ['/stats', 'Statistics'],
      ['/weight', 'Weight'],
      ['/settings', 'Settings'],
      ['/no-such-page', 'Page not found'],
    ];
    for (const [path, title] of screens) {
      step(`${path} in English`);
      await page.goto(`${BASE}${path}`);
      await page.getByRole('heading', { level: 1, name: title }).waitFor();
      await page.waitForLoadState('networkidle');
      await page.getByText(/Loading…/).waitFor({ state: 'detached' });
      const text = (await page.locator('body').innerText()).replace(/\bDigiuno\b/g, '');
      const hit = italian.exec(text);
      assert.equal(hit, null, `Italian on ${path}: "${hit?.[0]}" in ${text.slice(Math.max(0, (hit?.index ?? 0) - 60), (hit?.index ?? 0) + 60)}`);
      assert.equal(await page.evaluate(() => document.documentElement.lang), 'en');
      assert.match(await page.title(), new RegExp(`^${title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} · `));
    }
    step('numbers with a decimal point');
    await page.goto(`${BASE}/weight`);
    await page.getByTestId('weight-latest').getByText('90.7 kg').waitFor();
    await page.goto(`${BASE}/`);
    await page.getByTestId('water-total').getByText('1,500 of 2,000 ml').waitFor();
    step('another browser signing in gets English from the account');
    const email = await page.evaluate(async () => (await (await fetch('/me')).json()).user.email);
    const other = await newPage();
    await other.page.goto(`${BASE}/sign-in`);
    await submitSignIn(other.page, email);
    await other.page.getByRole('heading', { level: 1, name: 'Today' }).waitFor();
    step('back to Italian');
    await page.goto(`${BASE}/settings`);
    await page.selectOption('#pref-locale', 'it');
    await page.getByRole('heading', { level: 1, name: 'Impostazioni' }).waitFor();
    assert.equal(await page.evaluate(() => document.documentElement.lang), 'it');
    await context.close();
  },

  /** A fast started and ended offline becomes exactly one fast on the server once back online. */
  async 'offline-queue'() {
    const { context, page } = await newPage();
    await signUp(page);
    await controlled(page);
    // Today's answers are cached by the service worker for the offline reload below.
    await page.reload();
    await page.getByRole('button', { name: 'Inizia il digiuno' }).waitFor();
    step('offline: start a fast');
    await context.setOffline(true);
    await page.getByRole('button', { name: 'Inizia il digiuno' }).click();
    await page.locator('#timer-title').waitFor();
    await page.getByTestId('sync-note').getByText(/Offline: 1 modifica sarà inviata/).waitFor();
    step('still offline, a reload shows it running');
    await page.reload();
    await page.locator('#timer-title').waitFor();
    step('offline: a glass of water and the end of the fast');
    await page.getByTestId('water').getByRole('button', { name: '+250 ml' }).click();
    await page.getByRole('button', { name: 'Termina il digiuno' }).click();
    await page.getByRole('button', { name: 'Inizia il digiuno' }).waitFor();
    await page.getByTestId('sync-note').getByText(/Offline: 3 modifiche saranno inviate/).waitFor();
    const kept = await page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith('digiuno:queue:')));
    assert.equal(kept.length, 1, 'the queue is kept under the user id');
    step('online again: everything is sent, once');
    await context.setOffline(false);
    await page.waitForFunction(() => document.querySelector('[data-testid=sync-note]')?.textContent === '', null, { timeout: 30_000 });
    const fasts = (await json(page, '/me/fast-events?limit=10')).body.items;
    assert.equal(fasts.length, 1, `exactly one fast: ${JSON.stringify(fasts)}`);
    assert.equal(fasts[0].status, 'ENDED_EARLY');
    assert.equal((await json(page, '/me/fast-events/current')).status, 404);
    assert.equal((await json(page, '/me/water')).body.totalMl, 250);
    assert.equal(await page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith('digiuno:queue:')).length), 0);
    step('the page shows the server state');
    await page.goto(`${BASE}/history`);
    await page.getByTestId('fast').first().getByText('Terminato prima').waitFor();
    assert.equal(await page.getByTestId('fast').count(), 1);
  },
};

await runCase('tracking', CASES);
