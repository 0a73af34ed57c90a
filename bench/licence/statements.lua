-- sysbench script: the database work of one licence request and nothing else, from a C client,
-- on the database the service has just been measured on. It shows how much of the baseline the
-- statements alone leave, before any HTTP, token or signature:
--   validate  the rate-limit count of the request's address (MEMORY table) and the licence
--             with the installation's seat and the seat count (two statements);
--   consume   the licence with the seat, then licence_usage_take (two statements).
-- The statements are those of crates/licence-server/src/repo (rate_limit.rs, activations.rs,
-- usage.rs), prepared once per connection as the service keeps them.
--
--   sysbench bench/licence/statements.lua --route=validate|consume [--mysql-* options] run

sysbench.cmdline.options = {
  route = {"validate or consume", "validate"},
  day = {"the day consume counts on (a day of its own, apart from the service's)", "2100-01-01"},
}

local SEAT = [[SELECT l.id, l.license_key, l.status, l.plan, l.customer_email, l.customer_name,
  l.order_id, l.subscription_id, l.variant_id, l.subscription_synced_at, l.expires_at,
  l.disabled_at, l.created_at, l.updated_at, a.id AS a_id, a.instance_name AS a_instance_name,
  a.created_at AS a_created_at, a.last_validated_at AS a_last_validated_at,
  (SELECT COUNT(*) FROM activation s WHERE s.licence_id = l.id) AS seats
  FROM licence l LEFT JOIN activation a ON a.licence_id = l.id AND a.instance_id = ?
  WHERE l.id = ? LIMIT 1]]

local COUNT = [[UPDATE licence_rate_limit SET
  hits = IF(window_start <= UTC_TIMESTAMP(6) - INTERVAL ? SECOND, 1, hits + 1),
  window_start = IF(hits = 1, UTC_TIMESTAMP(6), window_start)
  WHERE bucket = ? AND (hits < ? OR window_start <= UTC_TIMESTAMP(6) - INTERVAL ? SECOND)]]

local TAKE = "SELECT licence_usage_take(?, ?, ?) AS n"

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
    take = con:prepare(TAKE)
    take_args = {take:bind_create(sysbench.sql.type.VARCHAR, 36),
                 take:bind_create(sysbench.sql.type.VARCHAR, 10),
                 take:bind_create(sysbench.sql.type.INT)}
    take:bind_param(unpack(take_args))
    take_args[2]:set(sysbench.opt.day)
    take_args[3]:set(1000000000)
  else
    count = con:prepare(COUNT)
    count_args = {count:bind_create(sysbench.sql.type.INT),
                  count:bind_create(sysbench.sql.type.VARCHAR, 64),
                  count:bind_create(sysbench.sql.type.INT),
                  count:bind_create(sysbench.sql.type.INT)}
    count:bind_param(unpack(count_args))
    count_args[1]:set(60)
    count_args[3]:set(1000000000)
    count_args[4]:set(60)
  end
end

function event()
  local i = sysbench.rand.uniform(1, #ids)
  if sysbench.opt.route == "consume" then
    seat_args[2]:set(ids[i])
    seat:execute()
    take_args[1]:set(ids[i])
    take:execute()
  else
    count_args[2]:set(string.format("licence:10.%d.%d.%d",
      math.floor(i / 65536) % 256, math.floor(i / 256) % 256, i % 256))
    count:execute()
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
