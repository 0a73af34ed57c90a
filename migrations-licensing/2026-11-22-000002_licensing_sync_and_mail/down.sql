ALTER TABLE email_outbox DROP COLUMN gave_up_at;
ALTER TABLE licence DROP COLUMN subscription_synced_at;
