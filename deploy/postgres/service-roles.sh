#!/bin/sh
# Gives auth, nutrition-api and push-scheduler each a login role of its own (auth_svc,
# nutrition_api_svc, push_scheduler_svc) with the password of its DATABASE_URL. What each role may
# reach is granted by the migrations (migrations-postgres/…_service_roles); the owner of the
# schemas (POSTGRES_USER) is left to the `migrate` command.
#
# The postgres container runs it on its first start (/docker-entrypoint-initdb.d). On a database
# that exists already, run it once by hand with the same variables, e.g.
#   docker-compose exec postgres sh /docker-entrypoint-initdb.d/service-roles.sh
set -eu
for var in AUTH_DB_PASSWORD NUTRITION_API_DB_PASSWORD PUSH_SCHEDULER_DB_PASSWORD; do
  eval "value=\${$var:-}"
  case $value in
    '' | change-me-*)
      echo "service-roles.sh: $var must be set (deploy/generate-secrets fills it)" >&2
      exit 1
      ;;
  esac
done
psql -v ON_ERROR_STOP=1 --username "${POSTGRES_USER:-postgres}" --dbname "${POSTGRES_DB:-postgres}" \
  -v auth="$AUTH_DB_PASSWORD" -v api="$NUTRITION_API_DB_PASSWORD" \
  -v scheduler="$PUSH_SCHEDULER_DB_PASSWORD" <<'SQL'
CREATE TEMP TABLE wanted (name text, password text);
INSERT INTO wanted VALUES
  ('auth_svc', :'auth'), ('nutrition_api_svc', :'api'), ('push_scheduler_svc', :'scheduler');
SELECT format('CREATE ROLE %I', name) FROM wanted
 WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = name) \gexec
SELECT format('ALTER ROLE %I LOGIN PASSWORD %L', name, password) FROM wanted \gexec
SQL
