DROP INDEX IF EXISTS nutrition.device_token_session_idx;
ALTER TABLE nutrition.device_token DROP COLUMN IF EXISTS session_id;
