// Runs better-auth's own server code (the version in package.json) on a fresh Postgres database,
// as a better-auth application would have: creates its tables, signs a user up with e-mail and
// password, and signs them in once more. The import test then copies that database.
//
// Usage: node better-auth-server.mjs <postgres url> <email> <password> <name>
// Prints one JSON line: {userId, sessions}.
import { betterAuth } from "better-auth";
import { getMigrations } from "better-auth/db/migration";
import pg from "pg";

const [url, email, password, name] = process.argv.slice(2);
if (!url || !email || !password || !name) {
  console.error("usage: node better-auth-server.mjs <postgres url> <email> <password> <name>");
  process.exit(2);
}

const pool = new pg.Pool({ connectionString: url });
const options = {
  database: pool,
  baseURL: "http://localhost:3000",
  secret: "better-auth-source-secret-0123456789abcdef",
  emailAndPassword: { enabled: true },
  logger: { level: "error" },
};
try {
  const { runMigrations } = await getMigrations(options);
  await runMigrations();
  const auth = betterAuth(options);
  const signedUp = await auth.api.signUpEmail({ body: { email, password, name } });
  await auth.api.signInEmail({ body: { email, password } });
  const { rows } = await pool.query('SELECT count(*)::int AS n FROM "session"');
  console.log(JSON.stringify({ userId: signedUp.user.id, sessions: rows[0].n }));
} finally {
  await pool.end();
}
