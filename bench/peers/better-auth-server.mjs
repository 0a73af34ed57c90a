// better-auth's own server, as a better-auth application deploys it: one Node process, the
// Node HTTP server with better-auth's handler, a pg pool on Postgres. Started by bench/peers/run.
//
// Settings come from the environment, all required:
//   DATABASE_URL  a fresh Postgres database; better-auth's tables are created in it first
//   PORT          loopback port to listen on (127.0.0.1 only)
//   AUTH_SECRET   at least 32 characters
// Every other option is better-auth's default (password hashing: scrypt N=16384 r=16 p=1; no
// cookie cache, so every get-session reads the database; pg's pool of 10), except the rate
// limiter, which is switched off: better-auth enables it in production, and the benchmark
// measures work, not refusals.
import http from "node:http";
import { betterAuth } from "better-auth";
import { getMigrations } from "better-auth/db/migration";
import { toNodeHandler } from "better-auth/node";
import pg from "pg";

function required(name) {
  const value = process.env[name];
  if (!value) {
    console.error(`${name} is not set`);
    process.exit(2);
  }
  return value;
}

const url = required("DATABASE_URL");
const port = Number(required("PORT"));
const secret = required("AUTH_SECRET");
if (!Number.isInteger(port) || port < 1 || port > 65535) {
  console.error(`PORT is not a port number: ${process.env.PORT}`);
  process.exit(2);
}
if (secret.length < 32) {
  console.error("AUTH_SECRET must be at least 32 characters");
  process.exit(2);
}
if (process.env.NODE_ENV !== "production") {
  // Outside production better-auth behaves differently (rate limiter default, secret checks);
  // the comparison is with what users ship.
  console.error("NODE_ENV must be production");
  process.exit(2);
}

const options = {
  database: new pg.Pool({ connectionString: url }),
  baseURL: `http://127.0.0.1:${port}`,
  secret,
  emailAndPassword: { enabled: true },
  rateLimit: { enabled: false },
  telemetry: { enabled: false },
  logger: { level: "error" },
};

const { runMigrations } = await getMigrations(options);
await runMigrations();
const auth = betterAuth(options);

const server = http.createServer(toNodeHandler(auth));
server.listen(port, "127.0.0.1", () => {
  console.log(`better-auth listening on 127.0.0.1:${port}`);
});

function stop() {
  server.close(() => options.database.end().finally(() => process.exit(0)));
  // Keep-alive connections of the load generator may hold close() open.
  server.closeAllConnections?.();
}
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
