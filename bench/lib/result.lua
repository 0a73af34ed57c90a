-- The RESULT line every wrk script here prints when the run ends (loaded with dofile), with the
-- exact figures of wrk's latency histogram; the bench/<group>/run scripts read it with result():
--   RESULT requests=N seconds=S rps=R p50_ms=X p99_ms=Y mean_ms=Z <extra> connect=N read=N
--          write=N timeout=N
-- Latencies are in milliseconds; `extra` is the caller's own counts, already formatted.
function write_result(summary, latency, extra)
  local seconds = summary.duration / 1e6
  local rps = 0
  if seconds > 0 then
    rps = summary.requests / seconds
  end
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d seconds=%.3f rps=%.2f p50_ms=%.3f p99_ms=%.3f mean_ms=%.3f %s" ..
    " connect=%d read=%d write=%d timeout=%d\n",
    summary.requests, seconds, rps,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.mean / 1000,
    extra, e.connect, e.read, e.write, e.timeout))
end
