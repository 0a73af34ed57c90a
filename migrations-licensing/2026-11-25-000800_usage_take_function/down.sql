DROP FUNCTION IF EXISTS licence_usage_take;
