// What every browser journey shares, whatever the Rust test that starts it passes besides BASE
// (the stack's public address): Debian's Chromium, the phone the journeys hold, the account
// forms a person fills in, and the offline check of a running fast.
import { chromium } from 'playwright-core';

/** The Chromium to drive (CHROMIUM, or Debian's). */
export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
/** How long a step may wait for the page. */
export const T = 15_000;
/** A phone-sized Italian browser in Rome, as the app's people mostly hold it. */
export const PHONE = { viewport: { width: 390, height: 844 }, locale: 'it-IT', timezoneId: 'Europe/Rome' };

export const step = (name) => console.log(`- ${name}`);

/** A headless Chromium, started without its sandbox as every journey starts it. */
export const launch = () => chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });

/** A fresh Chromium holding one phone page: `{ browser, context, page }`. */
export async function phone() {
  const browser = await launch();
  const context = await browser.newContext(PHONE);
  const page = await context.newPage();
  page.setDefaultTimeout(T);
  return { browser, context, page };
}

/** Signs a new person up on /sign-up; resolves once the app's home page is open. */
export async function signUp(page, { name, email, password = 'una-password-lunga' }) {
  const base = process.env.BASE;
  await page.goto(`${base}/sign-up`);
  await page.fill('#name', name);
  await page.fill('#email', email);
  await page.fill('#password', password);
  await page.click('form.credentials button[type=submit]');
  await page.waitForURL(`${base}/`);
}

/** Types the address and password into the sign-in form already on `page` and sends it. */
export async function submitSignIn(page, email, password = 'una-password-lunga') {
  await page.fill('#email', email);
  await page.fill('#password', password);
  await page.click('form.credentials button[type=submit]');
}

/** Reloads `page` offline: the running fast must still show. Then its browser is back online. */
export async function runningFastShowsOffline(page) {
  await page.context().setOffline(true);
  await page.reload();
  await page.locator('#timer-title').waitFor();
  await page.context().setOffline(false);
}

/** Signs this device out with the settings' button. */
export async function signOut(page) {
  await page.goto(`${process.env.BASE}/settings`);
  await page.getByRole('button', { name: 'Esci da questo dispositivo' }).click();
  await page.waitForURL(/\/sign-in/);
}
