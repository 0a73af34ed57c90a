-- The quota is taken by one statement of the service's repository (repo::usage::TAKE), which
-- every consumption sends; the function it replaced has no caller.
DROP FUNCTION IF EXISTS licence_usage_take;
