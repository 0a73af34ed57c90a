// A person who signs in with a code instead of a password, in a real Chromium through nginx: from
// the sign-in page's link, through the mail in the stack's mail catcher (MAIL_CATCHER), into the
// app. A wrong code is refused on the page, and the spent code does not work twice. Started by
// tests/links.rs.
import assert from 'node:assert/strict';
import { BASE, newestMailTo, phone, step } from './journey.mjs';

const { browser, page } = await phone();
const email = 'senza.password@example.com';

async function codeMailedTo(address) {
  const { text } = await newestMailTo(address, 0);
  const code = text.split(/\r?\n/).map((l) => l.trim()).find((l) => /^\d{6}$/.test(l));
  assert.ok(code, `a code in: ${text}`);
  return code;
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
  const other = await browser.newContext({ locale: 'it-IT', timezoneId: 'Europe/Rome' });
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
