-- Two-factor sign-in (better-auth's twoFactor plugin): a flag on the user, and one row per user
-- with the authenticator secret, sealed with a key derived from AUTH_SECRET (a copy of the table
-- alone yields no code), and the unused backup codes as keyed digests.
ALTER TABLE auth."user" ADD COLUMN two_factor_enabled boolean NOT NULL DEFAULT false;

CREATE TABLE auth.two_factor (
    id text PRIMARY KEY,
    user_id text NOT NULL UNIQUE REFERENCES auth."user" (id) ON DELETE CASCADE,
    -- AES-256-GCM: base64url(nonce ‖ ciphertext) of the secret.
    secret text NOT NULL,
    -- One keyed digest per unused backup code; a used code is removed.
    backup_codes text[] NOT NULL,
    -- false until a first code proves the authenticator holds the secret.
    verified boolean NOT NULL DEFAULT false,
    -- Wrong codes in a row at sign-in; ten lock the account's verifications for 15 minutes.
    failed_verification_count integer NOT NULL DEFAULT 0,
    locked_until timestamptz,
    created_at timestamptz NOT NULL DEFAULT now()
);
