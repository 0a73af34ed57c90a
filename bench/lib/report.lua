-- Shared by the wrk scripts of bench/lib (loaded with dofile). In every wrk thread it counts
-- the responses whose status is outside 2xx, and the 2xx responses whose body lacks the text
-- the script expects (the signed-up user's e-mail address): a get-session answering `null`
-- is a 200 too, and a figure made of such answers would measure nothing. When the run ends it
-- prints one line that the bench/<group>/run scripts read, with the exact figures of wrk's histogram:
--   RESULT requests=N seconds=S rps=R p50_ms=X p99_ms=Y mean_ms=Z non_2xx=N first_bad=STATUS
--          unexpected=N connect=N read=N write=N timeout=N
-- Latencies are in milliseconds; first_bad is 0 when every response was 2xx.

dofile((debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or ".") .. "/result.lua")

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

-- Per-thread globals, read back through thread:get in done(). `expected` is set by the
-- script's init() in each thread.
non_2xx = 0
first_bad = 0
unexpected = 0
expected = nil

function response(status, headers, body)
  if status < 200 or status > 299 then
    non_2xx = non_2xx + 1
    if first_bad == 0 then
      first_bad = status
    end
  elseif expected and not (body and body:find(expected, 1, true)) then
    unexpected = unexpected + 1
  end
end

function done(summary, latency, requests)
  local bad, first, missing = 0, 0, 0
  for _, thread in ipairs(threads) do
    bad = bad + (thread:get("non_2xx") or 0)
    missing = missing + (thread:get("unexpected") or 0)
    local status = thread:get("first_bad") or 0
    if first == 0 and status ~= 0 then
      first = status
    end
  end
  write_result(summary, latency,
    string.format("non_2xx=%d first_bad=%d unexpected=%d", bad, first, missing))
end
