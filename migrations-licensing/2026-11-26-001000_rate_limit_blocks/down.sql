DROP FUNCTION IF EXISTS licence_rate_take;
