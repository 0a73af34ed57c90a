"""Turns the rounds of bench/auth/run into bench/auth/results.json and the summary's tables.

Each measurement's file holds a `RESULT key=value ...` line; each figure is the median over the
rounds, each ratio the ratio of the two medians, with the ratio of every round beside it.
"""

import json
import os
import statistics

e = os.environ
rounds = range(1, int(e["ROUNDS"]) + 1)
med = statistics.median


def fields(path):
    found = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if parts and parts[0] == "RESULT":
                found.update(p.split("=", 1) for p in parts[1:])
    return found


def per_round(what, key, prefix=""):
    return [float(fields(f"{e['WORK']}/{prefix}{what}_r{r}.txt")[key]) for r in rounds]


def context(what, key):
    return per_round(what, key, "context-")


def by_round(ours, base):
    return [round(o / b, 3) for o, b in zip(ours, base)]


pg, pg_p50, pg_p99 = (per_round("pgbench", k) for k in ("rps", "p50_ms", "p99_ms"))
me, me_p50, me_p99 = (per_round("me", k) for k in ("rps", "p50_ms", "p99_ms"))
raw = per_round("argon2", "rate")
si, si_p50, si_p99 = (per_round("sign_in", k) for k in ("rps", "p50_ms", "p99_ms"))
me_requests = int(sum(per_round("me", "requests")))
si_requests = int(sum(per_round("sign_in", "requests")))
me_ratio, si_ratio = med(me) / med(pg), med(si) / med(raw)
each_round = f"{e['SECONDS_EACH']} s a round, median of {len(rounds)} rounds"


def memory(value, limit, what, load):
    return {
        "value": round(value, 1), "unit": "MiB", "baseline": "limit", "baselineValue": limit,
        "ratio": round(value / limit, 3), "target": f"≤ {limit} MiB", "met": value <= limit,
        "load1": load, "notes": what,
    }


results = {
    "me_vs_pgbench": {
        "value": round(med(me), 1), "unit": "requests/s",
        "baseline": f"pgbench -S (one indexed SELECT per transaction), {e['PGBENCH_CLIENTS']} clients, tx/s",
        "baselineValue": round(med(pg), 1), "ratio": round(me_ratio, 4),
        "target": "≥ 0.5 × and p99 < 10 ms", "met": me_ratio >= 0.5 and med(me_p99) < 10,
        "p50Ms": round(med(me_p50), 3), "p99Ms": round(med(me_p99), 3),
        "baselineP99Ms": round(med(pg_p99), 3), "ratioByRound": by_round(me, pg),
        "requests": me_requests, "load1": med(context("me", "load1")),
        "baselineLoad1": med(context("pgbench", "load1")),
        "notes": f"GET /me on nutrition-api, wrk 2 threads, {e['ME_CONNECTIONS']} connections, "
                 f"{each_round}; DATABASE_POOL_SIZE {e['POOL_SIZE']}, HTTP_WORKERS {e['ME_WORKERS']}",
    },
    "sign_in_vs_argon2": {
        "value": round(med(si), 1), "unit": "requests/s",
        "baseline": f"raw argon2id verifications/s (m=19456, t=2, p=1), {e['HASH_WORKERS']} threads",
        "baselineValue": round(med(raw), 1), "ratio": round(si_ratio, 4),
        "target": "≥ 0.8 ×", "met": si_ratio >= 0.8,
        "p99Ms": round(med(si_p99), 1), "ratioByRound": by_round(si, raw),
        "requests": si_requests, "load1": med(context("sign_in", "load1")),
        "baselineLoad1": med(context("argon2", "load1")),
        "notes": f"POST /api/auth/sign-in/email, wrk 2 threads, {e['SIGN_IN_CONNECTIONS']} connections, "
                 f"{each_round}; AUTH_HASH_CONCURRENCY {e['HASH_WORKERS']}",
    },
    "memory_auth_idle": memory(
        float(e["AUTH_IDLE"]), 20, "auth VmRSS after start-up, readiness and a handful of requests",
        med(context("me", "load1"))),
    "memory_auth_load": memory(
        float(e["AUTH_LOAD"]), 60, "auth VmHWM after the sign-in load", med(context("sign_in", "load1"))),
    "memory_nutrition_api_idle": memory(
        float(e["NUTRITION_IDLE"]), 20,
        "nutrition-api VmRSS after start-up, readiness and a handful of GET /me", med(context("me", "load1"))),
    "memory_nutrition_api_load": memory(
        float(e["NUTRITION_LOAD"]), 60, "nutrition-api VmHWM after the GET /me load", med(context("me", "load1"))),
}
with open(e["RESULTS"], "w") as out:
    json.dump(results, out, indent=2, ensure_ascii=False)
    out.write("\n")
