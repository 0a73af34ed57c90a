-- The rate-limit counters move to a MEMORY table. Every licence request counts itself here, so
-- on InnoDB each one paid for a redo-log write and flush of a row nobody needs after a restart;
-- in memory the count is a few microseconds under the table's lock, still one table that every
-- replica shares. A database restart empties it, which only starts every window afresh.
-- The longest bucket is `licence:` or `webhook:` and an IPv6 address in text (at most 45
-- characters); MEMORY rows are fixed-width, so the key is ASCII and no wider than needed.
-- The table may grow to 256 MiB (a million addresses a day; counters older than a day are
-- pruned): MEMORY takes its ceiling from the session that creates it.
SET SESSION max_heap_table_size = 268435456;
DROP TABLE licence_rate_limit;
CREATE TABLE licence_rate_limit (
    bucket        VARCHAR(64)  NOT NULL,
    window_start  DATETIME(6)  NOT NULL,
    hits          INT          NOT NULL,
    PRIMARY KEY (bucket) USING HASH,
    INDEX licence_rate_limit_window_idx (window_start) USING BTREE
) ENGINE = MEMORY DEFAULT CHARSET = ascii COLLATE = ascii_bin;
