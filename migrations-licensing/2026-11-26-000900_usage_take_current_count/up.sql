-- licence_usage_take reads the count it reports on a refusal with a locking read.
--
-- A refusal used to read the day's count with a plain SELECT, which InnoDB answers from the
-- statement's snapshot. When the function is called from a statement that has already read
-- other tables (the licence and the installation's seat, read in the same statement so that a
-- consumption is one round trip), that snapshot predates the units other requests took since,
-- and a refused request could report, say, 4 units used of a quota of 10. The INSERT … ON
-- DUPLICATE KEY UPDATE before it holds the row's exclusive lock whether or not it changed the
-- row, so a FOR UPDATE read costs no wait and sees the count the refusal was decided on.
DROP FUNCTION IF EXISTS licence_usage_take;
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
    SELECT used INTO v_used FROM daily_usage
      WHERE licence_id = p_licence AND day = p_day FOR UPDATE;
    RETURN -1 - v_used;
END;
