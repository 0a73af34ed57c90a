-- Loaded by the wrk scripts of this folder. When the run ends it prints one line that
-- bench/licence/run reads, with the exact figures of wrk's latency histogram:
--   RESULT requests=N seconds=S rps=R p50_ms=X p99_ms=Y mean_ms=Z status_errors=N
--          connect=N read=N write=N timeout=N
-- status_errors counts answers with a status of 400 or more (wrk's own count). No `response`
-- callback is defined: it would make wrk parse every answer in Lua, which costs wrk CPU that
-- the service under test shares.

local dir = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
dofile(dir .. "/../lib/result.lua")

function done(summary, latency, requests)
  write_result(summary, latency, string.format("status_errors=%d", summary.errors.status))
end