for name, r in results.items():
    print(f"{name}: {r['value']} {r['unit']} vs {r['baselineValue']} ({r['baseline']}): "
          f"ratio {r['ratio']}, target {r['target']}: {'met' if r['met'] else 'NOT met'}")


def each(values, digits):
    return ", ".join(f"{v:.{digits}f}" for v in values)


def row(label, load, what, values, p50, p99, digits):
    before = ", ".join(f"{l:g} / {b:g} %" for l, b in zip(context(what, "load1"), context(what, "busy")))
    latency = lambda v: "" if v is None else f"{med(v):.2f}"
    return (f"| {label} | {load} | {med(values):.{digits}f} | {each(values, digits)} | "
            f"{latency(p50)} | {latency(p99)} | {before} |")


def met(name):
    return "yes" if results[name]["met"] else "no"


threads = e["THREADS"]
lines = [
    "| Measurement | Load | Rate (/s), median | Each round | p50 (ms) | p99 (ms) | Load 1 min / CPUs busy before |",
    "|---|---|--:|---|--:|--:|---|",
    row("`pgbench -S` (baseline), tx", f"{e['PGBENCH_CLIENTS']} clients, {threads} threads",
        "pgbench", pg, pg_p50, pg_p99, 0),
    row("`GET /me` (nutrition-api)", f"wrk {threads} threads, {e['ME_CONNECTIONS']} connections",
        "me", me, me_p50, me_p99, 0),
    row("argon2id verify (baseline)", f"{e['HASH_WORKERS']} threads, m=19456 t=2 p=1",
        "argon2", raw, None, None, 1),
    row("`POST /api/auth/sign-in/email` (auth)", f"wrk {threads} threads, {e['SIGN_IN_CONNECTIONS']} connections",
        "sign_in", si, si_p50, si_p99, 1),
    "",
    "| Benchmark | Figure (ratio of the medians) | Each round | Target | Met |",
    "|---|--:|---|---|:-:|",
    f"| `me_vs_pgbench` | {me_ratio:.3f} × pgbench -S, p99 {med(me_p99):.2f} ms | "
    f"{each(by_round(me, pg), 3)} | ≥ 0.5 × and p99 < 10 ms | {met('me_vs_pgbench')} |",
    f"| `sign_in_vs_argon2` | {si_ratio:.3f} × raw argon2id | {each(by_round(si, raw), 3)} | ≥ 0.8 × | "
    f"{met('sign_in_vs_argon2')} |",
]
for name in ("memory_auth_idle", "memory_auth_load", "memory_nutrition_api_idle", "memory_nutrition_api_load"):
    r = results[name]
    kind = "VmRSS" if name.endswith("idle") else "VmHWM"
    lines.append(f"| `{name}` | {r['value']} MiB {kind} | | {r['target']} | {met(name)} |")
lines += [
    "",
    f"All {me_requests} `GET /me` and {si_requests} sign-in responses were 2xx, with no socket error.",
    "pgbench's percentiles come from one transaction in ten; wrk's are exact.",
]
with open(e["TABLES"], "w") as out:
    out.write("\n".join(lines) + "\n")
