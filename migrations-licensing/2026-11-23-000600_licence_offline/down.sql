DROP TABLE IF EXISTS refunded_order;
DROP TABLE IF EXISTS licence_rate_limit;
DROP TABLE IF EXISTS usage_idempotency;
DROP TABLE IF EXISTS licence_deactivation;
