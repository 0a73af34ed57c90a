-- A push subscription belongs to the session that registered it: when that session ends (signed
-- out, closed from another device, expired, replaced), the browser must stop receiving the
-- person's reminders, whoever uses it next. The foreign key makes every way a session row goes
-- (auth's routes, expiry, the cap per person, account deletion) take its devices along.
-- Devices registered before this column have none and stay until removed as before.
ALTER TABLE nutrition.device_token
    ADD COLUMN session_id TEXT REFERENCES auth.session (id) ON DELETE CASCADE;
CREATE INDEX device_token_session_idx ON nutrition.device_token (session_id);
