DROP INDEX email_outbox_gave_up_idx ON email_outbox;
DROP INDEX email_outbox_sent_idx ON email_outbox;
ALTER TABLE email_outbox DROP COLUMN lease_token;
