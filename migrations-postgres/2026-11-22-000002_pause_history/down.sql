DROP TABLE IF EXISTS nutrition.pause_period;
