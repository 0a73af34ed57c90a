-- sysbench script: the baseline of usage-consume, one conditional upsert per event on a
-- (key, day) primary key, as close as plain SQL gets to what the service does per request.
function prepare()
  local con = sysbench.sql.driver():connect()
  con:query([[CREATE TABLE IF NOT EXISTS bench_usage (
    k INT NOT NULL, day DATE NOT NULL, used INT NOT NULL DEFAULT 0,
    PRIMARY KEY (k, day)) ENGINE = InnoDB]])
  con:disconnect()
end

function thread_init()
  con = sysbench.sql.driver():connect()
end

function event()
  con:query(string.format(
    "INSERT INTO bench_usage (k, day, used) VALUES (%d, CURRENT_DATE, 1) " ..
    "ON DUPLICATE KEY UPDATE used = IF(used < 1000000000, used + 1, used)",
    sysbench.rand.uniform(1, 1000)))
end

function thread_done()
  con:disconnect()
end
