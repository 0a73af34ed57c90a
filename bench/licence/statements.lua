-- sysbench script: the database work of one licence request and nothing else, from a C client,
-- on the database the service has just been measured on. It shows how much of the baseline the
-- statements alone leave, before any HTTP, token or signature:
--   validate  the licence with the installation's seat and the seat count, and once in 64
--             requests a block of the address's rate-limit window (licence_rate_take on the
--             MEMORY table): what a busy address costs the service once its blocks are as large
--             as they get (routes/limits.rs, MAX_BLOCK);
--   consume   the licence with the seat, taking the unit in the same statement through
--             licence_usage_take (one statement, activations.rs's SEAT_AND_TAKE);
--   seat      validate's seat statement alone: a validate without the per-address count,
--             the least database work any validate of a seat can do.
-- The statements are those of crates/licence-server/src/repo (rate_limit.rs, activations.rs),
-- prepared once per connection as the service keeps them.
--
--   sysbench bench/licence/statements.lua --route=validate|consume|seat [--mysql-* options] run

sysbench.cmdline.options = {
  route = {"validate, consume or seat", "validate"},
  day = {"the day consume counts on (a day of its own, apart from the service's)", "2100-01-01"},
}

local SEAT = [[SELECT l.id, l.license_key, l.status, l.plan, l.expires_at, l.disabled_at,
  a.id AS a_id, a.instance_name AS a_instance_name,
  a.created_at AS a_created_at, a.last_validated_at AS a_last_validated_at, l.seats
  FROM licence l LEFT JOIN activation a ON a.licence_id = l.id AND a.instance_id = ?
  WHERE l.id = ? LIMIT 1]]

local TAKE = [[SELECT licence_rate_take(?, ?, ?, ?) AS taken]]

-- The quotas bound in the order of the CASE (basic, pro, premium, annual) are the service's;
-- the run's licences are all Premium, and the day is one of the benchmark's own.
local SEAT_AND_TAKE = [[SELECT l.id, l.license_key, l.status, l.plan, l.expires_at,
  l.disabled_at, a.id AS a_id,
  a.instance_name AS a_instance_name, a.created_at AS a_created_at,
  a.last_validated_at AS a_last_validated_at,
  IF(a.id IS NOT NULL AND l.status = 'active' AND l.disabled_at IS NULL
     AND (l.expires_at IS NULL OR l.expires_at > ?)
     AND l.plan IN ('basic', 'pro', 'premium', 'annual'),
   licence_usage_take(l.id, ?, CASE l.plan WHEN 'basic' THEN ? WHEN 'pro' THEN ?
     WHEN 'premium' THEN ? WHEN 'annual' THEN ? END),
   NULL) AS taken
  FROM licence l LEFT JOIN activation a ON a.licence_id = l.id AND a.instance_id = ?
  WHERE l.id = ? LIMIT 1]]

function thread_init()
  con = sysbench.sql.driver():connect()
  -- The licences in the order bench/licence/run activated them, so that licence i counts in
  -- the bucket of the address its activation came from.
  ids = {}
  local rs = con:query("SELECT id FROM licence ORDER BY license_key")
  for i = 1, rs.nrows do
    ids[i] = unpack(rs:fetch_row(), 1, 1)
  end
  if #ids == 0 then
    error("no licences in this database")
  end
  seat = con:prepare(SEAT)
  seat_args = {seat:bind_create(sysbench.sql.type.VARCHAR, 191),
               seat:bind_create(sysbench.sql.type.VARCHAR, 36)}
  seat:bind_param(unpack(seat_args))
  seat_args[1]:set("bench-pc")
  if sysbench.opt.route == "consume" then
    take = con:prepare(SEAT_AND_TAKE)
    take_args = {take:bind_create(sysbench.sql.type.VARCHAR, 26),
                 take:bind_create(sysbench.sql.type.VARCHAR, 10)}
    for _ = 1, 4 do
      take_args[#take_args + 1] = take:bind_create(sysbench.sql.type.INT)
    end
    take_args[7] = take:bind_create(sysbench.sql.type.VARCHAR, 191)
    take_args[8] = take:bind_create(sysbench.sql.type.VARCHAR, 36)
    take:bind_param(unpack(take_args))
    take_args[1]:set("2000-01-01 00:00:00.000000")
    take_args[2]:set(sysbench.opt.day)
    -- No quota stops this measurement, as none stops the service's.
    for q = 3, 6 do
      take_args[q]:set(1000000000)
    end
    take_args[7]:set("bench-pc")
  elseif sysbench.opt.route == "validate" then
    count = con:prepare(TAKE)
    count_args = {count:bind_create(sysbench.sql.type.VARCHAR, 64),
                  count:bind_create(sysbench.sql.type.INT),
                  count:bind_create(sysbench.sql.type.INT),
                  count:bind_create(sysbench.sql.type.INT)}
    count:bind_param(unpack(count_args))
    count_args[2]:set(1000000000)
    count_args[3]:set(60)
    count_args[4]:set(64)
  end
end

function event()
  local i = sysbench.rand.uniform(1, #ids)
  if sysbench.opt.route == "consume" then
    take_args[8]:set(ids[i])
    take:execute()
  else
    if count and sysbench.rand.uniform(1, 64) == 1 then
      count_args[1]:set(string.format("licence:10.%d.%d.%d",
        math.floor(i / 65536) % 256, math.floor(i / 256) % 256, i % 256))
      count:execute()
    end
    seat_args[2]:set(ids[i])
    seat:execute()
  end
end

function thread_done()
  seat:close()
  if take then take:close() end
  if count then count:close() end
  con:disconnect()
end
