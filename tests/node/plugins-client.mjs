// Drives better-auth's official client plugins (emailOTPClient, twoFactorClient, passkeyClient) and
// the core change-email route through their flows against the server at <baseURL>, and prints one
// JSON line per call: {flow, step, status, body, cookies, cleared}. body is the answer's shape (every
// leaf replaced by its JSON type, an array by the shape of its first element; kept as values:
// booleans, the fields "code", "status", "method" and "twoFactorMethods", and the message of an
// error that has no code), cookies the sorted names of the Set-Cookie cookies, cleared those among
// them that were expired (empty value or Max-Age=0). The same program runs against better-auth's own server
// (peer-server.mjs) and against ours; the test compares the lines. Steps named "mailbox-…" record
// whether a message was sent (status 200 or 404 of the code reader), not an auth route.
//
// Usage: node plugins-client.mjs <baseURL> <code-url-template>
//   <baseURL>            e.g. http://localhost:3000 (the client adds /api/auth)
//   <code-url-template>  maildump:<url of a maildump mail catcher>, or a reader such as
//                        http://127.0.0.1:3000/__codes?email={email}&type={type}, answering
//                        {code} for the latest message of that type to that address (404: none);
//                        types: sign-in, email-verification, forget-password, change-email,
//                        two-factor, and verification-link / change-email-confirmation whose
//                        {code} is the link's token.
// Exits 1 with a message on stderr when a step that later steps need fails. FLOWS=<names,…>
// limits the run to those flows.
import { createHash, createHmac, generateKeyPairSync, randomBytes, sign } from "node:crypto";
import { createAuthClient } from "better-auth/client";
import { emailOTPClient, twoFactorClient } from "better-auth/client/plugins";
import { passkeyClient } from "@better-auth/passkey/client";

const [base, codeTemplate] = process.argv.slice(2);
if (!base || !codeTemplate) {
  console.error("usage: node plugins-client.mjs <baseURL> <code-url-template>");
  process.exit(2);
}
const origin = new URL(base).origin;

function fail(message) {
  console.error(`plugins-client: ${message}`);
  process.exit(1);
}

// A browser: its own cookie jar (Node's fetch keeps none) and its page's Origin on every request.
function browser() {
  const jar = new Map();
  const client = createAuthClient({
    baseURL: base,
    plugins: [emailOTPClient(), twoFactorClient(), passkeyClient()],
    fetchOptions: {
      onRequest(ctx) {
        const cookies = [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
        if (cookies) ctx.headers.set("cookie", cookies);
        ctx.headers.set("origin", origin);
        return ctx;
      },
      onResponse(ctx) {
        for (const { name, value, gone } of parseSetCookies(ctx.response)) {
          if (gone) jar.delete(name);
          else jar.set(name, value);
        }
      },
    },
  });
  return { client, jar };
}

function parseSetCookies(response) {
  return response.headers.getSetCookie().map((line) => {
    const [pair, ...attrs] = line.split(";");
    const at = pair.indexOf("=");
    const name = pair.slice(0, at).trim();
    const value = pair.slice(at + 1).trim();
    const gone = value === "" || attrs.some((a) => a.trim().toLowerCase() === "max-age=0");
    return { name, value, gone };
  });
}

// The answer's shape: what both servers must agree on, without the values that differ per run.
const kept = new Set(["code", "status", "method", "twoFactorMethods"]);
function shape(value, key, isError) {
  if (kept.has(key) || typeof value === "boolean") return value;
  if (value === null) return "null";
  if (Array.isArray(value)) return value.length ? [shape(value[0], undefined, false)] : [];
  if (typeof value === "object") {
    const out = {};
    const keepMessage = isError && !("code" in value);
    for (const k of Object.keys(value).sort()) {
      out[k] = k === "message" && keepMessage ? value[k] : shape(value[k], k, false);
    }
    return out;
  }
  return typeof value;
}

// Runs one call, prints its line, and returns {status, body (the real JSON), cookies}.
async function step(flow, name, call) {
  let status = null;
  let text = null;
  let setCookies = [];
  await call({
    async onResponse(ctx) {
      status = ctx.response.status;
      setCookies = parseSetCookies(ctx.response);
      text = await ctx.response.clone().text();
    },
  });
  if (status === null) fail(`${flow} ${name}: no answer from ${base}`);
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = text;
  }
  const line = {
    flow,
    step: name,
    status,
    body: shape(body, undefined, status >= 400),
    cookies: [...new Set(setCookies.map((c) => c.name))].sort(),
    cleared: [...new Set(setCookies.filter((c) => c.gone).map((c) => c.name))].sort(),
  };
  console.log(JSON.stringify(line));
  return { status, body, cookies: setCookies };
}

