-- The milestone run reads only the running fasts that have something due, through an index on
-- the instant it next has to look at each one, instead of every running fast every five minutes.
-- The instant is the earliest milestone not yet notified (`domain::fasting::next_milestone_at`);
-- the run moves it on after recording or skipping, nutrition-api sets it when a fast starts and
-- brings it forward when a user switches milestones on or changes a pause. NULL: nothing left to
-- look at (every milestone notified, or the fast ended).
ALTER TABLE nutrition.fast_event ADD COLUMN next_milestone_at TIMESTAMPTZ;

-- Running fasts as the rules stood: start + 2, 4, 6, 18 h and the planned end − 30 min.
UPDATE nutrition.fast_event f
   SET next_milestone_at = (
       SELECT min(m.at)
         FROM (VALUES ('hydration_2h', f.started_at + INTERVAL '2 hours'),
                      ('hydration_4h', f.started_at + INTERVAL '4 hours'),
                      ('hydration_6h', f.started_at + INTERVAL '6 hours'),
                      ('electrolyte_18h', f.started_at + INTERVAL '18 hours'),
                      ('ending_soon', f.planned_end_at - INTERVAL '30 minutes')) AS m (key, at)
        WHERE m.key <> ALL (f.notified_milestones))
 WHERE f.status = 'IN_PROGRESS';

-- (instant, id): the run pages through what is due in this order.
CREATE INDEX fast_event_next_milestone_idx ON nutrition.fast_event (next_milestone_at, id)
    WHERE status = 'IN_PROGRESS' AND next_milestone_at IS NOT NULL;
