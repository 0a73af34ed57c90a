-- Loaded by the wrk scripts of this folder. When the run ends it prints one line that
-- bench/licence/run reads, with the exact figures of wrk's latency histogram:
--   RESULT requests=N seconds=S rps=R p50_ms=X p99_ms=Y mean_ms=Z status_errors=N
--          connect=N read=N write=N timeout=N
-- status_errors counts answers with a status of 400 or more (wrk's own count). No `response`
-- callback is defined: it would make wrk parse every answer in Lua, which costs wrk CPU that
-- the service under test shares.

function done(summary, latency, requests)
  local seconds = summary.duration / 1e6
  local rps = 0
  if seconds > 0 then
    rps = summary.requests / seconds
  end
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d seconds=%.3f rps=%.2f p50_ms=%.3f p99_ms=%.3f mean_ms=%.3f" ..
    " status_errors=%d connect=%d read=%d write=%d timeout=%d\n",
    summary.requests, seconds, rps,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.mean / 1000,
    e.status, e.connect, e.read, e.write, e.timeout))
end
