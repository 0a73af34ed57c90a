-- nutrition-api sets `next_milestone_at` when it starts a fast, but a fast written by anything
-- else (an import, an operator's SQL) would not, and the milestone run reads only the fasts whose
-- next milestone is due: such a fast would never be seen. Written without one, a running fast is
-- due at once instead; the next run computes its real schedule from its milestones, as for any
-- fast after downtime (only the latest milestone already passed is pushed).
CREATE FUNCTION nutrition.fast_event_next_milestone_default() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.next_milestone_at := NEW.started_at;
    RETURN NEW;
END
$$;

CREATE TRIGGER fast_event_next_milestone_default
    BEFORE INSERT ON nutrition.fast_event
    FOR EACH ROW
    WHEN (NEW.status = 'IN_PROGRESS' AND NEW.next_milestone_at IS NULL)
    EXECUTE FUNCTION nutrition.fast_event_next_milestone_default();
