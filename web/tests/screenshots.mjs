// Screenshots of every screen at 390×844 and 1280×800, light and dark, into docs/screenshots/.
// Run by `cargo nextest run -p e2e --test web --run-ignored only screenshots` (needs the stack);
// signs up a person, runs a fast and creates a plan so the screens show data.
import { chromium } from 'playwright-core';
import { mkdirSync } from 'node:fs';

const { BASE } = process.env;
const out = new URL('../../docs/screenshots/', import.meta.url);
mkdirSync(out, { recursive: true });
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
const setup = await browser.newContext({ locale: 'it-IT', timezoneId: 'Europe/Rome' });
const page = await setup.newPage();
await page.goto(`${BASE}/sign-up`);
await page.fill('#name', 'Marta Rossi');
await page.fill('#email', 'marta@example.com');
await page.fill('#password', 'una-password-lunga');
await page.click('form.credentials button[type=submit]');
await page.waitForURL(`${BASE}/`);
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
  await fetch('/me/preferences', { method: 'PATCH', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ fastingProtocol: '16:8', fastingMilestones: true }) });
});
await page.goto(`${BASE}/plan`);
await page.getByRole('button', { name: 'Crea il piano di oggi' }).click();
await page.locator('li.slot[data-category=COL]').getByRole('button', { name: /Segna come consumato/ }).click();
await page.getByText('Colazione: consumato.').waitFor();
const state = await setup.storageState();

for (const [label, viewport] of [['mobile', { width: 390, height: 844 }], ['desktop', { width: 1280, height: 800 }]]) {
  for (const scheme of ['light', 'dark']) {
    const ctx = await browser.newContext({ viewport, storageState: state, colorScheme: scheme, locale: 'it-IT', timezoneId: 'Europe/Rome', deviceScaleFactor: 1 });
    const p = await ctx.newPage();
    for (const [name, path] of [['today', '/'], ['plan', '/plan'], ['history', '/history'], ['stats', '/stats'], ['settings', '/settings'], ['weight', '/weight'], ['not-found', '/pagina-inesistente']]) {
      if (scheme === 'dark' && !['today', 'stats'].includes(name)) continue;
      await p.goto(`${BASE}${path}`);
      await p.locator('h1').waitFor();
      await p.waitForLoadState('networkidle');
      await p.screenshot({ path: new URL(`${name}-${label}${scheme === 'dark' ? '-dark' : ''}.png`, out).pathname });
    }
    await ctx.close();
  }
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
