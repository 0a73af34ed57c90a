//! The Postgres migrations against a real server: complete, repeatable, and in step with
//! `schema.rs`.

use diesel::prelude::*;
use diesel::sql_types::Text;
use pg_store::schema::{auth, nutrition, scheduler};
use testkit::postgres::TestPostgres;

#[derive(QueryableByName, PartialEq, Eq, Debug)]
struct Line {
    #[diesel(sql_type = Text)]
    line: String,
}

/// Every column, index and constraint of the three schemas as sorted text.
fn catalogue(conn: &mut PgConnection) -> Vec<Line> {
    diesel::sql_query(
        "SELECT line FROM (
            SELECT format('column %s.%s.%s %s %s %s', table_schema, table_name, column_name,
                          data_type, is_nullable, coalesce(column_default, '')) AS line
              FROM information_schema.columns
             WHERE table_schema IN ('auth', 'nutrition', 'scheduler')
            UNION ALL
            SELECT format('index %s.%s %s', schemaname, indexname, indexdef)
              FROM pg_indexes WHERE schemaname IN ('auth', 'nutrition', 'scheduler')
            UNION ALL
            SELECT format('constraint %s %s', conname, pg_get_constraintdef(c.oid))
              FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
             WHERE n.nspname IN ('auth', 'nutrition', 'scheduler')
         ) all_lines ORDER BY line",
    )
    .load(conn)
    .expect("read catalogue")
}

#[test]
fn applying_twice_changes_nothing() {
    let db = TestPostgres::empty();
    let mut conn = db.connect();
    let first = pg_store::migrate(&mut conn).expect("first run");
    assert!(
        !first.is_empty(),
        "an empty database has migrations to apply"
    );
    let before = catalogue(&mut conn);
    assert!(
        before.len() > 50,
        "the schemas hold the tables: {}",
        before.len()
    );
    let second = pg_store::migrate(&mut conn).expect("second run");
    assert!(second.is_empty(), "nothing left to apply: {second:?}");
    assert_eq!(catalogue(&mut conn), before);
}

#[test]
fn schema_rs_names_only_existing_columns() {
    let db = TestPostgres::migrated(pg_store::migrate);
    let mut conn = db.connect();
    // Selecting every column diesel knows fails if any of them is missing from the database.
    auth::user::table
        .select(auth::user::all_columns)
        .limit(0)
        .execute(&mut conn)
        .expect("auth.user");
    auth::session::table
        .select(auth::session::all_columns)
        .limit(0)
        .execute(&mut conn)
        .expect("auth.session");
    auth::account::table
        .select(auth::account::all_columns)
        .limit(0)
        .execute(&mut conn)
        .expect("auth.account");
    auth::verification::table
        .select(auth::verification::all_columns)
        .limit(0)
        .execute(&mut conn)
        .expect("auth.verification");
    auth::rate_limit::table
        .select(auth::rate_limit::all_columns)
        .limit(0)
        .execute(&mut conn)
        .expect("auth.rate_limit");
    auth::mail_outbox::table
        .select(auth::mail_outbox::all_columns)
        .limit(0)
        .execute(&mut conn)
        .expect("auth.mail_outbox");
    auth::two_factor::table
        .select(auth::two_factor::all_columns)
        .limit(0)
        .execute(&mut conn)
        .expect("auth.two_factor");
    auth::activity::table
        .select(auth::activity::all_columns)
        .limit(0)
        .execute(&mut conn)
        .expect("auth.activity");
    auth::passkey::table
        .select(auth::passkey::all_columns)
        .limit(0)
        .execute(&mut conn)
        .expect("auth.passkey");
    nutrition::profile::table
        .select(nutrition::profile::all_columns)
        .limit(0)
        .execute(&mut conn)
        .expect("profile");
    nutrition::fast_event::table
        .select(nutrition::fast_event::all_columns)
        .limit(0)
        .execute(&mut conn)
        .expect("fast_event");
    nutrition::meal_plan::table
        .select(nutrition::meal_plan::all_columns)
        .limit(0)
        .execute(&mut conn)
        .expect("meal_plan");
    nutrition::meal_slot::table
        .select(nutrition::meal_slot::all_columns)
        .limit(0)
        .execute(&mut conn)
        .expect("meal_slot");
    nutrition::device_token::table
        .select(nutrition::device_token::all_columns)
        .limit(0)
        .execute(&mut conn)
        .expect("device_token");
    nutrition::pause_period::table
        .select(nutrition::pause_period::all_columns)
        .limit(0)
        .execute(&mut conn)
        .expect("pause_period");
    nutrition::test_push_limit::table
        .select(nutrition::test_push_limit::all_columns)
        .limit(0)
        .execute(&mut conn)
        .expect("test_push_limit");
    scheduler::job_run::table
        .select(scheduler::job_run::all_columns)
        .limit(0)
        .execute(&mut conn)
        .expect("job_run");
    scheduler::outbox::table
        .select(scheduler::outbox::all_columns)
        .limit(0)
        .execute(&mut conn)
        .expect("outbox");
}

