// Lighthouse (mobile preset, Debian's chromium) on /, /plan, /weight and /stats of the real stack,
// signed in, with some weights recorded. Run by `cargo nextest run -p e2e --test web --run-ignored only lighthouse`; needs the
// `lighthouse` CLI (LIGHTHOUSE, default `npx --yes lighthouse@12`). Prints one line per page.
import { execFileSync } from 'node:child_process';
import { readFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHROMIUM, launch, signUp } from './browser.mjs';

const { BASE } = process.env;
const browser = await launch();
const page = await browser.newPage();
await signUp(page, { name: 'Luca Faro', email: 'luca.faro@example.com' });
await page.evaluate(async () => {
  const day = (back) => new Intl.DateTimeFormat('en-CA', { timeZone: 'Europe/Rome' }).format(Date.now() - back * 86_400_000);
  for (const [back, kg] of [[14, 81.2], [10, 80.9], [7, 80.4], [3, 80.1], [0, 79.8]]) {
    await fetch('/me/weights', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ kg, measuredOn: day(back) }) });
  }
  await fetch('/me/preferences', { method: 'PATCH', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ weightGoalKg: 76, heightCm: 178 }) });
});
const cookie = (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
await browser.close();

const dir = mkdtempSync(join(tmpdir(), 'lh-'));
const [cmd, ...pre] = (process.env.LIGHTHOUSE ?? 'npx --yes lighthouse@12').split(' ');
const results = [];
for (const path of ['/', '/plan', '/weight', '/stats']) {
  const out = join(dir, `${path.replace(/\W/g, '') || 'today'}.json`);
  execFileSync(cmd, [...pre, `${BASE}${path}`, '--quiet', '--output=json', `--output-path=${out}`,
    '--only-categories=performance,accessibility,best-practices',
    '--chrome-flags=--headless=new --no-sandbox', `--extra-headers=${JSON.stringify({ Cookie: cookie })}`],
  { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, CHROME_PATH: CHROMIUM } });
  const r = JSON.parse(readFileSync(out, 'utf8'));
  const score = (k) => Math.round(r.categories[k].score * 100);
  results.push({ path, performance: score('performance'), accessibility: score('accessibility'), bestPractices: score('best-practices') });
  for (const [k, a] of Object.entries(r.audits)) if (a.score !== null && a.score < 0.9 && a.scoreDisplayMode !== 'informative') console.log(`  ${path} ${k}: ${a.title}`);
}
console.table(results);
const low = results.filter((x) => x.performance < 95 || x.accessibility < 95 || x.bestPractices < 90);
if (low.length) {
  console.error('below target (performance ≥ 95, accessibility ≥ 95, best practices ≥ 90)');
  process.exit(1);
}
