// What the scripts that check one case per stack share (cases.mjs and tracking.mjs; tests/web.rs
// starts a stack for each case and passes BASE and CASE): the browser, its pages with their
// script errors, requests made as the signed-in page, and the run that reports the case.
import assert from 'node:assert/strict';
import { launch, PHONE, T } from './browser.mjs';

export const { BASE, CASE } = process.env;
assert.ok(BASE && CASE, 'BASE and CASE are set');

/** The browser every page of the case lives in; closed when the case has run. */
export const browser = await launch();
/** Script errors of the pages watched so far: the case fails on any. */
export const problems = [];

/** Gives `page` the journeys' timeout and records its script errors in `problems`. */
export function watch(page) {
  page.setDefaultTimeout(T);
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
}

/** A watched page in a context of its own: a phone, unless `options` say otherwise. */
export async function newPage(options = {}) {
  const context = await browser.newContext({ ...PHONE, ...options });
  const page = await context.newPage();
  watch(page);
  return { context, page };
}

/** A JSON request sent by the page itself (with its cookies): `{ status, body }`. */
export const json = (page, path, method = 'GET', body) =>
  page.evaluate(
    async ([p, m, b]) => {
      const res = await fetch(p, { method: m, headers: { 'Content-Type': 'application/json' }, body: b === undefined ? undefined : JSON.stringify(b) });
      return { status: res.status, body: res.status === 204 ? null : await res.json() };
    },
    [path, method, body],
  );

/** Until the page is controlled by the service worker (the first load only registers it). */
export async function controlled(page) {
  await page.evaluate(async () => navigator.serviceWorker.ready);
  if (!(await page.evaluate(() => navigator.serviceWorker.controller !== null))) await page.reload();
  await page.waitForFunction(() => navigator.serviceWorker.controller !== null);
}

/**
 * Runs `cases[CASE]` and prints `<label> <CASE>: passed`, or fails with the error, the script
 * errors and a screenshot in /tmp/<label>-<CASE>.png. `closers` close what the case opened
 * outside `browser`, whatever the outcome.
 */
export async function runCase(label, cases, closers = []) {
  const run = cases[CASE];
  assert.ok(run, `unknown CASE ${CASE}`);
  try {
    await run();
    assert.deepEqual(problems, [], 'no script errors in the app');
    console.log(`${label} ${CASE}: passed`);
  } catch (e) {
    const pages = browser.contexts().flatMap((c) => c.pages());
    await pages[0]?.screenshot({ path: `/tmp/${label}-${CASE}.png`, fullPage: true }).catch(() => {});
    console.error(e);
    console.error(problems.join('\n'));
    process.exitCode = 1;
  } finally {
    for (const close of closers) await close().catch(() => {});
    await browser.close();
  }
}
