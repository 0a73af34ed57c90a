-- Fair delivery: the order of each run's rows within a user (0 for a user's most recently seen
-- device), and the push service's origin, so that one user with many devices or one slow push
-- service can be kept from holding every sender.
ALTER TABLE scheduler.outbox
    ADD COLUMN fair_rank SMALLINT NOT NULL DEFAULT 0,
    ADD COLUMN origin TEXT GENERATED ALWAYS AS
        (lower(substring(endpoint FROM '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*'))) STORED;

-- A message whose device left its user (removed, replaced, or taken over by someone else on a
-- shared browser) is cancelled, never sent to whoever holds that browser now.
ALTER TABLE scheduler.outbox DROP CONSTRAINT outbox_status_check;
ALTER TABLE scheduler.outbox ADD CONSTRAINT outbox_status_check
    CHECK (status IN ('pending', 'delivered', 'gone', 'failed', 'expired', 'cancelled'));

-- Senders take the message that expires first, each user's first device before anyone's second.
CREATE INDEX outbox_due_idx ON scheduler.outbox (expires_at, fair_rank, id) WHERE status = 'pending';
-- Finished messages are purged after 30 days.
CREATE INDEX outbox_finished_idx ON scheduler.outbox (finished_at) WHERE status <> 'pending';
CREATE INDEX job_run_claimed_idx ON scheduler.job_run (claimed_at);