function expect(result, status, what) {
  if (result.status !== status) fail(`${what}: expected ${status}, got ${result.status} ${JSON.stringify(result.body)}`);
  return result.body;
}

// What the server mailed, through the test's reader; also printed as a "mailbox-…" line.
async function mailbox(flow, name, email, type, wait = 2000) {
  const found = codeTemplate.startsWith("maildump:")
    ? await fromCatcher(codeTemplate.slice("maildump:".length), email, type, wait)
    : await fromReader(email, type);
  console.log(JSON.stringify({ flow, step: `mailbox-${name}`, status: found.status, body: null, cookies: [], cleared: [] }));
  return found;
}

async function fromReader(email, type) {
  const url = codeTemplate.replace("{email}", encodeURIComponent(email)).replace("{type}", encodeURIComponent(type));
  let response;
  try {
    response = await fetch(url);
  } catch (e) {
    fail(`code reader ${url} unreachable: ${e.message}`);
  }
  const body = response.ok ? await response.json() : null;
  return { status: response.status, code: body?.code ?? null };
}

// The mail catcher (maildump's JSON list and plain-text bodies), read as a person reads their
// mail: the newest mail of that kind to that address that this run has not read yet, waiting up
// to `wait` ms for it, since mail leaves through an outbox. The kind is told by the subject.
const subjects = {
  "sign-in": [/codice di accesso/],
  "email-verification": [/codice di verifica/, /Conferma il tuo indirizzo/],
  "forget-password": [/reimpostare la password/, /Reimposta la tua password/],
  "two-factor": [/verifica in due passaggi/],
  "change-email": [/codice per cambiare indirizzo/],
  // A link's token rather than a code: the verification of a (new) address.
  "verification-link": [/Conferma il tuo indirizzo/, /Conferma il tuo nuovo indirizzo/],
};
const linkTypes = new Set(["verification-link"]);
const read = new Map();
async function fromCatcher(catcher, email, type, wait) {
  const patterns = subjects[type] ?? [];
  const key = `${email}\n${type}`;
  const deadline = Date.now() + wait;
  for (;;) {
    const list = await (await fetch(`${catcher}/messages/`)).json();
    const newest = (list.messages ?? [])
      .filter((m) => (m.recipients?.to ?? []).includes(email) && patterns.some((p) => p.test(m.subject ?? "")))
      .filter((m) => m.id > (read.get(key) ?? 0))
      .sort((a, b) => b.id - a.id)[0];
    if (newest) {
      read.set(key, newest.id);
      const text = await (await fetch(`${catcher}/messages/${newest.id}.plain`)).text();
      const code = linkTypes.has(type)
        ? (/[?&]token=([A-Za-z0-9_-]+)/.exec(text)?.[1] ?? null)
        : (text.split(/\r?\n/).map((l) => l.trim()).find((l) => /^\d{6}$/.test(l)) ?? null);
      return { status: 200, code };
    }
    if (Date.now() >= deadline) return { status: 404, code: null };
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function code(flow, name, email, type) {
  const found = await mailbox(flow, name, email, type, 20000);
  if (found.status !== 200 || typeof found.code !== "string") fail(`${flow}: no ${type} message for ${email}`);
  return found.code;
}

const fresh = (tag) => `${tag}-${randomBytes(6).toString("hex")}@example.com`;
const wrong = (c) => String((Number(c) + 1) % 10 ** c.length).padStart(c.length, "0");

// RFC 6238 (SHA-1, 6 digits, 30 s) from the otpauth URI's base32 secret.
function base32Decode(text) {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let bits = 0;
  let acc = 0;
  const out = [];
  for (const ch of text.replace(/=+$/, "").toUpperCase()) {
    const v = alphabet.indexOf(ch);
    if (v < 0) throw new Error(`not base32: ${ch}`);
    acc = (acc << 5) | v;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out.push((acc >>> bits) & 0xff);
    }
  }
  return Buffer.from(out);
}
function totp(uri, offset = 0) {
  const secret = new URL(uri).searchParams.get("secret");
  if (!secret) fail(`no secret in totpURI ${uri}`);
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(Date.now() / 30000) + offset));
  const mac = createHmac("sha1", base32Decode(secret)).update(counter).digest();
  const at = mac[mac.length - 1] & 15;
  return String((mac.readUInt32BE(at) & 0x7fffffff) % 1e6).padStart(6, "0");
}
// A code no step of the ±1 window accepts.
function wrongTotp(uri) {
  const near = new Set([-1, 0, 1].map((o) => totp(uri, o)));
  let c = 0;
  while (near.has(String(c).padStart(6, "0"))) c++;
  return String(c).padStart(6, "0");
}

const password = "first-password-1";

async function signUp(flow, b, email, pw = password) {
  const r = await step(flow, "sign-up", (o) => b.client.signUp.email({ name: "Plugin User", email, password: pw, fetchOptions: o }));
  expect(r, 200, `${flow} sign-up`);
}

