// Turns the figures bench/peers/run collected (environment variables NAME_rROUND_FIELD) into
// bench/peers/results.json, the Markdown tables of last-run.md, and one line per benchmark.
// Each figure is the median over the rounds; ratio = our median ÷ better-auth's median, higher
// is better, and `met` is computed here from the target, never written by hand.
import { writeFileSync } from "node:fs";

const e = process.env;
function num(name) {
  const v = Number(e[name]);
  if (e[name] === undefined || e[name] === "" || !Number.isFinite(v)) {
    throw new Error(`${name} is not a number: ${e[name]}`);
  }
  return v;
}
const rounds = num("ROUNDS");
const perRound = (key, field) => Array.from({ length: rounds }, (_, i) => num(`${key}_r${i + 1}_${field}`));
function median(values) {
  const s = [...values].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}
const round = (v, digits) => Number(v.toFixed(digits));
const figures = (key) => ({
  rps: median(perRound(key, "rps")),
  p50: median(perRound(key, "p50_ms")),
  p99: median(perRound(key, "p99_ms")),
  requests: perRound(key, "requests").reduce((a, b) => a + b, 0),
  rpsByRound: perRound(key, "rps").map((v) => round(v, 2)),
  load1: perRound(key, "load1"),
  busy: perRound(key, "busy"),
});

const betterAuth = `better-auth ${e.BETTER_AUTH_VERSION}`;
function entry(ours, theirs, target, what, connections, extra) {
  const o = figures(ours);
  const t = figures(theirs);
  const ratio = t.rps > 0 ? o.rps / t.rps : 0;
  const byRound = o.rpsByRound.map((v, i) => (t.rpsByRound[i] > 0 ? round(v / t.rpsByRound[i], 3) : null));
  return {
    value: round(o.rps, 2),
    unit: "requests/s",
    baseline: `${betterAuth} ${what} (one Node process, NODE_ENV=production), wrk -t${e.THREADS} -c${connections}, same run; ratio = ours ÷ theirs, higher is better`,
    baselineValue: round(t.rps, 2),
    ratio: round(ratio, 3),
    target: `≥ ${num(target)} ×`,
    met: t.rps > 0 && ratio >= num(target),
    p50Ms: round(o.p50, 3),
    p99Ms: round(o.p99, 3),
    baselineP50Ms: round(t.p50, 3),
    baselineP99Ms: round(t.p99, 3),
    requests: o.requests,
    baselineRequests: t.requests,
    runs: rounds,
    secondsEach: num("SECONDS_EACH"),
    valueByRun: o.rpsByRound,
    baselineValueByRun: t.rpsByRound,
    ratioByRun: byRound,
    load1: o.load1,
    baselineLoad1: t.load1,
    cpuBusyBeforePct: o.busy,
    baselineCpuBusyBeforePct: t.busy,
    ...extra,
    date: e.WHEN,
    commit: e.COMMIT,
  };
}

const results = {
  get_session_vs_better_auth: entry("get_session_ours", "get_session_theirs", "TARGET_GET_SESSION",
    "GET /api/auth/get-session", e.GET_CONNECTIONS,
    { peakRssMiB: num("AUTH_HWM"), baselinePeakRssMiB: num("BETTER_AUTH_HWM") }),
  me_vs_better_auth: entry("me_ours", "get_session_theirs", "TARGET_ME",
    "GET /api/auth/get-session", e.GET_CONNECTIONS,
    { peakRssMiB: num("NUTRITION_HWM"), baselinePeakRssMiB: num("BETTER_AUTH_HWM") }),
  sign_in_vs_better_auth: entry("sign_in_ours", "sign_in_theirs", "TARGET_SIGN_IN",
    "POST /api/auth/sign-in/email with its default scrypt N=16384 r=16 p=1", e.SIGN_IN_CONNECTIONS,
    { notes: `ours verifies ${e.OUR_HASH} (argon2id, 19 MiB, 2 passes); better-auth scrypt N=16384 r=16 p=1 (32 MiB)` }),
};
writeFileSync(e.RESULTS, JSON.stringify(results, null, 2) + "\n");

const f = (v, d) => v.toFixed(d);
const range = (values) => (Math.min(...values) === Math.max(...values)
  ? `${Math.min(...values)}` : `${Math.min(...values)}–${Math.max(...values)}`);
const row = (label, key, connections, digits) => {
  const x = figures(key);
  return `| ${label} | ${connections} | ${f(x.rps, digits)} | ${x.rpsByRound.map((v) => f(v, digits)).join(", ")} | ${f(x.p50, 2)} | ${f(x.p99, 2)} | ${range(x.load1)} / ${range(x.busy)} % |`;
};
const c = e.GET_CONNECTIONS;
const s = e.SIGN_IN_CONNECTIONS;
const ratioRow = (label, name) => {
  const r = results[name];
  return `| ${label} (\`${name}\`) | ${f(r.ratio, 2)} | ${r.ratioByRun.map((v) => (v === null ? "n/a" : f(v, 2))).join(", ")} | ${r.target} | ${r.met ? "yes" : "no"} |`;
};
const tables = [
  "| Measurement | Connections | Rate (/s), median | Each round | p50 (ms) | p99 (ms) | Load 1 min / CPUs busy before |",
  "|---|--:|--:|--:|--:|--:|--:|",
  row("our `GET /api/auth/get-session` (auth)", "get_session_ours", c, 0),
  row("better-auth `GET /api/auth/get-session`", "get_session_theirs", c, 0),
  row("our `GET /me` (nutrition-api)", "me_ours", c, 0),
  row("our `POST /api/auth/sign-in/email` (auth)", "sign_in_ours", s, 1),
  row("better-auth `POST /api/auth/sign-in/email`", "sign_in_theirs", s, 1),
  "",
  "| Ours ÷ better-auth's | Ratio of medians | Each round | Target | Met |",
  "|---|--:|--:|--:|:-:|",
  ratioRow("get-session ÷ get-session", "get_session_vs_better_auth"),
  ratioRow("`GET /me` ÷ get-session", "me_vs_better_auth"),
  ratioRow("sign-in ÷ sign-in", "sign_in_vs_better_auth"),
].join("\n");
writeFileSync(e.TABLES, tables + "\n");

for (const [name, r] of Object.entries(results)) {
  console.log(`${name}: ${r.value} vs ${r.baselineValue} ${r.unit} = ${r.ratio} × (target ${r.target}, ${r.runs} round(s)): ${r.met ? "met" : "NOT met"}`);
}
