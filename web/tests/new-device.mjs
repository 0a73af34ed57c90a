// Someone else signs in with a person's password from another browser: the person gets one
// mail about the new device, and its "this was not me" link, opened on the phone, ends every
// session (the intruder's too) and leads to a new password. The settings then list what
// happened, and the export carries it. In a real Chromium through nginx, from the mailed link;
// started by tests/links.rs.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { BASE, newestMailTo, phone, signUp, step, submitSignIn } from './journey.mjs';

const { browser, page } = await phone();
const email = 'nuovo.accesso@example.com';
const DESKTOP = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0';

async function signIn(p, password) {
  await p.goto(`${BASE}/sign-in`);
  await submitSignIn(p, email, password);
  await p.waitForURL(`${BASE}/`);
}

try {
  step('sign up on the phone');
  await signUp(page, { name: 'Nuovo Accesso', email, password: 'la-password-di-prima' });

  step('someone signs in from another browser: one mail names it');
  const other = await (await browser.newContext({ userAgent: DESKTOP, locale: 'it-IT' })).newPage();
  await signIn(other, 'la-password-di-prima');
  const mail = await newestMailTo(email, 0);
  assert.equal(mail.count, 1);
  assert.match(mail.text, /Firefox/);
  const link = mail.text.match(/https?:\/\/\S+\/api\/auth\/not-me\?token=\S+/)?.[0];
  assert.ok(link, mail.text);

  step('the link, opened on the phone, ends every session and asks for a new password');
  await page.goto(link);
  await page.getByRole('heading', { level: 1, name: 'Non sono stato io' }).waitFor();
  await page.getByRole('button', { name: 'Chiudi tutte le sessioni' }).click();
  await page.waitForURL(/\/reset-password\?token=/);
  await page.fill('#newPassword', 'la-password-nuova');
  await page.getByRole('button', { name: 'Salva la password' }).click();
  await page.waitForURL(`${BASE}/sign-in?reset=1`);

  step("the other browser's session is over");
  await other.goto(`${BASE}/settings`);
  await other.waitForURL(/\/sign-in/);

  step('back on the phone, the settings list what happened');
  await signIn(page, 'la-password-nuova');
  await page.goto(`${BASE}/settings`);
  const activity = page.getByTestId('activity');
  await activity.getByText('Sessioni chiuse').waitFor();
  await activity.getByText('Password cambiata').first().waitFor();
  await activity.getByText('Accesso', { exact: true }).first().waitFor();
  assert.match(await activity.textContent(), /Firefox su Linux/);

  step('the export carries the activity');
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-json').click()]);
  const exported = JSON.parse(await readFile(await download.path(), 'utf8'));
  const kinds = exported.activity.map((a) => a.kind);
  assert.ok(kinds.includes('sessions_revoked') && kinds.includes('password_changed'), kinds.join());
  assert.ok(exported.activity.every((a) => !a.ip || /\/(24|48)$/.test(a.ip)), 'networks only');

  step('the phone is a known device: no second mail');
  assert.equal((await newestMailTo(email, 0)).count, 1);
  console.log('new device: all steps passed');
} finally {
  await browser.close();
}
