-- licence_rate_take hands a replica a block of a window's requests at once, so that an address
-- that asks often costs the shared counter one statement per block rather than one per request.
--
-- `hits` now counts the requests handed out (to any replica) in the address's window. A call
-- asks for up to p_want of them and gets at most an eighth of what is left of the window's
-- limit, and at least one while anything is left: near the limit blocks shrink to single
-- requests, so a replica never holds much that another replica's client could have used, and
-- no window ever hands out more than the limit, whichever replica asks.
--
-- The answer is one BIGINT, because diesel's prepared statements cannot read back the result
-- of a prepared CALL: granted * 1e9 + the milliseconds left in the window when something was
-- granted, the milliseconds left alone when the window is spent, and -1 when the address is
-- new and every counter of the (MEMORY, fixed-size) table is live.
--
-- The function is called alone in its statement, so the MEMORY table's lock (taken for the
-- whole statement, table-wide) is held only for the function itself; that lock also makes the
-- read and the write below one step that no other call can come between.
DROP FUNCTION IF EXISTS licence_rate_take;
CREATE FUNCTION licence_rate_take(
    p_bucket VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin, p_max INT, p_window INT, p_want INT
) RETURNS BIGINT
    NOT DETERMINISTIC MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
    DECLARE v_now DATETIME(6) DEFAULT UTC_TIMESTAMP(6);
    DECLARE v_found INT DEFAULT 1;
    DECLARE v_full INT DEFAULT 0;
    DECLARE v_hits INT DEFAULT 0;
    DECLARE v_start DATETIME(6);
    DECLARE v_grant INT;
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = 0;
    DECLARE CONTINUE HANDLER FOR 1114 SET v_full = 1;
    SELECT hits, window_start INTO v_hits, v_start FROM licence_rate_limit
      WHERE bucket = p_bucket;
    IF v_found = 0 THEN
        SET v_grant = LEAST(GREATEST(p_want, 1), GREATEST(1, p_max DIV 8));
        INSERT INTO licence_rate_limit (bucket, window_start, hits)
          VALUES (p_bucket, v_now, v_grant);
        IF v_full = 1 THEN
            -- Counters whose window has ended count nothing any more: make room, once.
            DELETE FROM licence_rate_limit
              WHERE window_start <= v_now - INTERVAL p_window SECOND;
            SET v_full = 0;
            INSERT INTO licence_rate_limit (bucket, window_start, hits)
              VALUES (p_bucket, v_now, v_grant);
            IF v_full = 1 THEN RETURN -1; END IF;
        END IF;
        RETURN v_grant * 1000000000 + p_window * 1000;
    END IF;
    IF v_start <= v_now - INTERVAL p_window SECOND THEN
        SET v_start = v_now, v_hits = 0;
    END IF;
    IF v_hits >= p_max THEN
        RETURN GREATEST(0, TIMESTAMPDIFF(MICROSECOND, v_now, v_start + INTERVAL p_window SECOND)
          DIV 1000);
    END IF;
    SET v_grant = LEAST(GREATEST(p_want, 1), GREATEST(1, (p_max - v_hits) DIV 8));
    UPDATE licence_rate_limit SET hits = v_hits + v_grant, window_start = v_start
      WHERE bucket = p_bucket;
    RETURN v_grant * 1000000000
      + GREATEST(0, TIMESTAMPDIFF(MICROSECOND, v_now, v_start + INTERVAL p_window SECOND) DIV 1000);
END;
