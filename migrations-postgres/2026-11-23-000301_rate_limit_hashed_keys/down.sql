-- The deleted counters held personal data in clear and are not restored.
SELECT 1;
