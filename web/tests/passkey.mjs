// A person who adds a passkey in the settings and signs in with it, in a real Chromium through
// nginx, with Chromium's virtual authenticator standing for the phone's fingerprint (a resident,
// user-verifying credential, always touched): the sign-in page asks for no address, through its
// button or the address field's autofill. Once deleted in the settings, the passkey still on the
// device is refused. Started by tests/links.rs on `localhost`, since a passkey belongs to a host
// name and never to an IP address.
import assert from 'node:assert/strict';
import { BASE, phone, signOut, signUp, step } from './journey.mjs';

const { browser, context, page } = await phone();
const email = 'con.passkey@example.com';
const password = 'una-password-lunga';

const cdp = await context.newCDPSession(page);
await cdp.send('WebAuthn.enable');
const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
  options: {
    protocol: 'ctap2',
    transport: 'internal',
    hasResidentKey: true,
    hasUserVerification: true,
    isUserVerified: true,
    automaticPresenceSimulation: true,
  },
});

const card = page.getByTestId('passkeys');

// The virtual authenticator answers the sign-in page's autofill request (conditional mediation)
// at once, as if the passkey had been picked among the address field's suggestions: the page
// would sign in by itself before any click. Until the autofill step, the page is told the
// browser has no such autofill, as some browsers have not, and offers the button alone.
await cdp.send('Page.enable');
const hideAutofill = async () =>
  (
    await cdp.send('Page.addScriptToEvaluateOnNewDocument', {
      source: 'if (window.PublicKeyCredential) PublicKeyCredential.isConditionalMediationAvailable = async () => false;',
    })
  ).identifier;
const noAutofill = await hideAutofill();

const signedIn = async () => (await page.request.get(`${BASE}/me`)).status() === 200;

/** The sign-in page's passkey button, with nothing typed. */
async function signInWithPasskey() {
  await page.goto(`${BASE}/sign-in`);
  assert.equal(await page.inputValue('#email'), '');
  await page.click('#passkey');
}

try {
  assert.match(BASE, /^http:\/\/localhost:\d+$/, 'the stack is opened on a host name');

  step('sign up, then the settings have no passkey yet');
  await signUp(page, { name: 'Con Passkey', email, password });
  await page.goto(`${BASE}/settings`);
  await card.getByText('Nessuna passkey.').waitFor();

  step('add a passkey: the device makes it, the card lists it with the date');
  await card.getByRole('button', { name: 'Aggiungi una passkey' }).click();
  await card.getByText('Passkey aggiunta', { exact: false }).waitFor();
  const rows = card.locator('li');
  await rows.first().waitFor();
  assert.equal(await rows.count(), 1);
  const row = (await rows.first().textContent()) ?? '';
  assert.match(row, /Chrome su Linux/, row);
  assert.match(row, /aggiunta /, row);

  step('rename it');
  await card.getByRole('button', { name: /^Rinomina/ }).click();
  await page.fill('#passkey-name', 'Telefono di Con');
  await card.getByRole('button', { name: 'Salva' }).click();
  await card.getByText('Nome della passkey salvato.').waitFor();
  await card.getByText('Telefono di Con', { exact: true }).waitFor();

  step("sign out, then sign in with the passkey's button without typing an address");
  await signOut(page);
  assert.equal(await page.getAttribute('#email', 'autocomplete'), 'username webauthn');
  assert.ok(!(await signedIn()), 'signed out');
  await signInWithPasskey();
  await page.waitForURL(`${BASE}/`);
  await page.getByRole('heading', { level: 1, name: 'Oggi' }).waitFor();
  const me = await (await page.request.get(`${BASE}/me`)).json();
  assert.equal(me.user.email, email);

  step('the device holds one resident credential for this host');
  const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
  assert.equal(credentials.length, 1, JSON.stringify(credentials));
  assert.equal(credentials[0].isResidentCredential, true);
  assert.equal(credentials[0].rpId, 'localhost');
  assert.ok(credentials[0].signCount >= 1, 'the sign-in used it');

  step("signed out, the address field's autofill signs in with no click at all");
  await signOut(page);
  await cdp.send('Page.removeScriptToEvaluateOnNewDocument', { identifier: noAutofill });
  // Only the start of the load is awaited: the page may sign in and move on before it ends.
  await page.goto(`${BASE}/sign-in`, { waitUntil: 'commit' });
  await page.waitForURL(`${BASE}/`);
  await page.getByRole('heading', { level: 1, name: 'Oggi' }).waitFor();
  await hideAutofill();

  step('delete the passkey in the settings');
  await page.goto(`${BASE}/settings`);
  await card.getByText('Telefono di Con', { exact: true }).waitFor();
  await card.getByRole('button', { name: /^Elimina/ }).click();
  await card.getByText('Passkey eliminata', { exact: false }).waitFor();
  await card.getByText('Nessuna passkey.').waitFor();

  step('the passkey left on the device no longer signs in, and the page says so');
  await signOut(page);
  const [answer] = await Promise.all([
    page.waitForResponse((r) => new URL(r.url()).pathname === '/api/auth/passkey/verify-authentication'),
    signInWithPasskey(),
  ]);
  assert.equal(answer.status(), 401);
  assert.equal((await answer.json()).code, 'PASSKEY_NOT_FOUND');
  const refusal = page.getByRole('alert');
  await refusal.waitFor();
  assert.ok(((await refusal.textContent()) ?? '').trim(), 'the refusal has words');
  assert.match(page.url(), /\/sign-in/);
  assert.ok(!(await signedIn()), 'still signed out');
  console.log('passkey: all steps passed');
} finally {
  await browser.close();
}
