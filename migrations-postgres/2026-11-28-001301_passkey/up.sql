-- Passkeys (WebAuthn credentials), as better-auth's passkey plugin lists them. `credential` is
-- the verifier's own record of the key (webauthn-rs's `Passkey`: the public key, its algorithm
-- and counter), which every sign-in checks against and updates; the other columns are what the
-- list answers. A credential id belongs to one account only.
CREATE TABLE auth.passkey (
    id text PRIMARY KEY,
    user_id text NOT NULL REFERENCES auth."user" (id) ON DELETE CASCADE,
    name text,
    credential_id text NOT NULL UNIQUE,
    public_key text NOT NULL,
    credential jsonb NOT NULL,
    counter bigint NOT NULL DEFAULT 0,
    device_type text NOT NULL,
    backed_up boolean NOT NULL,
    transports text,
    aaguid text,
    created_at timestamptz NOT NULL
);
CREATE INDEX passkey_user ON auth.passkey (user_id);

-- The export lists a person's passkeys (never the verifier's record).
GRANT SELECT (id, user_id, name, device_type, backed_up, transports, aaguid, created_at)
    ON auth.passkey TO nutrition_api_svc;
