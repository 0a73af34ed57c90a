-- sysbench script: the database work of one licence request and nothing else, from a C client,
-- on the database the service has just been measured on. It shows how much of the baseline the
-- statements alone leave, before any HTTP, token or signature:
--   validate  the licence with the installation's seat and the seat count, and once in 64
--             requests a block of the address's rate-limit window (licence_rate_take on the
--             MEMORY table): what a busy address costs the service once its blocks are as large
--             as they get (routes/limits.rs, MAX_BLOCK);
--   consume   the unit taken in the statement that checks the licence and the seat
--             (one statement, usage.rs's TAKE for one licence);
--   seat      validate's seat statement alone: a validate without the per-address count,
--             the least database work any validate of a seat can do.
-- The statements are those of crates/licence-server/src/repo (rate_limit.rs, activations.rs,
-- usage.rs), prepared once per connection as the service keeps them.
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

-- The statement a consumption sends for one licence (usage.rs's TAKE, its one-licence text):
-- it takes the unit only if the licence is on the plan asked, holds the installation's seat
-- and plainly grants access, and answers the count. The run's licences are all Premium
-- (150 units a day, more than these rounds take of any licence), and the day is one of the
-- benchmark's own.
local TAKE_ON_PLAN = [[INSERT INTO daily_usage (licence_id, day, used, updated_at)
  SELECT l.id, ?, LAST_INSERT_ID(1), UTC_TIMESTAMP(6)
  FROM licence l STRAIGHT_JOIN activation a ON a.licence_id = l.id
  WHERE l.id IN (?) AND (l.id, l.plan, a.instance_id) IN ((?, ?, ?))
  AND (? OR (l.status = 'active' AND l.disabled_at IS NULL
  AND (l.expires_at IS NULL OR l.expires_at > ?)))
  ON DUPLICATE KEY UPDATE
  daily_usage.used = IF(daily_usage.used < CASE l.plan WHEN 'basic' THEN 10 WHEN 'pro' THEN 30
  WHEN 'premium' THEN 150 WHEN 'annual' THEN 30 ELSE 0 END,
  LAST_INSERT_ID(daily_usage.used + 1), daily_usage.used + 0 * LAST_INSERT_ID(0)),
  daily_usage.updated_at = IF(LAST_INSERT_ID() > 0, VALUES(updated_at), daily_usage.updated_at)
  RETURNING licence_id, used, CAST(LAST_INSERT_ID() AS SIGNED) AS taken]]

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
    take = con:prepare(TAKE_ON_PLAN)
    take_args = {take:bind_create(sysbench.sql.type.VARCHAR, 10),
                 take:bind_create(sysbench.sql.type.VARCHAR, 36),
                 take:bind_create(sysbench.sql.type.VARCHAR, 36),
                 take:bind_create(sysbench.sql.type.VARCHAR, 16),
                 take:bind_create(sysbench.sql.type.VARCHAR, 191),
                 take:bind_create(sysbench.sql.type.INT),
                 take:bind_create(sysbench.sql.type.VARCHAR, 26)}
    take:bind_param(unpack(take_args))
    take_args[1]:set(sysbench.opt.day)
    take_args[4]:set("premium")
    take_args[5]:set("bench-pc")
    take_args[6]:set(0)
    take_args[7]:set("2000-01-01 00:00:00.000000")
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
    take_args[2]:set(ids[i])
    take_args[3]:set(ids[i])
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
