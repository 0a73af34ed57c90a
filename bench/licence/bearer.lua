-- wrk script: POST (or GET, from BENCH_METHOD) to BENCH_PATH with a Bearer token taken in turn
-- from the file TOKENS, so that every request belongs to a real activation and no single
-- licence's daily quota runs out during the run. Each token's requests come, through the
-- trusted proxy on 127.0.0.1, from an address of its own (X-Forwarded-For), as the desktop
-- apps of many customers would: the per-address rate limit counts them apart.
dofile(os.getenv("REPORT_LUA"))

local tokens = {}
for line in io.lines(os.getenv("TOKENS")) do
  if #line > 0 then tokens[#tokens + 1] = line end
end
local path = os.getenv("BENCH_PATH")
local method = os.getenv("BENCH_METHOD") or "POST"
-- Built on first use: wrk fills in its default headers (Host) only after the script loads.
local requests = nil
local i = 0

local function build()
  requests = {}
  for n, token in ipairs(tokens) do
    local addr = string.format("10.%d.%d.%d", math.floor(n / 65536) % 256, math.floor(n / 256) % 256, n % 256)
    requests[n] = wrk.format(method, path, {
      ["Authorization"] = "Bearer " .. token,
      ["X-Forwarded-For"] = addr,
    }, "")
  end
  i = math.random(#requests)
end

request = function()
  if requests == nil then build() end
  i = i % #requests + 1
  return requests[i]
end
