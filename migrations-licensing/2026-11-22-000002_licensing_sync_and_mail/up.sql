-- The provider's `updated_at` of the last subscription event applied to a licence: events can
-- arrive out of order, and an older one must not undo a newer state.
ALTER TABLE licence ADD COLUMN subscription_synced_at DATETIME(6) NULL AFTER variant_id;

-- Mail the SMTP server refused for good (a 5xx answer, an address that cannot be parsed): kept
-- for the operator, who can queue it again with `licence-server admin resend-email`.
ALTER TABLE email_outbox ADD COLUMN gave_up_at DATETIME(6) NULL AFTER sent_at;
