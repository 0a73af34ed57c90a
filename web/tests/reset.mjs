// A person who forgot the password, in a real Chromium through nginx: from the sign-in page's
// link, through the mail in the stack's mail catcher (MAIL_CATCHER, its page and JSON), to a new
// password and back into the app. Started by tests/links.rs.
import assert from 'node:assert/strict';
import { BASE, MAILS, newestMailTo, phone, signUp, step, submitSignIn } from './journey.mjs';

const { browser, context, page } = await phone();
const email = 'smemorata@example.com';

try {
  step('sign up, then sign out');
  await signUp(page, { name: 'Sara', email, password: 'la-vecchia-password' });
  // Today's requests answered first: one sent after the cookies are gone would be a 401, and the
  // app's move to the sign-in page would cut the navigation below short.
  await page.waitForLoadState('networkidle');
  await context.clearCookies();
  const before = (await newestMailTo(email, -1).catch(() => ({ count: 0 }))).count;

  step('"Password dimenticata?" on the sign-in page opens the form');
  await page.goto(`${BASE}/sign-in`);
  assert.match(await page.title(), /Digiuno/);
  await page.getByRole('link', { name: 'Password dimenticata?' }).click();
  await page.waitForURL(`${BASE}/forgot-password`);
  await page.getByRole('heading', { level: 1, name: 'Password dimenticata' }).waitFor();
  await page.fill('#email', email);
  await page.getByRole('button', { name: 'Invia il link' }).click();
  await page.waitForURL(/\/forgot-password\?sent=1/);
  await page.getByRole('status').waitFor();

  step('the mail is in the catcher, and its page lists it');
  const mail = await newestMailTo(email, before);
  const link = mail.text.match(/https?:\/\/\S+/)?.[0];
  assert.ok(link?.startsWith(`${BASE}/`), `a link to the product in: ${mail.text}`);
  const catcherPage = await browser.newPage();
  await catcherPage.goto(MAILS);
  await catcherPage.getByText(email).first().waitFor();
  await catcherPage.close();

  step('the link opens the new-password page');
  await page.goto(link);
  await page.waitForURL(/\/reset-password\?token=/);
  await page.getByRole('heading', { level: 1, name: 'Nuova password' }).waitFor();
  await page.fill('#newPassword', 'la-nuova-password');
  await page.getByRole('button', { name: 'Salva la password' }).click();
  await page.waitForURL(`${BASE}/sign-in?reset=1`);
  await page.getByText('Password aggiornata').waitFor();

  step('the old password no longer works, the new one does');
  await submitSignIn(page, email, 'la-vecchia-password');
  await page.waitForURL(/\/sign-in\?error=/);
  await submitSignIn(page, email, 'la-nuova-password');
  await page.waitForURL(`${BASE}/`);
  await page.getByRole('heading', { level: 1, name: 'Oggi' }).waitFor();

  step('the spent link says so and offers a new one');
  await page.goto(link);
  await page.getByRole('link', { name: 'Richiedi un nuovo link' }).waitFor();
  console.log('reset: all steps passed');
} finally {
  await browser.close();
}
