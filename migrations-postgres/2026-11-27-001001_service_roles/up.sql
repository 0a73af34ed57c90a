-- One role per service, each with the rows it needs and no more. The migrating role (the owner
-- of the schemas) stays the only one that can change them; a service connects as its own role,
-- so a flaw in one service cannot read password hashes (nutrition-api, push-scheduler) or rewrite
-- another service's tables. The deployment gives each role LOGIN and a password
-- (deploy/postgres/service-roles.sql); here they are created without, where missing, so that the
-- grants below always have someone to go to. Roles belong to the whole server, so another
-- database of the same server migrating at the same moment may create one first.
DO $$
DECLARE
    name text;
BEGIN
    FOREACH name IN ARRAY ARRAY['auth_svc', 'nutrition_api_svc', 'push_scheduler_svc'] LOOP
        BEGIN
            EXECUTE format('CREATE ROLE %I NOLOGIN', name);
        EXCEPTION WHEN OTHERS THEN
            -- Made meanwhile by another database's migration (duplicate, or a concurrent
            -- update of the catalogue): fine if it exists now.
            IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = name) THEN
                RAISE;
            END IF;
        END;
        -- The owner may act as each service (as the tests do, switching role at connection
        -- start); where the role was made by someone else and this owner may not grant it, the
        -- owner simply does not.
        BEGIN
            EXECUTE format('GRANT %I TO CURRENT_USER', name);
        EXCEPTION WHEN OTHERS THEN
            NULL;
        END;
    END LOOP;
END
$$;

-- Every service reads which migrations are applied, so that it starts without migrating when
-- the schema is current, and may take the migration lock (an advisory lock needs no grant).
GRANT SELECT ON public.__diesel_schema_migrations TO auth_svc, nutrition_api_svc, push_scheduler_svc;
GRANT USAGE ON SCHEMA auth, nutrition, scheduler TO auth_svc, nutrition_api_svc, push_scheduler_svc;

-- auth: its own schema; and account deletion erases the person's rows everywhere.
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA auth TO auth_svc;
GRANT SELECT, DELETE ON ALL TABLES IN SCHEMA nutrition, scheduler TO auth_svc;

-- nutrition-api: its own schema; sessions (checked, refreshed, expired, listed in the export),
-- users (read), and account links without their secrets (the export).
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA nutrition TO nutrition_api_svc;
GRANT SELECT, UPDATE, DELETE ON auth.session TO nutrition_api_svc;
GRANT SELECT ON auth."user" TO nutrition_api_svc;
GRANT SELECT (id, provider_id, account_id, user_id, scope, created_at, updated_at)
    ON auth.account TO nutrition_api_svc;

-- push-scheduler: its own schema; the fasts, profiles and devices its reminders are made of
-- (milestones advanced on the fast, devices that are gone removed or marked).
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA scheduler TO push_scheduler_svc;
GRANT SELECT, UPDATE ON nutrition.fast_event TO push_scheduler_svc;
GRANT SELECT, UPDATE, DELETE ON nutrition.device_token TO push_scheduler_svc;
GRANT SELECT ON nutrition.profile, nutrition.pause_period, nutrition.meal_plan, nutrition.meal_slot
    TO push_scheduler_svc;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA scheduler TO push_scheduler_svc;
-- Tables a later migration adds to a schema get the same grants (default privileges apply to
-- what the migrating role creates); a table another service must reach gets its own GRANT.
ALTER DEFAULT PRIVILEGES IN SCHEMA auth GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO auth_svc;
ALTER DEFAULT PRIVILEGES IN SCHEMA nutrition GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO nutrition_api_svc;
ALTER DEFAULT PRIVILEGES IN SCHEMA scheduler GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO push_scheduler_svc;
ALTER DEFAULT PRIVILEGES IN SCHEMA nutrition, scheduler GRANT SELECT, DELETE ON TABLES TO auth_svc;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA nutrition TO nutrition_api_svc;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA auth TO auth_svc;
