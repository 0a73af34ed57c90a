DROP TABLE nutrition.idempotency;
DROP TABLE nutrition.water;
DROP TABLE nutrition.weight;
ALTER TABLE nutrition.profile
    DROP COLUMN long_fast_acknowledged,
    DROP COLUMN water_goal_ml,
    DROP COLUMN height_cm,
    DROP COLUMN weight_goal_hg;
ALTER TABLE auth."user" DROP COLUMN locale;
