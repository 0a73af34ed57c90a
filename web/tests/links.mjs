// Opens every address the product hands out (ADDRESSES, a JSON list of {from, path} from
// tests/links.rs) in a real Chromium through nginx, signed in as a person would be when they
// follow a link, and fails on any that ends on a not-found page. Prints one `OPENED {json}` line
// per address: where it ended and whether the web app or auth's own page answered.
import assert from 'node:assert/strict';
import { phone, signUp } from './browser.mjs';

const BASE = process.env.BASE;
assert.ok(BASE, 'BASE is the stack address');
const addresses = JSON.parse(process.env.ADDRESSES ?? '[]');
assert.ok(addresses.length > 0, 'ADDRESSES lists what to open');

const { browser, page } = await phone();
const failures = [];

try {
  // A person following a link from a mail or a push is usually signed in already.
  await signUp(page, { name: 'Chi Apre I Link', email: 'apre.i.link@example.com' });

  for (const { from, path } of addresses) {
    const response = await page.goto(`${BASE}${path}`, { waitUntil: 'load' });
    const status = response?.status() ?? 0;
    const app = await page.evaluate(() => document.getElementById('app') !== null);
    if (app) {
      // The app renders its page, or its not-found page, after the script ran.
      await page.waitForFunction(() => !document.querySelector('#app .boot'));
    }
    const heading = (await page.locator('h1').first().textContent({ timeout: 5_000 }).catch(() => '')) ?? '';
    const notFound = status === 404 || /non trovata/i.test(heading) || /NOT_FOUND/.test(await page.content());
    const final = page.url();
    console.log(`OPENED ${JSON.stringify({ from, path, final, status, app, heading: heading.trim() })}`);
    if (notFound || status >= 400 || !heading.trim()) {
      failures.push(`${from}: ${path} -> ${final} (${status}, "${heading.trim()}")`);
    }
  }
} finally {
  await browser.close();
}

if (failures.length > 0) {
  console.error(`links: ${failures.length} address(es) open no page:\n${failures.join('\n')}`);
  process.exit(1);
}
console.log(`links: all ${addresses.length} addresses open a page`);