#[test]
fn one_running_fast_per_user_is_enforced_by_the_database() {
    let db = TestPostgres::migrated(pg_store::migrate);
    let mut conn = db.connect();
    diesel::sql_query(
        "INSERT INTO auth.\"user\" (id, name, email) VALUES ('u1', 'U', 'u@example.com')",
    )
    .execute(&mut conn)
    .expect("user");
    let start = |id: &str| {
        format!(
            "INSERT INTO nutrition.fast_event (id, user_id, status, protocol, started_at, planned_end_at)
             VALUES ('{id}', 'u1', 'IN_PROGRESS', '16:8', now(), now() + interval '16 hours')"
        )
    };
    diesel::sql_query(start("f1"))
        .execute(&mut conn)
        .expect("first running fast");
    let second = diesel::sql_query(start("f2")).execute(&mut conn);
    assert!(second.is_err(), "a second running fast must be refused");
}

#[test]
fn rate_limit_counters_under_raw_keys_are_dropped() {
    use diesel_migrations::MigrationHarness;
    const HASHED: &str = "20261123000301";
    let db = TestPostgres::empty();
    let mut conn = db.connect();
    // Apply everything older than the migration, as a database deployed before it would be.
    loop {
        let pending = conn
            .pending_migrations(pg_store::MIGRATIONS)
            .expect("pending");
        let Some(next) = pending.first() else { break };
        if next.name().version().to_string().replace('-', "").as_str() >= HASHED {
            break;
        }
        conn.run_migration(next.as_ref()).expect("older migration");
    }
    let hashed = format!("sign-in:email:{}", "A".repeat(43));
    diesel::sql_query(format!(
        "INSERT INTO auth.rate_limit (key, count, window_start) VALUES
           ('sign-in:ip:203.0.113.7', 1, now()),
           ('sign-up:email:mario@example.com', 1, now()),
           ('{hashed}', 1, now())"
    ))
    .execute(&mut conn)
    .expect("old counters");
    pg_store::migrate(&mut conn).expect("the rest");
    let keys: Vec<String> = auth::rate_limit::table
        .select(auth::rate_limit::key)
        .load(&mut conn)
        .expect("keys");
    assert_eq!(keys, [hashed], "only keyed hashes remain");
}

#[test]
fn running_fasts_get_their_next_milestone_instant_when_the_column_arrives() {
    use diesel_migrations::MigrationHarness;
    let db = TestPostgres::empty();
    let mut conn = db.connect();
    // Everything before the column, then fasts as the previous version left them.
    for m in conn
        .pending_migrations(pg_store::MIGRATIONS)
        .expect("migrations")
    {
        if m.name().to_string().ends_with("_fast_next_milestone") {
            break;
        }
        conn.run_migration(&*m).expect("earlier migration");
    }
    diesel::sql_query(
        "INSERT INTO auth.\"user\" (id, name, email)
         SELECT 'u' || i, 'U', 'u' || i || '@example.com' FROM generate_series(1, 5) i",
    )
    .execute(&mut conn)
    .expect("users");
    diesel::sql_query(
        "INSERT INTO nutrition.fast_event (id, user_id, status, protocol, started_at, planned_end_at, ended_at, notified_milestones) VALUES
            ('new', 'u1', 'IN_PROGRESS', '16:8', '2026-11-22T00:00:00Z', '2026-11-22T16:00:00Z', NULL, '{}'),
            ('mid', 'u2', 'IN_PROGRESS', '16:8', '2026-11-22T00:00:00Z', '2026-11-22T16:00:00Z', NULL, '{hydration_2h,hydration_4h,hydration_6h}'),
            ('late', 'u3', 'IN_PROGRESS', '16:8', '2026-11-22T00:00:00Z', '2026-11-22T16:00:00Z', NULL, '{hydration_2h,hydration_4h,hydration_6h,ending_soon}'),
            ('all', 'u4', 'IN_PROGRESS', '16:8', '2026-11-22T00:00:00Z', '2026-11-22T16:00:00Z', NULL, '{hydration_2h,hydration_4h,hydration_6h,ending_soon,electrolyte_18h}'),
            ('ended', 'u5', 'COMPLETED', '16:8', '2026-11-22T00:00:00Z', '2026-11-22T16:00:00Z', '2026-11-22T16:00:00Z', '{}')",
    )
    .execute(&mut conn)
    .expect("fasts");
    pg_store::migrate(&mut conn).expect("the rest");

    #[derive(QueryableByName, PartialEq, Eq, Debug)]
    struct Next {
        #[diesel(sql_type = Text)]
        id: String,
        #[diesel(sql_type = diesel::sql_types::Nullable<Text>)]
        next: Option<String>,
    }
    let rows: Vec<Next> = diesel::sql_query(
        "SELECT id, to_char(next_milestone_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI') AS next
           FROM nutrition.fast_event ORDER BY id",
    )
    .load(&mut conn)
    .expect("read");
    let expect = |id: &str, next: Option<&str>| Next {
        id: id.to_owned(),
        next: next.map(str::to_owned),
    };
    assert_eq!(
        rows,
        [
            expect("all", None),
            expect("ended", None),
            expect("late", Some("2026-11-22T18:00")),
            expect("mid", Some("2026-11-22T15:30")),
            expect("new", Some("2026-11-22T02:00")),
        ]
    );
}