// 1. E-mail code sign-in: a new address (signs up) and the same, now existing, address again.
async function otpSignIn() {
  const flow = "otp-sign-in";
  const email = fresh("otp");
  const a = browser();
  await step(flow, "send-new-address", (o) => a.client.emailOtp.sendVerificationOtp({ email, type: "sign-in", fetchOptions: o }));
  const c1 = await code(flow, "sign-in-new", email, "sign-in");
  expect(await step(flow, "sign-in-new-address", (o) => a.client.signIn.emailOtp({ email, otp: c1, fetchOptions: o })), 200, "sign-in with code");
  await step(flow, "get-session-new-address", (o) => a.client.getSession({ fetchOptions: o }));
  const b = browser();
  await step(flow, "send-existing-address", (o) => b.client.emailOtp.sendVerificationOtp({ email, type: "sign-in", fetchOptions: o }));
  const c2 = await code(flow, "sign-in-existing", email, "sign-in");
  expect(await step(flow, "sign-in-existing-address", (o) => b.client.signIn.emailOtp({ email, otp: c2, fetchOptions: o })), 200, "sign-in with code");
  await step(flow, "get-session-existing-address", (o) => b.client.getSession({ fetchOptions: o }));
  await step(flow, "sign-in-code-reused", (o) => b.client.signIn.emailOtp({ email, otp: c2, fetchOptions: o }));
  // Unknown address, non-sign-in type: the same answer, and nothing is mailed.
  const nobody = fresh("nobody");
  await step(flow, "send-verification-unknown-address", (o) =>
    b.client.emailOtp.sendVerificationOtp({ email: nobody, type: "email-verification", fetchOptions: o }),
  );
  await mailbox(flow, "verification-unknown", nobody, "email-verification");
  await step(flow, "send-invalid-address", (o) => b.client.emailOtp.sendVerificationOtp({ email: "not an address", type: "sign-in", fetchOptions: o }));
  await step(flow, "send-change-email-type", (o) => b.client.emailOtp.sendVerificationOtp({ email, type: "change-email", fetchOptions: o }));
}

// 2. Three wrong codes void the code, even the right one after them; a fresh code works once.
async function otpAttempts() {
  const flow = "otp-attempts";
  const email = fresh("attempts");
  const a = browser();
  await step(flow, "send", (o) => a.client.emailOtp.sendVerificationOtp({ email, type: "sign-in", fetchOptions: o }));
  const c1 = await code(flow, "first", email, "sign-in");
  for (const n of [1, 2, 3]) {
    await step(flow, `wrong-${n}`, (o) => a.client.signIn.emailOtp({ email, otp: wrong(c1), fetchOptions: o }));
  }
  await step(flow, "right-after-three-wrong", (o) => a.client.signIn.emailOtp({ email, otp: c1, fetchOptions: o }));
  await step(flow, "right-again", (o) => a.client.signIn.emailOtp({ email, otp: c1, fetchOptions: o }));
  await step(flow, "send-again", (o) => a.client.emailOtp.sendVerificationOtp({ email, type: "sign-in", fetchOptions: o }));
  const c2 = await code(flow, "second", email, "sign-in");
  if (c2 === c1) fail(`${flow}: the fresh code equals the voided one`);
  expect(await step(flow, "fresh-code", (o) => a.client.signIn.emailOtp({ email, otp: c2, fetchOptions: o })), 200, "fresh code");
  await step(flow, "fresh-code-reused", (o) => a.client.signIn.emailOtp({ email, otp: c2, fetchOptions: o }));
}

// 3. Verifying the address of a signed-up (unverified) user with a code.
async function otpVerifyEmail() {
  const flow = "otp-verify-email";
  const email = fresh("verify");
  const a = browser();
  await signUp(flow, a, email);
  await step(flow, "get-session-before", (o) => a.client.getSession({ fetchOptions: o }));
  await step(flow, "send", (o) => a.client.emailOtp.sendVerificationOtp({ email, type: "email-verification", fetchOptions: o }));
  const c = await code(flow, "verification", email, "email-verification");
  await step(flow, "verify-wrong", (o) => a.client.emailOtp.verifyEmail({ email, otp: wrong(c), fetchOptions: o }));
  expect(await step(flow, "verify", (o) => a.client.emailOtp.verifyEmail({ email, otp: c, fetchOptions: o })), 200, "verify-email");
  const s = await step(flow, "get-session-after", (o) => a.client.getSession({ fetchOptions: o }));
  if (s.body?.user?.emailVerified !== true) fail(`${flow}: emailVerified is not true after verify-email`);
  await step(flow, "verify-reused", (o) => a.client.emailOtp.verifyEmail({ email, otp: c, fetchOptions: o }));
}

