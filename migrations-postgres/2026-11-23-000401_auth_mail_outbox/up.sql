-- E-mail of the auth service (password resets, address verification), queued in the transaction
-- that causes it and delivered by the background sender of any replica (crates/mailer).
CREATE TABLE auth.mail_outbox (
    id               BIGSERIAL   PRIMARY KEY,
    -- What the mail is for: 'password_reset', 'email_verification'.
    kind             TEXT        NOT NULL,
    to_address       TEXT        NOT NULL,
    to_name          TEXT        NULL,
    subject          TEXT        NOT NULL,
    text_body        TEXT        NOT NULL,
    html_body        TEXT        NOT NULL,
    attempts         INTEGER     NOT NULL DEFAULT 0,
    -- When the message is next due; while claimed, when the claim's lease ends.
    next_attempt_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- The claim's random token: only its holder may record the outcome.
    lease_token      TEXT        NULL,
    sent_at          TIMESTAMPTZ NULL,
    -- Set aside for good (the server refused it, the message cannot be built), with last_error.
    parked_at        TIMESTAMPTZ NULL,
    last_error       TEXT        NULL,
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX mail_outbox_due_idx ON auth.mail_outbox (next_attempt_at)
    WHERE sent_at IS NULL AND parked_at IS NULL;
CREATE INDEX mail_outbox_sent_idx ON auth.mail_outbox (sent_at) WHERE sent_at IS NOT NULL;
CREATE INDEX mail_outbox_parked_idx ON auth.mail_outbox (parked_at) WHERE parked_at IS NOT NULL;
-- Erasing a person finds their mail by address.
CREATE INDEX mail_outbox_to_idx ON auth.mail_outbox (to_address);
