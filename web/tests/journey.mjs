// What the journeys through the stack's mail catcher share (started by tests/links.rs with BASE,
// the stack's public address, and MAIL_CATCHER, the catcher's page and JSON): a phone-sized
// Chromium with the account forms (from browser.mjs) and the mails as a person reads them.
import assert from 'node:assert/strict';

export { phone, signOut, signUp, step, submitSignIn } from './browser.mjs';

export const BASE = process.env.BASE;
export const MAILS = process.env.MAIL_CATCHER;
assert.ok(BASE && MAILS, 'BASE and MAIL_CATCHER are set');

/** The newest mail to `address` once it has more than `before`: `{count, text}` (plain text). */
export async function newestMailTo(address, before) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const list = await (await fetch(`${MAILS}/messages/`)).json();
    const mine = list.messages.filter((m) => m.recipients.to.includes(address));
    if (mine.length > before) {
      const id = Math.max(...mine.map((m) => m.id));
      return { count: mine.length, text: await (await fetch(`${MAILS}/messages/${id}.plain`)).text() };
    }
    assert.ok(Date.now() < deadline, `no mail to ${address} in the catcher`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