// 4. Forgotten password by code, then the new password signs in and the old one does not.
async function otpResetPassword() {
  const flow = "otp-reset-password";
  const email = fresh("reset");
  const a = browser();
  await signUp(flow, a, email);
  const b = browser();
  await step(flow, "forget-password", (o) => b.client.forgetPassword.emailOtp({ email, fetchOptions: o }));
  const c1 = await code(flow, "forget-password", email, "forget-password");
  await step(flow, "reset-short-password", (o) => b.client.emailOtp.resetPassword({ email, otp: c1, password: "short", fetchOptions: o }));
  await step(flow, "reset-wrong-code", (o) => b.client.emailOtp.resetPassword({ email, otp: wrong(c1), password: "second-password-2", fetchOptions: o }));
  expect(
    await step(flow, "reset", (o) => b.client.emailOtp.resetPassword({ email, otp: c1, password: "second-password-2", fetchOptions: o })),
    200,
    "reset-password",
  );
  await step(flow, "reset-reused", (o) => b.client.emailOtp.resetPassword({ email, otp: c1, password: "third-password-3", fetchOptions: o }));
  await step(flow, "sign-in-old-password", (o) => b.client.signIn.email({ email, password, fetchOptions: o }));
  expect(
    await step(flow, "sign-in-new-password", (o) => b.client.signIn.email({ email, password: "second-password-2", fetchOptions: o })),
    200,
    "sign-in with the new password",
  );
  await step(flow, "old-session-after-reset", (o) => a.client.getSession({ fetchOptions: o }));
  // The newer route of the same request, and an unknown address (same answer, nothing mailed).
  await step(flow, "request-password-reset", (o) => b.client.emailOtp.requestPasswordReset({ email, fetchOptions: o }));
  await mailbox(flow, "request-password-reset", email, "forget-password");
  const nobody = fresh("nobody");
  await step(flow, "forget-password-unknown", (o) => b.client.forgetPassword.emailOtp({ email: nobody, fetchOptions: o }));
  await mailbox(flow, "forget-password-unknown", nobody, "forget-password");
}

// 5. Checking a code without spending it.
async function otpCheck() {
  const flow = "otp-check";
  const email = fresh("check");
  const a = browser();
  await signUp(flow, a, email);
  await step(flow, "send", (o) => a.client.emailOtp.sendVerificationOtp({ email, type: "email-verification", fetchOptions: o }));
  const c = await code(flow, "verification", email, "email-verification");
  await step(flow, "check-wrong", (o) => a.client.emailOtp.checkVerificationOtp({ email, type: "email-verification", otp: wrong(c), fetchOptions: o }));
  await step(flow, "check-right", (o) => a.client.emailOtp.checkVerificationOtp({ email, type: "email-verification", otp: c, fetchOptions: o }));
  await step(flow, "verify-after-check", (o) => a.client.emailOtp.verifyEmail({ email, otp: c, fetchOptions: o }));
  // A right code for an address with no user (sign-in codes are mailed to anyone).
  const nobody = fresh("nobody");
  const b = browser();
  await step(flow, "send-sign-in-unknown", (o) => b.client.emailOtp.sendVerificationOtp({ email: nobody, type: "sign-in", fetchOptions: o }));
  const c2 = await code(flow, "sign-in-unknown", nobody, "sign-in");
  await step(flow, "check-right-unknown-user", (o) => b.client.emailOtp.checkVerificationOtp({ email: nobody, type: "sign-in", otp: c2, fetchOptions: o }));
}

// 6. Someone signs up with another person's address and a password; the owner then signs in by
// code. better-auth strips the unproven password account and its sessions.
async function otpTakeover() {
  const flow = "otp-takeover";
  const email = fresh("takeover");
  const attacker = browser();
  await signUp(flow, attacker, email, "attacker-password-1");
  const owner = browser();
  await step(flow, "send", (o) => owner.client.emailOtp.sendVerificationOtp({ email, type: "sign-in", fetchOptions: o }));
  const c = await code(flow, "sign-in", email, "sign-in");
  expect(await step(flow, "owner-sign-in", (o) => owner.client.signIn.emailOtp({ email, otp: c, fetchOptions: o })), 200, "owner sign-in");
  await step(flow, "owner-get-session", (o) => owner.client.getSession({ fetchOptions: o }));
  await step(flow, "owner-list-accounts", (o) => owner.client.listAccounts({ fetchOptions: o }));
  await step(flow, "attacker-get-session", (o) => attacker.client.getSession({ fetchOptions: o }));
  await step(flow, "attacker-sign-in-password", (o) =>
    attacker.client.signIn.email({ email, password: "attacker-password-1", fetchOptions: o }),
  );
}

