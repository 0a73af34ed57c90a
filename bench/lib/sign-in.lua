-- POST /api/auth/sign-in/email with one user's credentials, given after `--`; every 2xx body
-- must contain the e-mail address (both products answer with the signed-in user):
--   wrk -t2 -c16 -d10s --latency -s bench/lib/sign-in.lua URL -- EMAIL PASSWORD
-- Every request is a full sign-in: user lookup, password verification, a new session row.
local dir = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
dofile(dir .. "/report.lua")

local function json_string(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    return string.format("\\u%04x", c:byte())
  end) .. '"'
end

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"

function init(args)
  local email, password = args[1], args[2]
  if not email or not password then
    error("sign-in.lua needs the e-mail address and the password after `--`")
  end
  expected = email
  wrk.body = '{"email":' .. json_string(email) .. ',"password":' .. json_string(password) .. '}'
end
