// Drives better-auth's own client through every account-management call, against the stack at
// BASE_URL, and prints one JSON line per call: {step, data, error, status}. The Rust test that
// runs this program checks the answers; this program only records them.
import { createAuthClient } from "better-auth/client";

const base = process.env.BASE_URL;
if (!base) {
  console.error("BASE_URL is required");
  process.exit(2);
}

// A browser keeps cookies and sends its page's Origin; Node's fetch does neither.
function browser() {
  const jar = new Map();
  const client = createAuthClient({
    baseURL: base,
    fetchOptions: {
      onRequest(ctx) {
        const cookies = [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
        if (cookies) ctx.headers.set("cookie", cookies);
        ctx.headers.set("origin", base);
        return ctx;
      },
      onResponse(ctx) {
        for (const line of ctx.response.headers.getSetCookie()) {
          const [pair, ...attrs] = line.split(";");
          const at = pair.indexOf("=");
          const name = pair.slice(0, at).trim();
          const value = pair.slice(at + 1).trim();
          const gone = attrs.some((a) => a.trim().toLowerCase() === "max-age=0");
          if (gone || value === "") jar.delete(name);
          else jar.set(name, value);
        }
      },
    },
  });
  return { client, jar };
}

async function step(name, call) {
  let status = null;
  const result = await call({
    onResponse(ctx) {
      status = ctx.response.status;
    },
  });
  const line = {
    step: name,
    status,
    data: result?.data ?? null,
    error: result?.error
      ? { status: result.error.status, code: result.error.code ?? null, message: result.error.message ?? null }
      : null,
  };
  console.log(JSON.stringify(line));
  return line;
}

const email = process.env.EMAIL ?? "client@example.com";
const mode = process.argv[2] ?? "manage";

if (mode === "links") {
  // The links of the mails, opened by the client: tokens come from the environment.
  const c = browser().client;
  await step("verify-email", (o) =>
    c.verifyEmail({ query: { token: process.env.VERIFY_TOKEN }, fetchOptions: o }),
  );
  await step("reset-password", (o) =>
    c.resetPassword({ newPassword: "fourth-password-4", token: process.env.RESET_TOKEN, fetchOptions: o }),
  );
  await step("reset-password-again", (o) =>
    c.resetPassword({ newPassword: "fifth-password-5", token: process.env.RESET_TOKEN, fetchOptions: o }),
  );
  await step("sign-in-after-reset", (o) =>
    c.signIn.email({ email, password: "fourth-password-4", fetchOptions: o }),
  );
  await step("get-session-after-reset", (o) => c.getSession({ fetchOptions: o }));
  process.exit(0);
}
const password = "first-password-1";
const laptop = browser();
const phone = browser();
const a = laptop.client;
const b = phone.client;

await step("sign-up", (o) => a.signUp.email({ name: "Client", email, password, fetchOptions: o }));
await step("sign-in-phone", (o) => b.signIn.email({ email, password, fetchOptions: o }));
await step("sign-in-malformed", (o) => b.signIn.email({ email: "not an address", password, fetchOptions: o }));
const listed = await step("list-sessions", (o) => a.listSessions({ fetchOptions: o }));
const phoneHandle = (listed.data ?? []).find((s) => !s.current)?.token;
await step("update-user", (o) => a.updateUser({ name: "Client Renamed", image: null, fetchOptions: o }));
await step("update-user-email", (o) => a.updateUser({ email: "x@example.com", fetchOptions: o }));
await step("get-session", (o) => a.getSession({ fetchOptions: o }));
await step("change-password-wrong", (o) =>
  a.changePassword({ newPassword: "second-password-2", currentPassword: "nope-nope-nope", fetchOptions: o }),
);
await step("change-password-short", (o) =>
  a.changePassword({ newPassword: "short", currentPassword: password, fetchOptions: o }),
);
await step("change-password", (o) =>
  a.changePassword({ newPassword: "second-password-2", currentPassword: password, fetchOptions: o }),
);
await step("list-accounts", (o) => a.listAccounts({ fetchOptions: o }));
await step("unlink-last", (o) => a.unlinkAccount({ providerId: "credential", fetchOptions: o }));
await step("revoke-session", (o) => a.revokeSession({ token: phoneHandle ?? "missing", fetchOptions: o }));
await step("phone-after-revoke", (o) => b.getSession({ fetchOptions: o }));
await step("sign-in-phone-again", (o) => b.signIn.email({ email, password: "second-password-2", fetchOptions: o }));
await step("revoke-other-sessions", (o) => a.revokeOtherSessions({ fetchOptions: o }));
await step("phone-after-revoke-others", (o) => b.getSession({ fetchOptions: o }));
await step("change-password-revoke", (o) =>
  a.changePassword({
    newPassword: "third-password-3",
    currentPassword: "second-password-2",
    revokeOtherSessions: true,
    fetchOptions: o,
  }),
);
await step("get-session-after-change", (o) => a.getSession({ fetchOptions: o }));
await step("request-password-reset", (o) =>
  b.requestPasswordReset({ email, redirectTo: "/reset-password", fetchOptions: o }),
);
await step("request-password-reset-unknown", (o) =>
  b.requestPasswordReset({ email: "nobody@example.com", redirectTo: "/reset-password", fetchOptions: o }),
);
await step("send-verification-email", (o) =>
  a.sendVerificationEmail({ email, callbackURL: "/", fetchOptions: o }),
);
await step("reset-password-bad-token", (o) =>
  b.resetPassword({ newPassword: "fourth-password-4", token: "not-a-token", fetchOptions: o }),
);
await step("verify-email-bad-token", (o) => b.verifyEmail({ query: { token: "not-a-token" }, fetchOptions: o }));
await step("revoke-sessions", (o) => a.revokeSessions({ fetchOptions: o }));
await step("get-session-after-revoke-all", (o) => a.getSession({ fetchOptions: o }));
