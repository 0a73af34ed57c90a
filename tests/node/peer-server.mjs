// Serves better-auth's own server (the version in package.json) with the plugins auth must match
// on the wire: e-mail codes, two-factor, passkeys, change of e-mail. The plugin tests run the same
// client program against this server and against ours, and compare the answers.
//
// Usage: node peer-server.mjs <postgres url> <port>
// Prints one JSON line {"port":N} once listening. Besides /api/auth/*, it answers
// GET /__codes?email=&type= → {code} (404 when none): what the server last "mailed" to that
// address. type is an e-mail OTP type (sign-in, email-verification, forget-password, change-email),
// "two-factor" (the two-factor code by e-mail), or for links "verification-link" (the
// verification / change-of-e-mail link, sent to the address it verifies) and
// "change-email-confirmation" (sent to the old address, only with CHANGE_EMAIL_CONFIRMATION=1);
// links answer {code: <token>, url}.
// RATE_LIMIT=1 turns better-auth's rate limiter on with its defaults (off otherwise, so that a
// test's many calls from one address are not throttled).
import http from "node:http";
import { betterAuth } from "better-auth";
import { getMigrations } from "better-auth/db/migration";
import { toNodeHandler } from "better-auth/node";
import { emailOTP, twoFactor } from "better-auth/plugins";
import { passkey } from "@better-auth/passkey";
import pg from "pg";

const [url, portArg] = process.argv.slice(2);
const port = Number(portArg);
if (!url || !Number.isInteger(port) || port <= 0) {
  console.error("usage: node peer-server.mjs <postgres url> <port>");
  process.exit(2);
}
const origin = `http://localhost:${port}`;

// The mail catcher: the latest message per (address, type), as a test would read it from a mailbox.
const mailbox = new Map();
const deliver = (email, type, message) => mailbox.set(`${email.toLowerCase()}\n${type}`, message);
const tokenOf = (link) => new URL(link).searchParams.get("token");

const pool = new pg.Pool({ connectionString: url });
const options = {
  database: pool,
  appName: "Digiuno", // also the passkey rpName and the issuer get-totp-uri uses (it ignores twoFactor's issuer)
  baseURL: origin,
  // The same host by its address, so a client may be pointed at either.
  trustedOrigins: [`http://127.0.0.1:${port}`],
  secret: "better-auth-peer-secret-0123456789abcdef",
  // Our cookie names, so that the two servers' answers compare name for name.
  advanced: { cookiePrefix: "digiuno" },
  logger: { level: "error" },
  rateLimit: { enabled: process.env.RATE_LIMIT === "1" },
  emailAndPassword: { enabled: true },
  emailVerification: {
    async sendVerificationEmail({ user, url }) {
      deliver(user.email, "verification-link", { code: tokenOf(url), url });
    },
  },
  user: {
    changeEmail: {
      enabled: true,
      // An unverified address changes at once (the contract, section 10); a verified one needs the link.
      updateEmailWithoutVerification: true,
      // better-auth 1.7 names this sendChangeEmailConfirmation: a first link to the old address.
      // Off by default: the contract sends the link to the new address only.
      ...(process.env.CHANGE_EMAIL_CONFIRMATION === "1"
        ? {
            async sendChangeEmailConfirmation({ user, url }) {
              deliver(user.email, "change-email-confirmation", { code: tokenOf(url), url });
            },
          }
        : {}),
    },
  },
  plugins: [
    emailOTP({
      otpLength: 6,
      expiresIn: 300,
      allowedAttempts: 3,
      overrideDefaultEmailVerification: false,
      // The code route of a change of e-mail (/email-otp/request-email-change, /email-otp/change-email).
      changeEmail: { enabled: true },
      async sendVerificationOTP({ email, otp, type }) {
        deliver(email, type, { code: otp });
      },
    }),
    twoFactor({
      issuer: "Digiuno",
      // The code by e-mail (/two-factor/send-otp, /two-factor/verify-otp), which the contract lists.
      otpOptions: {
        async sendOTP({ user, otp }) {
          deliver(user.email, "two-factor", { code: otp });
        },
      },
    }),
    passkey({ rpID: "localhost", origin }),
  ],
};

const { runMigrations } = await getMigrations(options);
await runMigrations();
const handler = toNodeHandler(betterAuth(options));

const server = http.createServer((req, res) => {
  const target = new URL(req.url, origin);
  if (target.pathname === "/__codes") {
    const email = target.searchParams.get("email") ?? "";
    const type = target.searchParams.get("type") ?? "";
    const found = mailbox.get(`${email.toLowerCase()}\n${type}`);
    res.writeHead(found ? 200 : 404, { "content-type": "application/json" });
    res.end(JSON.stringify(found ?? { code: "NOT_FOUND", message: `nothing sent to ${email} of type ${type}` }));
    return;
  }
  handler(req, res);
});
server.listen(port, "127.0.0.1", () => console.log(JSON.stringify({ port })));

// Stop cleanly so the test's database can be dropped at once.
for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => server.close(() => pool.end().then(() => process.exit(0))));
}
