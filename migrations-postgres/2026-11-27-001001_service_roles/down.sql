ALTER DEFAULT PRIVILEGES IN SCHEMA auth REVOKE ALL ON TABLES FROM auth_svc;
ALTER DEFAULT PRIVILEGES IN SCHEMA nutrition REVOKE ALL ON TABLES FROM nutrition_api_svc;
ALTER DEFAULT PRIVILEGES IN SCHEMA scheduler REVOKE ALL ON TABLES FROM push_scheduler_svc;
ALTER DEFAULT PRIVILEGES IN SCHEMA nutrition, scheduler REVOKE ALL ON TABLES FROM auth_svc;
REVOKE SELECT (id, provider_id, account_id, user_id, scope, created_at, updated_at)
    ON auth.account FROM nutrition_api_svc;
-- The roles stay (they belong to the server, and other databases may use them); only this
-- database's grants go.
REVOKE ALL ON ALL TABLES IN SCHEMA auth, nutrition, scheduler FROM auth_svc, nutrition_api_svc, push_scheduler_svc;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA auth, nutrition, scheduler FROM auth_svc, nutrition_api_svc, push_scheduler_svc;
REVOKE USAGE ON SCHEMA auth, nutrition, scheduler FROM auth_svc, nutrition_api_svc, push_scheduler_svc;
REVOKE SELECT ON public.__diesel_schema_migrations FROM auth_svc, nutrition_api_svc, push_scheduler_svc;
