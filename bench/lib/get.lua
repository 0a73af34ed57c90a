-- GET with the session cookie given to wrk with -H "Cookie: ..."; every 2xx body must contain
-- the text given after `--` (the user's e-mail address), else it counts as unexpected:
--   wrk -t2 -c64 -d10s --latency -H "Cookie: NAME=VALUE" -s bench/lib/get.lua URL -- EMAIL
local dir = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
dofile(dir .. "/report.lua")

function init(args)
  expected = args[1]
  if not expected or expected == "" then
    error("get.lua needs the text every response must contain after `--`")
  end
end
