DROP TABLE auth.activity;
ALTER TABLE auth.session DROP COLUMN proven_at;
