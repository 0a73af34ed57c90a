-- The function as 2026-11-26-000900_usage_take_current_count left it.
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
