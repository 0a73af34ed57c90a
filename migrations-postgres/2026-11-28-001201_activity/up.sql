-- Freshness: when the session's owner last proved who they are on it (a password, an e-mailed
-- code) without signing in again; such a proof keeps a session older than a day fresh for
-- five minutes (CONTRACT section 10).
ALTER TABLE auth.session ADD COLUMN proven_at timestamptz;

-- The security activity of an account, kept 90 days: sign-ins, failed ones, and every change
-- a person would want to know about. The address is stored as its network only (/24, /48).
CREATE TABLE auth.activity (
    id text PRIMARY KEY,
    user_id text NOT NULL REFERENCES auth."user" (id) ON DELETE CASCADE,
    kind text NOT NULL CHECK (kind IN ('sign_in', 'sign_in_failed', 'password_changed',
        'email_changed', 'two_factor_enabled', 'two_factor_disabled', 'passkey_added',
        'passkey_removed', 'sessions_revoked', 'export')),
    at timestamptz NOT NULL,
    user_agent text,
    ip text
);
CREATE INDEX activity_user_at ON auth.activity (user_id, at DESC);

-- nutrition-api's export carries the activity and whether two-factor is on (never its secret
-- or codes), and records the export itself.
GRANT SELECT, INSERT ON auth.activity TO nutrition_api_svc;
GRANT SELECT (user_id, verified, created_at) ON auth.two_factor TO nutrition_api_svc;
