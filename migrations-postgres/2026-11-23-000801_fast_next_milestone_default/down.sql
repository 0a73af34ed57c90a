DROP TRIGGER fast_event_next_milestone_default ON nutrition.fast_event;
DROP FUNCTION nutrition.fast_event_next_milestone_default();
