-- wrk script: POST (or GET, from BENCH_METHOD) to BENCH_PATH with a Bearer token taken in turn
-- from the file TOKENS, so that every request belongs to a real activation and no single
-- licence's daily quota runs out during the run.
local tokens = {}
for line in io.lines(os.getenv("TOKENS")) do
  if #line > 0 then tokens[#tokens + 1] = line end
end
local path = os.getenv("BENCH_PATH")
local method = os.getenv("BENCH_METHOD") or "POST"
local i = math.random(#tokens)

request = function()
  i = i % #tokens + 1
  return wrk.format(method, path, { ["Authorization"] = "Bearer " .. tokens[i] }, "")
end