// 7. Two-factor with an authenticator app, trusted device, backup codes.
async function twoFactorFlow() {
  const flow = "two-factor";
  const email = fresh("twofactor");
  const a = browser();
  await signUp(flow, a, email);
  await step(flow, "enable-wrong-password", (o) => a.client.twoFactor.enable({ password: "nope-nope-nope", fetchOptions: o }));
  const enabled = expect(await step(flow, "enable", (o) => a.client.twoFactor.enable({ password, fetchOptions: o })), 200, "enable");
  const uri = enabled?.totpURI;
  const backupCodes = enabled?.backupCodes ?? [];
  if (typeof uri !== "string" || backupCodes.length < 2) fail(`${flow}: enable gave no totpURI or backup codes`);
  await step(flow, "get-session-before-verify", (o) => a.client.getSession({ fetchOptions: o }));
  await step(flow, "verify-totp-wrong", (o) => a.client.twoFactor.verifyTotp({ code: wrongTotp(uri), fetchOptions: o }));
  expect(await step(flow, "verify-totp-setup", (o) => a.client.twoFactor.verifyTotp({ code: totp(uri), fetchOptions: o })), 200, "verify-totp");
  await step(flow, "get-session-enabled", (o) => a.client.getSession({ fetchOptions: o }));
  await step(flow, "sign-out", (o) => a.client.signOut({ fetchOptions: o }));
  const redirect = await step(flow, "sign-in-redirect", (o) => a.client.signIn.email({ email, password, fetchOptions: o }));
  if (redirect.body?.twoFactorRedirect !== true) fail(`${flow}: sign-in did not answer twoFactorRedirect`);
  await step(flow, "get-session-pending", (o) => a.client.getSession({ fetchOptions: o }));
  await step(flow, "verify-totp-sign-in-wrong", (o) => a.client.twoFactor.verifyTotp({ code: wrongTotp(uri), fetchOptions: o }));
  expect(
    await step(flow, "verify-totp-trust-device", (o) => a.client.twoFactor.verifyTotp({ code: totp(uri), trustDevice: true, fetchOptions: o })),
    200,
    "verify-totp at sign-in",
  );
  await step(flow, "get-session-verified", (o) => a.client.getSession({ fetchOptions: o }));
  await step(flow, "sign-out-trusted", (o) => a.client.signOut({ fetchOptions: o }));
  await step(flow, "sign-in-trusted-device", (o) => a.client.signIn.email({ email, password, fetchOptions: o }));
  await step(flow, "get-session-trusted", (o) => a.client.getSession({ fetchOptions: o }));

  const b = browser();
  await step(flow, "new-browser-sign-in", (o) => b.client.signIn.email({ email, password, fetchOptions: o }));
  expect(
    await step(flow, "verify-backup-code", (o) => b.client.twoFactor.verifyBackupCode({ code: backupCodes[0], fetchOptions: o })),
    200,
    "verify-backup-code",
  );
  await step(flow, "get-session-backup-code", (o) => b.client.getSession({ fetchOptions: o }));
  const c = browser();
  await step(flow, "third-browser-sign-in", (o) => c.client.signIn.email({ email, password, fetchOptions: o }));
  await step(flow, "backup-code-reused", (o) => c.client.twoFactor.verifyBackupCode({ code: backupCodes[0], fetchOptions: o }));
  await step(flow, "verify-otp-not-sent", (o) => c.client.twoFactor.verifyOtp({ code: "123456", fetchOptions: o }));
  const d = browser();
  await step(flow, "verify-totp-no-challenge", (o) => d.client.twoFactor.verifyTotp({ code: totp(uri), fetchOptions: o }));

  await step(flow, "get-totp-uri-wrong-password", (o) => a.client.twoFactor.getTotpUri({ password: "nope-nope-nope", fetchOptions: o }));
  await step(flow, "get-totp-uri", (o) => a.client.twoFactor.getTotpUri({ password, fetchOptions: o }));
  const regenerated = await step(flow, "generate-backup-codes", (o) => a.client.twoFactor.generateBackupCodes({ password, fetchOptions: o }));
  if (regenerated.status === 200) {
    await step(flow, "old-backup-code-after-regenerate", (o) => a.client.twoFactor.verifyBackupCode({ code: backupCodes[1], fetchOptions: o }));
  }
  await step(flow, "enable-again", (o) => a.client.twoFactor.enable({ password, fetchOptions: o }));
  await step(flow, "disable-wrong-password", (o) => a.client.twoFactor.disable({ password: "nope-nope-nope", fetchOptions: o }));
  expect(await step(flow, "disable", (o) => a.client.twoFactor.disable({ password, fetchOptions: o })), 200, "disable");
  await step(flow, "get-session-disabled", (o) => a.client.getSession({ fetchOptions: o }));
  await step(flow, "sign-out-disabled", (o) => a.client.signOut({ fetchOptions: o }));
  await step(flow, "sign-in-disabled", (o) => a.client.signIn.email({ email, password, fetchOptions: o }));
}

