// A person who turns two-factor sign-in on, in a real Chromium through nginx: the settings show
// the QR code and the key, the test's "authenticator app" computes the codes from that key
// (RFC 6238), and the sign-in page then asks for a code; a backup code works once. Started by
// tests/links.rs.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { BASE, phone, signOut, signUp, step, submitSignIn } from './journey.mjs';

const { browser, context, page } = await phone();
const email = 'due.passaggi@example.com';
const password = 'una-password-lunga';

function base32(text) {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = 0;
  let acc = 0;
  const out = [];
  for (const ch of text.replace(/=+$/, '').toUpperCase()) {
    acc = (acc << 5) | alphabet.indexOf(ch);
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out.push((acc >>> bits) & 0xff);
    }
  }
  return Buffer.from(out);
}

/** The app's code for `key` now (SHA-1, 6 digits, 30 s). */
function totp(key) {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(Date.now() / 30_000)));
  const mac = createHmac('sha1', base32(key)).update(counter).digest();
  const at = mac[mac.length - 1] & 15;
  return String((mac.readUInt32BE(at) & 0x7fffffff) % 1e6).padStart(6, '0');
}

async function signInWithPassword() {
  await page.goto(`${BASE}/sign-in`);
  await submitSignIn(page, email, password);
}

/** The password, then a backup code instead of the app's. */
async function withBackupCode(code) {
  await signInWithPassword();
  await page.waitForURL(/\/two-factor/);
  await page.getByRole('link', { name: 'Usa un codice di riserva' }).click();
  await page.fill('#code', code);
  await page.getByRole('button', { name: 'Verifica' }).click();
}

try {
  step('sign up, then set two-factor up in the settings with the QR code and its key');
  await signUp(page, { name: 'Due Passaggi', email, password });
  await page.goto(`${BASE}/settings`);
  await page.fill('#tfa-password', password);
  await page.getByRole('button', { name: 'Configura' }).click();
  await page.getByRole('img', { name: "Codice QR per l'app di autenticazione" }).waitFor();
  const key = (await page.getByTestId('totp-secret').textContent()).trim();
  assert.match(key, /^[A-Z2-7]+$/);
  await page.fill('#tfa-code', totp(key));
  await page.getByRole('button', { name: 'Attiva' }).click();
  await page.getByText('Verifica in due passaggi attiva.').waitFor();
  const codes = (await page.getByTestId('backup-codes').locator('code').allTextContents()).map((c) => c.trim());
  assert.equal(codes.length, 10);

  step('after the password, the sign-in asks for the app code and opens the app');
  await signOut(page);
  await signInWithPassword();
  await page.waitForURL(/\/two-factor/);
  assert.ok(!(await context.cookies()).some((c) => c.name.endsWith('session_token') && c.value), 'no session yet');
  await page.fill('#code', totp(key));
  await page.getByRole('button', { name: 'Verifica' }).click();
  await page.waitForURL(`${BASE}/`);
  await page.getByRole('heading', { level: 1, name: 'Oggi' }).waitFor();

  step('a backup code signs in once');
  await signOut(page);
  await withBackupCode(codes[0]);
  await page.waitForURL(`${BASE}/`);
  await signOut(page);
  await withBackupCode(codes[0]);
  await page.waitForURL(/error=INVALID_BACKUP_CODE/);
  await page.getByRole('alert').waitFor();
  assert.equal((await page.request.get(`${BASE}/me`)).status(), 401);
  console.log('two-factor: all steps passed');
} finally {
  await browser.close();
}
