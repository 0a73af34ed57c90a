-- Taking one unit of a licence's daily quota as a function, so that a consumption counts and
-- learns the new count in one round trip instead of three (the conditional UPDATE, then
-- SELECT LAST_INSERT_ID(), and on a day's first request an INSERT and the UPDATE again).
--
-- licence_usage_take(licence, day, limit) takes a unit of `p_licence`'s quota on `p_day` if fewer
-- than `p_limit` are used, and returns the new count (at least 1) when it did, -1 - used when
-- the limit was already reached.
--
-- One INSERT … ON DUPLICATE KEY UPDATE does it: the day's first request creates the row with 1,
-- every later one increments it only while below the limit, under the row's exclusive lock, so
-- however many requests arrive at once the count never passes the limit. Unlike an UPDATE that
-- finds no row followed by an INSERT, it takes no gap lock that two first requests of a day
-- could deadlock on (the statement is one transaction, so such locks would last until it ends).
-- LAST_INSERT_ID(expr) marks what happened: the inserted 1, the incremented count, or 0 when
-- the row stayed as it was. A refusal then reads the count under the lock the statement holds.
--
-- The parameters carry the character set and collation of the columns they are compared with,
-- so that the lookup stays on the key. SQL SECURITY INVOKER: it runs with the caller's rights,
-- so nothing depends on the account that created it. With the binary log on, MariaDB accepts a
-- function that writes only from an account with SUPER or with log_bin_trust_function_creators.
CREATE FUNCTION licence_usage_take(
    p_licence CHAR(36) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, p_day DATE, p_limit INT
) RETURNS BIGINT
    NOT DETERMINISTIC MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
    DECLARE v_used INT DEFAULT 0;
    IF p_limit < 1 THEN
        SELECT COALESCE(MAX(used), 0) INTO v_used FROM daily_usage
          WHERE licence_id = p_licence AND day = p_day;
        RETURN -1 - v_used;
    END IF;
    INSERT INTO daily_usage (licence_id, day, used)
      VALUES (p_licence, p_day, LAST_INSERT_ID(1))
      ON DUPLICATE KEY UPDATE
        used = IF(used < p_limit, LAST_INSERT_ID(used + 1), used + 0 * LAST_INSERT_ID(0)),
        updated_at = IF(LAST_INSERT_ID() > 0, UTC_TIMESTAMP(6), updated_at);
    IF LAST_INSERT_ID() > 0 THEN RETURN LAST_INSERT_ID(); END IF;
    SELECT used INTO v_used FROM daily_usage WHERE licence_id = p_licence AND day = p_day;
    RETURN -1 - v_used;
END;