// 8. Two-factor by a code sent by e-mail (send-otp / verify-otp).
async function twoFactorOtpFlow() {
  const flow = "two-factor-otp";
  const email = fresh("twofactorotp");
  const a = browser();
  await signUp(flow, a, email);
  expect(
    await step(flow, "enable-otp", (o) => a.client.twoFactor.enable({ password, method: "otp", fetchOptions: o })),
    200,
    "enable method otp",
  );
  await step(flow, "sign-out", (o) => a.client.signOut({ fetchOptions: o }));
  const redirect = await step(flow, "sign-in-redirect", (o) => a.client.signIn.email({ email, password, fetchOptions: o }));
  if (redirect.body?.twoFactorRedirect !== true) fail(`${flow}: sign-in did not answer twoFactorRedirect`);
  await step(flow, "send-otp", (o) => a.client.twoFactor.sendOtp({ fetchOptions: o }));
  const c = await code(flow, "two-factor", email, "two-factor");
  await step(flow, "verify-otp-wrong", (o) => a.client.twoFactor.verifyOtp({ code: wrong(c), fetchOptions: o }));
  expect(await step(flow, "verify-otp", (o) => a.client.twoFactor.verifyOtp({ code: c, fetchOptions: o })), 200, "verify-otp");
  await step(flow, "get-session", (o) => a.client.getSession({ fetchOptions: o }));
  await step(flow, "verify-otp-reused", (o) => a.client.twoFactor.verifyOtp({ code: c, fetchOptions: o }));
}

// A passkey authenticator in software, as a phone's platform authenticator acts (ES256, "none"
// attestation, a discoverable credential with user verification): it answers the servers'
// options with real signatures, so that both run the whole ceremony.
function cbor(value) {
  const head = (major, n) => {
    if (n < 24) return Buffer.from([(major << 5) | n]);
    if (n < 256) return Buffer.from([(major << 5) | 24, n]);
    const b = Buffer.alloc(3);
    b[0] = (major << 5) | 25;
    b.writeUInt16BE(n, 1);
    return b;
  };
  if (typeof value === "number") return value >= 0 ? head(0, value) : head(1, -1 - value);
  if (typeof value === "string") return Buffer.concat([head(3, Buffer.byteLength(value)), Buffer.from(value)]);
  if (Buffer.isBuffer(value)) return Buffer.concat([head(2, value.length), value]);
  if (value instanceof Map) return Buffer.concat([head(5, value.size), ...[...value].flatMap(([k, v]) => [cbor(k), cbor(v)])]);
  throw new Error(`cbor: cannot encode ${typeof value}`);
}

function softAuthenticator() {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const jwk = publicKey.export({ format: "jwk" });
  const rawId = randomBytes(16);
  const id = rawId.toString("base64url");
  let counter = 0;
  let userHandle;
  const sha256 = (data) => createHash("sha256").update(data).digest();
  const clientData = (type, challenge) => Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false }));
  const authData = (rpId, flags, attested = Buffer.alloc(0)) => {
    const count = Buffer.alloc(4);
    count.writeUInt32BE(counter);
    return Buffer.concat([sha256(rpId), Buffer.from([flags]), count, attested]);
  };
  const credential = (response) => ({ id, rawId: id, type: "public-key", authenticatorAttachment: "platform", clientExtensionResults: {}, response });
  return {
    id,
    // navigator.credentials.create: user present and verified (0x05), attested key data (0x40).
    create(options) {
      userHandle = options.user.id;
      const key = cbor(new Map([[1, 2], [3, -7], [-1, 1], [-2, Buffer.from(jwk.x, "base64url")], [-3, Buffer.from(jwk.y, "base64url")]]));
      const length = Buffer.alloc(2);
      length.writeUInt16BE(rawId.length);
      const data = authData(options.rp.id, 0x45, Buffer.concat([Buffer.alloc(16), length, rawId, key]));
      const attestation = cbor(new Map([["fmt", "none"], ["attStmt", new Map()], ["authData", data]]));
      return credential({
        clientDataJSON: clientData("webauthn.create", options.challenge).toString("base64url"),
        attestationObject: attestation.toString("base64url"),
        transports: ["internal"],
      });
    },
    // navigator.credentials.get: a signature over the authenticator data and the client data.
    get(options) {
      counter += 1;
      const data = authData(options.rpId, 0x05);
      const client = clientData("webauthn.get", options.challenge);
      const signature = sign("sha256", Buffer.concat([data, sha256(client)]), privateKey);
      return credential({
        clientDataJSON: client.toString("base64url"),
        authenticatorData: data.toString("base64url"),
        signature: signature.toString("base64url"),
        userHandle,
      });
    },
  };
}

