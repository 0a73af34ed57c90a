-- GET with the session cookie given to wrk with -H "Cookie: ...": nothing to set up here, only
-- the 2xx check and the result line of report.lua.
--   wrk -t2 -c64 -d10s --latency -H "Cookie: NAME=VALUE" -s bench/auth/me.lua http://127.0.0.1:PORT/me
local dir = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
dofile(dir .. "/report.lua")
