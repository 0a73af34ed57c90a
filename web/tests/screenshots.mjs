// Screenshots of every screen at 390×844 and 1280×800, light and dark, in Italian and English
// (`-en`), into docs/screenshots/. Run by `cargo nextest run -p e2e --test web --run-ignored only
// screenshots` (needs the stack); signs up a person, runs a fast, records weights and water and
// creates a plan so the screens show data.
import { mkdirSync } from 'node:fs';
import { launch, signUp } from './browser.mjs';

const { BASE } = process.env;
const out = new URL('../../docs/screenshots/', import.meta.url);
mkdirSync(out, { recursive: true });
const browser = await launch();
const setup = await browser.newContext({ locale: 'it-IT', timezoneId: 'Europe/Rome' });
const page = await setup.newPage();
await signUp(page, { name: 'Marta Rossi', email: 'marta@example.com' });
// Some history: two ended fasts started in the past, then a running one.
await page.evaluate(async () => {
  const post = (path, body) => fetch(path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.json());
  const h = 3_600_000;
  for (const [back, len] of [[100, 17], [75, 16.5], [50, 12], [26, 16]]) {
    const f = await post('/me/fast-events', { protocol: '16:8', startedAt: new Date(Date.now() - back * h).toISOString() });
    await post(`/me/fast-events/${f.id}/end`, { endedAt: new Date(Date.now() - (back - len) * h).toISOString() });
    await fetch(`/me/fast-events/${f.id}`, { method: 'PATCH', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ symptoms: { headache: false, energy: 7, hunger: 4, clarity: 8, note: 'Buona giornata' } }) });
  }
  await post('/me/fast-events', { protocol: '16:8', startedAt: new Date(Date.now() - 9.5 * h).toISOString() });
  await fetch('/me/preferences', { method: 'PATCH', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ fastingProtocol: '16:8', fastingMilestones: true, weightGoalKg: 72, heightCm: 172 }) });
  // Three weeks of weigh-ins, slowly going down.
  const day = (back) => new Intl.DateTimeFormat('en-CA', { timeZone: 'Europe/Rome' }).format(Date.now() - back * 24 * h);
  for (const [back, kg] of [[20, 78.4], [17, 78.1], [14, 77.9], [12, 77.6], [9, 77.7], [7, 77.1], [4, 76.8], [2, 76.9], [0, 76.5]]) {
    await post('/me/weights', { kg, measuredOn: day(back), ...(back === 7 ? { note: 'Dopo le vacanze' } : {}) });
  }
  for (const ml of [250, 250, 500, 250]) await post('/me/water', { ml });
});
await page.goto(`${BASE}/plan`);
await page.getByRole('button', { name: 'Crea il piano di oggi' }).click();
await page.locator('li.slot[data-category=COL]').getByRole('button', { name: /Segna come consumato/ }).click();
await page.getByText('Colazione: consumato.').waitFor();
const state = await setup.storageState();

const setLocale = (locale) =>
  page.evaluate(async (l) => {
    await fetch('/me/preferences', { method: 'PATCH', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ locale: l }) });
  }, locale);