const bogusCredential = { id: "bogus", rawId: "bogus", type: "public-key", response: {} };

// 9. Passkeys: registration from the session, sign-in with no address, list, rename, removal.
async function passkeyFlow() {
  const flow = "passkey";
  const email = fresh("passkey");
  const a = browser();
  await step(flow, "register-options-signed-out", (o) => a.client.passkey.generateRegisterOptions({ fetchOptions: o }));
  await signUp(flow, a, email);
  expect(await step(flow, "register-options", (o) => a.client.passkey.generateRegisterOptions({ fetchOptions: o })), 200, "generate-register-options");
  await step(flow, "verify-registration-garbage", (o) => a.client.passkey.verifyRegistration({ response: bogusCredential, fetchOptions: o }));
  await step(flow, "verify-registration-no-challenge", (o) => a.client.passkey.verifyRegistration({ response: bogusCredential, fetchOptions: o }));
  await step(flow, "list-user-passkeys-none", (o) => a.client.passkey.listUserPasskeys({ fetchOptions: o }));

  const key = softAuthenticator();
  const options = expect(
    await step(flow, "register-options-platform", (o) =>
      a.client.passkey.generateRegisterOptions({ query: { authenticatorAttachment: "platform", name: "Laptop" }, fetchOptions: o }),
    ),
    200,
    "generate-register-options",
  );
  const created = key.create(options);
  expect(
    await step(flow, "verify-registration", (o) => a.client.passkey.verifyRegistration({ response: created, name: "Telefono", fetchOptions: o })),
    200,
    "verify-registration",
  );
  await step(flow, "verify-registration-replayed", (o) => a.client.passkey.verifyRegistration({ response: created, fetchOptions: o }));
  const listed = expect(await step(flow, "list-user-passkeys", (o) => a.client.passkey.listUserPasskeys({ fetchOptions: o })), 200, "list");
  if (listed.length !== 1 || listed[0].credentialID !== key.id) fail(`${flow}: the new passkey is not listed: ${JSON.stringify(listed)}`);
  const passkeyId = listed[0].id;
  await step(flow, "update-passkey", (o) => a.client.passkey.updatePasskey({ id: passkeyId, name: "Telefono di Ada", fetchOptions: o }));
  await step(flow, "update-passkey-unknown", (o) => a.client.passkey.updatePasskey({ id: "no-such-passkey", name: "x", fetchOptions: o }));
  await step(flow, "delete-passkey-unknown", (o) => a.client.passkey.deletePasskey({ id: "no-such-passkey", fetchOptions: o }));
  await step(flow, "authenticate-options-signed-in", (o) => a.client.passkey.generateAuthenticateOptions({ fetchOptions: o }));

  // Another browser, signed out: the passkey alone signs in.
  const b = browser();
  const request = expect(
    await step(flow, "authenticate-options", (o) => b.client.passkey.generateAuthenticateOptions({ fetchOptions: o })),
    200,
    "generate-authenticate-options",
  );
  const asserted = key.get(request);
  expect(await step(flow, "verify-authentication", (o) => b.client.passkey.verifyAuthentication({ response: asserted, fetchOptions: o })), 200, "verify-authentication");
  const session = await step(flow, "get-session-after-passkey", (o) => b.client.getSession({ fetchOptions: o }));
  if (session.body?.user?.email !== email) fail(`${flow}: the passkey did not sign ${email} in`);
  await step(flow, "verify-authentication-replayed", (o) => b.client.passkey.verifyAuthentication({ response: asserted, fetchOptions: o }));

  const c = browser();
  await step(flow, "authenticate-options-again", (o) => c.client.passkey.generateAuthenticateOptions({ fetchOptions: o }));
  await step(flow, "verify-authentication-unknown-credential", (o) => c.client.passkey.verifyAuthentication({ response: bogusCredential, fetchOptions: o }));
  await step(flow, "verify-authentication-no-challenge", (o) => c.client.passkey.verifyAuthentication({ response: bogusCredential, fetchOptions: o }));
  await step(flow, "list-user-passkeys-signed-out", (o) => c.client.passkey.listUserPasskeys({ fetchOptions: o }));

  // Removed, the key signs nobody in.
  await step(flow, "delete-passkey", (o) => a.client.passkey.deletePasskey({ id: passkeyId, fetchOptions: o }));
  await step(flow, "list-user-passkeys-after-delete", (o) => a.client.passkey.listUserPasskeys({ fetchOptions: o }));
  const d = browser();
  const again = expect(await step(flow, "authenticate-options-after-delete", (o) => d.client.passkey.generateAuthenticateOptions({ fetchOptions: o })), 200, "options");
  await step(flow, "verify-authentication-deleted", (o) => d.client.passkey.verifyAuthentication({ response: key.get(again), fetchOptions: o }));
}

