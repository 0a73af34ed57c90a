// A buyer frees a seat of their licence from the link the licence e-mail carries: in a real
// Chromium through nginx, the page (no script) lists the computer and its button releases it.
// Started by tests/links.rs with SEAT_LINK (the mailed address) and SEAT_NAME (the computer).
import assert from 'node:assert/strict';
import { phone, step } from './journey.mjs';

const { SEAT_LINK, SEAT_NAME } = process.env;
assert.ok(SEAT_LINK && SEAT_NAME, 'SEAT_LINK and SEAT_NAME are set');
const { browser, page } = await phone();

try {
  step('the mailed link opens the page with the computer on it');
  await page.goto(SEAT_LINK);
  await page.getByRole('heading', { level: 1, name: 'I computer della tua licenza' }).waitFor();
  await page.getByText(SEAT_NAME, { exact: true }).waitFor();

  step('its button releases it');
  await page.getByRole('button', { name: `Libera «${SEAT_NAME}»` }).click();
  await page.getByText(`«${SEAT_NAME}» non usa più la licenza`, { exact: false }).waitFor();

  step('opened again, the link lists no computer');
  await page.goto(SEAT_LINK);
  await page.getByText('Nessun computer usa questa licenza.').waitFor();
  assert.equal(await page.getByText(SEAT_NAME, { exact: true }).count(), 0);
  console.log('seats: all steps passed');
} finally {
  await browser.close();
}