const DARK = ['today', 'stats', 'weight', 'history', 'settings'];
for (const lang of ['it', 'en']) {
  await setLocale(lang);
  const suffix = lang === 'en' ? '-en' : '';
  for (const [label, viewport] of [['mobile', { width: 390, height: 844 }], ['desktop', { width: 1280, height: 800 }]]) {
    for (const scheme of ['light', 'dark']) {
      const ctx = await browser.newContext({ viewport, storageState: state, colorScheme: scheme, locale: lang === 'en' ? 'en-GB' : 'it-IT', timezoneId: 'Europe/Rome', deviceScaleFactor: 1 });
      const p = await ctx.newPage();
      for (const [name, path] of [['today', '/'], ['plan', '/plan'], ['history', '/history'], ['stats', '/stats'], ['settings', '/settings'], ['weight', '/weight'], ['not-found', '/pagina-inesistente']]) {
        if (scheme === 'dark' && !DARK.includes(name)) continue;
        await p.goto(`${BASE}${path}`);
        await p.locator('h1').waitFor();
        await p.waitForLoadState('networkidle');
        await p.waitForFunction((l) => document.documentElement.lang === l, lang);
        await p.screenshot({ path: new URL(`${name}-${label}${scheme === 'dark' ? '-dark' : ''}${suffix}.png`, out).pathname });
      }
      // The new cards one by one: water, a fast being corrected, the import report, the safety notice.
      if (scheme === 'light') {
        await p.goto(`${BASE}/`);
        await p.getByTestId('water-total').waitFor();
        await p.getByTestId('water').screenshot({ path: new URL(`water-${label}${suffix}.png`, out).pathname });
        await p.goto(`${BASE}/history`);
        const fast = p.getByTestId('fast').nth(1);
        await fast.getByRole('button', { name: lang === 'en' ? /Edit/ : /Modifica/ }).click();
        await fast.screenshot({ path: new URL(`history-edit-${label}${suffix}.png`, out).pathname });
        await p.getByRole('button', { name: lang === 'en' ? 'Add a past fast' : 'Aggiungi un digiuno passato' }).click();
        await p.getByTestId('past-form').screenshot({ path: new URL(`past-fast-${label}${suffix}.png`, out).pathname });
        await p.goto(`${BASE}/settings`);
        const card = p.getByTestId('import');
        const zero = ['Date,Start,End,Hours,Night Eating', '1/17/21,19:15,12:00,16,1', '1/18/21,20:00,14:00,18,0', '1/19/21,ieri,12:00,16,1'].join('\n');
        await card.locator('#import-file').setInputFiles({ name: 'zero.csv', mimeType: 'text/csv', buffer: Buffer.from(zero) });
        await card.getByRole('button', { name: lang === 'en' ? 'Import' : 'Importa' }).click();
        await card.getByTestId('import-report').waitFor();
        await card.screenshot({ path: new URL(`import-${label}${suffix}.png`, out).pathname });
      }
      await ctx.close();
    }
  }
}
await setLocale('it');
// The safety notice, shown to a person who has not acknowledged it, before a fast of a day.
{
  await page.evaluate(async () => {
    const current = await (await fetch('/me/fast-events/current')).json();
    await fetch(`/me/fast-events/${current.id}/end`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
  });
  for (const lang of ['it', 'en']) {
    await setLocale(lang);
    for (const [label, viewport] of [['mobile', { width: 390, height: 844 }], ['desktop', { width: 1280, height: 800 }]]) {
      const ctx = await browser.newContext({ viewport, storageState: state, locale: lang === 'en' ? 'en-GB' : 'it-IT', timezoneId: 'Europe/Rome', deviceScaleFactor: 1 });
      const p = await ctx.newPage();
      await p.goto(`${BASE}/`);
      await p.selectOption('#protocol', '24:0');
      await p.locator('form.card button[type=submit]').first().click();
      await p.getByTestId('safety').waitFor();
      await p.screenshot({ path: new URL(`safety-${label}${lang === 'en' ? '-en' : ''}.png`, out).pathname });
      await ctx.close();
    }
  }
  await setLocale('it');
}
// auth's own pages, signed out, in the app's look; and the narrowest phone.
for (const [label, viewport] of [['mobile', { width: 390, height: 844 }], ['desktop', { width: 1280, height: 800 }]]) {
  for (const scheme of ['light', 'dark']) {
    const ctx = await browser.newContext({ viewport, colorScheme: scheme, locale: 'it-IT', timezoneId: 'Europe/Rome', deviceScaleFactor: 1 });
    const p = await ctx.newPage();
    for (const [name, path] of [['sign-in', '/sign-in'], ['forgot-password', '/forgot-password']]) {
      if (scheme === 'dark' && name !== 'sign-in') continue;
      await p.goto(`${BASE}${path}`);
      await p.locator('h1').waitFor();
      await p.screenshot({ path: new URL(`${name}-${label}${scheme === 'dark' ? '-dark' : ''}.png`, out).pathname });
    }
    await ctx.close();
  }
}
{
  const ctx = await browser.newContext({ viewport: { width: 320, height: 640 }, storageState: state, locale: 'it-IT', timezoneId: 'Europe/Rome', deviceScaleFactor: 1 });
  const p = await ctx.newPage();
  for (const [name, path] of [['stats', '/stats'], ['settings', '/settings']]) {
    await p.goto(`${BASE}${path}`);
    await p.locator('h1').waitFor();
    await p.waitForLoadState('networkidle');
    await p.screenshot({ path: new URL(`${name}-320.png`, out).pathname });
  }
  await ctx.close();
}
await browser.close();
console.log('screenshots written');
