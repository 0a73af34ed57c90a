// A person whose browser speaks Italian switches the app to English: the next mail is in English,
// and the pages its link leads to stay in English after the sign-out it causes, down to the
// sign-in page; and a `?lang=en` chosen once on a page holds on the pages after it. In a real
// Chromium through nginx, from the mailed link; started by tests/links.rs.
import assert from 'node:assert/strict';
import { BASE, newestMailTo, phone, signUp, step, submitSignIn } from './journey.mjs';

const { browser, page } = await phone();
const email = 'reader.english@example.com';
// A browser the account has never seen: the mail is about a new device.
const DESKTOP = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0';

try {
  step('sign up in an Italian browser: the app speaks Italian');
  await signUp(page, { name: 'Reader', email, password: 'a-long-password' });
  await page.getByRole('heading', { level: 1, name: 'Oggi' }).waitFor();

  step('switch to English in the settings');
  await page.goto(`${BASE}/settings`);
  await page.selectOption('#pref-locale', 'en');
  await page.getByTestId('locale-status').getByText('Saved.').waitFor();

  step('a sign-in from another Italian browser is mailed in English');
  const other = await (await browser.newContext({ userAgent: DESKTOP, locale: 'it-IT' })).newPage();
  await other.goto(`${BASE}/sign-in`);
  await submitSignIn(other, email, 'a-long-password');
  await other.waitForURL(`${BASE}/`);
  const mail = await newestMailTo(email, 0);
  assert.match(mail.text, /someone has just signed in to your account/, mail.text);
  assert.doesNotMatch(mail.text, /\b(accesso|sessioni|Ciao)\b/i, mail.text);
  const link = mail.text.match(/https?:\/\/\S+\/api\/auth\/not-me\?token=\S+/)?.[0];
  assert.ok(link, mail.text);

  step('its link, opened in a signed-out Italian browser, speaks English');
  const reader = await (await browser.newContext({ locale: 'it-IT' })).newPage();
  await reader.goto(link);
  await reader.getByRole('heading', { level: 1, name: "It wasn't me" }).waitFor();
  assert.equal(await reader.evaluate(() => document.documentElement.lang), 'en');
  await reader.getByRole('button', { name: 'End every session' }).click();

  step('the new-password page and the sign-in page after it stay English');
  await reader.waitForURL(/\/reset-password\?token=/);
  await reader.getByRole('heading', { level: 1, name: 'New password' }).waitFor();
  await reader.fill('#newPassword', 'a-brand-new-password');
  await reader.getByRole('button', { name: 'Save the password' }).click();
  await reader.waitForURL(/\/sign-in\?reset=1/);
  await reader.getByText('Password updated. Sign in with your new password.').waitFor();
  assert.equal(await reader.evaluate(() => document.documentElement.lang), 'en');

  step('signed in again, the app is still English');
  await submitSignIn(reader, email, 'a-brand-new-password');
  await reader.waitForURL(`${BASE}/`);
  await reader.getByRole('heading', { level: 1, name: 'Today' }).waitFor();

  step('an Italian browser that chose English once on the sign-in page keeps it on the pages after it');
  const visitor = await (await browser.newContext({ locale: 'it-IT' })).newPage();
  await visitor.goto(`${BASE}/sign-in?lang=en`);
  await visitor.getByRole('link', { name: 'Forgot your password?' }).click();
  await visitor.waitForURL(`${BASE}/forgot-password`);
  await visitor.getByRole('heading', { level: 1, name: 'Forgot your password?' }).waitFor();
  assert.equal(await visitor.evaluate(() => document.documentElement.lang), 'en');
  await visitor.goto(`${BASE}/sign-up`);
  await visitor.getByRole('heading', { level: 1, name: 'Create an account' }).waitFor();
  step('and ?lang=it takes it back');
  await visitor.goto(`${BASE}/sign-up?lang=it`);
  await visitor.goto(`${BASE}/sign-in`);
  assert.equal(await visitor.evaluate(() => document.documentElement.lang), 'it');
  console.log('english: all steps passed');
} finally {
  await browser.close();
}
