DROP INDEX nutrition.fast_event_next_milestone_idx;
ALTER TABLE nutrition.fast_event DROP COLUMN next_milestone_at;