/// The outcome of `sql` run as `role` on `db`: `Ok` or the server's message.
fn as_role(db: &TestPostgres, role: &str, sql: &str) -> Result<(), String> {
    let url = testkit::postgres::as_role(db.url(), role);
    let mut conn = PgConnection::establish(&url).map_err(|e| e.to_string())?;
    diesel::sql_query(sql)
        .execute(&mut conn)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[test]
fn each_service_role_reaches_only_what_its_service_needs() {
    let db = TestPostgres::migrated(pg_store::migrate);
    let denied = |role: &str, sql: &str| {
        let outcome = as_role(&db, role, sql);
        assert!(
            matches!(&outcome, Err(e) if e.contains("permission denied") || e.contains("must be owner")),
            "{role} ran {sql}: {outcome:?}"
        );
    };
    let allowed = |role: &str, sql: &str| {
        assert_eq!(
            as_role(&db, role, sql),
            Ok(()),
            "{role} could not run {sql}"
        );
    };
    // Password hashes and provider tokens: auth only.
    allowed(
        "auth_svc",
        "SELECT password, access_token FROM auth.account",
    );
    denied("nutrition_api_svc", "SELECT password FROM auth.account");
    denied("nutrition_api_svc", "SELECT access_token FROM auth.account");
    allowed(
        "nutrition_api_svc",
        "SELECT id, provider_id FROM auth.account",
    );
    denied("push_scheduler_svc", "SELECT id FROM auth.account");
    // The two-factor secret and backup codes: auth only; whether it is on: the export too.
    denied("nutrition_api_svc", "SELECT secret FROM auth.two_factor");
    denied(
        "nutrition_api_svc",
        "SELECT backup_codes FROM auth.two_factor",
    );
    allowed(
        "nutrition_api_svc",
        "SELECT verified, created_at FROM auth.two_factor",
    );
    // Passkeys: the keys are auth's alone; their names and kinds are in the export.
    denied("nutrition_api_svc", "SELECT credential FROM auth.passkey");
    denied(
        "nutrition_api_svc",
        "SELECT public_key, credential_id FROM auth.passkey",
    );
    allowed(
        "nutrition_api_svc",
        "SELECT id, name, device_type, backed_up, transports, created_at FROM auth.passkey",
    );
    denied("nutrition_api_svc", "DELETE FROM auth.passkey");
    // The activity log: written by auth, and by nutrition-api for its export; never rewritten.
    allowed(
        "nutrition_api_svc",
        "INSERT INTO auth.activity (id, user_id, kind, at) SELECT 'a', id, 'export', now() FROM auth.\"user\" LIMIT 0",
    );
    denied("nutrition_api_svc", "DELETE FROM auth.activity");
    denied(
        "nutrition_api_svc",
        "UPDATE auth.activity SET kind = 'export'",
    );
    denied("push_scheduler_svc", "SELECT token FROM auth.session");
    // Another service's own tables are not written.
    denied("nutrition_api_svc", "DELETE FROM scheduler.outbox");
    denied("nutrition_api_svc", "UPDATE auth.\"user\" SET name = 'x'");
    denied("push_scheduler_svc", "DELETE FROM nutrition.fast_event");
    denied(
        "auth_svc",
        "UPDATE nutrition.fast_event SET symptoms = NULL",
    );
    // Account deletion reaches every schema.
    allowed(
        "auth_svc",
        "DELETE FROM nutrition.fast_event WHERE user_id = 'nobody'",
    );
    allowed(
        "auth_svc",
        "DELETE FROM scheduler.outbox WHERE user_id = 'nobody'",
    );
    // Nobody but the owner changes a schema.
    for role in ["auth_svc", "nutrition_api_svc", "push_scheduler_svc"] {
        denied(role, "CREATE TABLE nutrition.intruder (id int)");
        denied(role, "DROP TABLE auth.session");
        denied(role, "CREATE TABLE public.intruder (id int)");
    }
}

#[test]
fn a_service_role_starts_on_a_current_schema_and_is_told_to_migrate_otherwise() {
    let db = TestPostgres::migrated(pg_store::migrate);
    let url = testkit::postgres::as_role(db.url(), "nutrition_api_svc");
    let mut conn = PgConnection::establish(&url).expect("connect as the role");
    assert_eq!(
        pg_store::migrate(&mut conn).expect("current schema"),
        Vec::<String>::new()
    );
    let mut owner = db.connect();
    diesel::sql_query(
        "DELETE FROM __diesel_schema_migrations \
          WHERE version = (SELECT max(version) FROM __diesel_schema_migrations)",
    )
    .execute(&mut owner)
    .expect("forget the last migration");
    let error = pg_store::migrate(&mut conn).expect_err("a pending migration");
    assert!(
        format!("{error:#}").contains("run the `migrate` command"),
        "{error:#}"
    );
}