// 10. Change of e-mail: at once for an unverified address, after the link (or code) for a verified one.
async function changeEmailFlow() {
  const flow = "change-email";
  const u = browser();
  const unverified = fresh("unverified");
  const unverifiedNew = fresh("unverified-new");
  await signUp(flow, u, unverified);
  expect(await step(flow, "unverified-change", (o) => u.client.changeEmail({ newEmail: unverifiedNew, fetchOptions: o })), 200, "change-email");
  const s1 = await step(flow, "unverified-get-session", (o) => u.client.getSession({ fetchOptions: o }));
  if (s1.body?.user?.email !== unverifiedNew) fail(`${flow}: an unverified address did not change at once`);
  await mailbox(flow, "unverified-link-new-address", unverifiedNew, "verification-link");
  await step(flow, "unverified-same-address", (o) => u.client.changeEmail({ newEmail: unverifiedNew, fetchOptions: o }));

  const v = browser();
  const verified = fresh("verified");
  const verifiedNew = fresh("verified-new");
  await signUp(flow, v, verified);
  await step(flow, "verified-send-code", (o) => v.client.emailOtp.sendVerificationOtp({ email: verified, type: "email-verification", fetchOptions: o }));
  const vc = await code(flow, "verified-verification", verified, "email-verification");
  expect(await step(flow, "verified-verify-email", (o) => v.client.emailOtp.verifyEmail({ email: verified, otp: vc, fetchOptions: o })), 200, "verify-email");
  await step(flow, "verified-change-to-taken-address", (o) => v.client.changeEmail({ newEmail: unverifiedNew, fetchOptions: o }));
  expect(
    await step(flow, "verified-change", (o) => v.client.changeEmail({ newEmail: verifiedNew, callbackURL: "/settings", fetchOptions: o })),
    200,
    "change-email",
  );
  await step(flow, "verified-get-session-pending", (o) => v.client.getSession({ fetchOptions: o }));
  // Only when the server also asks the old address first (better-auth's sendChangeEmailConfirmation).
  const confirmation = await mailbox(flow, "verified-confirmation-old-address", verified, "change-email-confirmation");
  if (confirmation.status === 200) {
    await step(flow, "verified-open-confirmation", (o) => v.client.verifyEmail({ query: { token: confirmation.code }, fetchOptions: o }));
  }
  const token = await code(flow, "verified-link-new-address", verifiedNew, "verification-link");
  expect(await step(flow, "verified-open-link", (o) => v.client.verifyEmail({ query: { token }, fetchOptions: o })), 200, "verify-email link");
  const s2 = await step(flow, "verified-get-session-changed", (o) => v.client.getSession({ fetchOptions: o }));
  if (s2.body?.user?.email !== verifiedNew) fail(`${flow}: the verified address did not change after the link`);
  await step(flow, "verified-open-link-again", (o) => v.client.verifyEmail({ query: { token }, fetchOptions: o }));

  // The same by code (email-otp/request-email-change, email-otp/change-email).
  const byCode = fresh("by-code");
  await step(flow, "request-email-change-code", (o) => v.client.emailOtp.requestEmailChange({ newEmail: byCode, fetchOptions: o }));
  const cc = await code(flow, "change-email-code", byCode, "change-email");
  await step(flow, "change-email-wrong-code", (o) => v.client.emailOtp.changeEmail({ newEmail: byCode, otp: wrong(cc), fetchOptions: o }));
  expect(await step(flow, "change-email-code", (o) => v.client.emailOtp.changeEmail({ newEmail: byCode, otp: cc, fetchOptions: o })), 200, "change by code");
  const s3 = await step(flow, "get-session-changed-by-code", (o) => v.client.getSession({ fetchOptions: o }));
  if (s3.body?.user?.email !== byCode) fail(`${flow}: the address did not change by code`);
  await step(flow, "change-email-signed-out", (o) => browser().client.changeEmail({ newEmail: fresh("x"), fetchOptions: o }));
}

// FLOWS=a,b runs only those flows (by their names above); all run without it.
const only = process.env.FLOWS ? new Set(process.env.FLOWS.split(",")) : null;
const flows = [
  ["otp-sign-in", otpSignIn],
  ["otp-attempts", otpAttempts],
  ["otp-verify-email", otpVerifyEmail],
  ["otp-reset-password", otpResetPassword],
  ["otp-check", otpCheck],
  ["otp-takeover", otpTakeover],
  ["two-factor", twoFactorFlow],
  ["two-factor-otp", twoFactorOtpFlow],
  ["passkey", passkeyFlow],
  ["change-email", changeEmailFlow],
];
for (const [name, run] of flows) {
  if (!only || only.has(name)) await run();
}
// The client's session signals leave timers behind; the flows are done.
process.exit(0);
