// A person who signs in with a code instead of a password, in a real Chromium through nginx: from
// the sign-in page's link, through the mail in the stack's mail catcher (MAIL_CATCHER), into the
// app. A wrong code is refused on the page, and the spent code does not work twice. Started by
// tests/links.rs.
import { chromium } from 'playwright-core';
import assert from 'node:assert/strict';

const BASE = process.env.BASE;
const MAILS = process.env.MAIL_CATCHER;
assert.ok(BASE && MAILS, 'BASE and MAIL_CATCHER are set');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const step = (name) => console.log(`- ${name}`);

const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
const context = await browser.newContext({ viewport: { width: 390, height: 844 }, locale: 'it-IT', timezoneId: 'Europe/Rome' });
const page = await context.newPage();
page.setDefaultTimeout(15_000);
const email = 'senza.password@example.com';

async function codeMailedTo(address) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const list = await (await fetch(`${MAILS}/messages/`)).json();
    const mine = list.messages.filter((m) => m.recipients.to.includes(address));
    if (mine.length > 0) {
      const id = Math.max(...mine.map((m) => m.id));
      const text = await (await fetch(`${MAILS}/messages/${id}.plain`)).text();
      const code = text.split(/\r?\n/).map((l) => l.trim()).find((l) => /^\d{6}$/.test(l));
      assert.ok(code, `a code in: ${text}`);
      return code;
    }
    assert.ok(Date.now() < deadline, `no mail to ${address} in the catcher`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

try {
  step('"Accedi con un codice" on the sign-in page asks for the address');
  await page.goto(`${BASE}/sign-in`);
  await page.getByRole('link', { name: 'Accedi con un codice via e-mail' }).click();
  await page.getByRole('heading', { level: 1, name: 'Accedi con un codice' }).waitFor();
  await page.fill('#email', email);
  await page.getByRole('button', { name: 'Inviami un codice' }).click();
  await page.waitForURL(/\/sign-in\?with=code&sent=1/);
  await page.getByRole('status').waitFor();

  step('a wrong code is refused on the page');
  const code = await codeMailedTo(email);
  const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, '0');
  await page.fill('#otp', wrong);
  await page.getByRole('button', { name: 'Accedi' }).click();
  await page.waitForURL(/error=INVALID_OTP/);
  await page.getByRole('alert').waitFor();

  step('the mailed code signs in and opens the app');
  await page.fill('#otp', code);
  await page.getByRole('button', { name: 'Accedi' }).click();
  await page.waitForURL(`${BASE}/`);
  await page.getByRole('heading', { level: 1, name: 'Oggi' }).waitFor();
  const me = await page.evaluate(async () => (await fetch('/me')).status);
  assert.equal(me, 200);

  step('the spent code does not sign in a second browser');
  const other = await browser.newContext();
  const again = await other.newPage();
  await again.goto(`${BASE}/sign-in?with=code&sent=1&email=${encodeURIComponent(email)}`);
  await again.fill('#otp', code);
  await again.getByRole('button', { name: 'Accedi' }).click();
  await again.waitForURL(/error=INVALID_OTP/);
  await other.close();
  console.log('code sign-in: all steps passed');
} finally {
  await browser.close();
}
