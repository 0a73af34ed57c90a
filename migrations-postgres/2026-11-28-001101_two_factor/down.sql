DROP TABLE auth.two_factor;
ALTER TABLE auth."user" DROP COLUMN two_factor_enabled;
