DROP INDEX scheduler.job_run_claimed_idx;
DROP INDEX scheduler.outbox_finished_idx;
DROP INDEX scheduler.outbox_due_idx;
UPDATE scheduler.outbox SET status = 'gone' WHERE status = 'cancelled';
ALTER TABLE scheduler.outbox DROP CONSTRAINT outbox_status_check;
ALTER TABLE scheduler.outbox ADD CONSTRAINT outbox_status_check
    CHECK (status IN ('pending', 'delivered', 'gone', 'failed', 'expired'));
ALTER TABLE scheduler.outbox DROP COLUMN origin, DROP COLUMN fair_rank;
