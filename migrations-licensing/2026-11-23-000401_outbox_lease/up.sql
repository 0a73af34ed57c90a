-- The claim's random token: only the sender holding it may record a message's outcome, so that
-- a sender whose lease ran out never overwrites the work of the one that took over.
ALTER TABLE email_outbox ADD COLUMN lease_token CHAR(32) NULL AFTER next_attempt_at;
-- Delivered and parked mail is deleted after 30 days.
CREATE INDEX email_outbox_sent_idx ON email_outbox (sent_at);
CREATE INDEX email_outbox_gave_up_idx ON email_outbox (gave_up_at);
