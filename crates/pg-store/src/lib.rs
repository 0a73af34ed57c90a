//! The one Postgres database behind auth, nutrition-api and push-scheduler.
//!
//! The three services share a database but not tables: each schema has one writer (see
//! ARCHITECTURE.md). They share this crate because they share the migrations: whichever service
//! starts first brings the database up to date, under an advisory lock, and the others find
//! nothing to do.

use std::time::Duration;

use diesel::{Connection, PgConnection, RunQueryDsl};
use diesel_migrations::{EmbeddedMigrations, embed_migrations};
use service_kit::Secret;

pub mod erase;
pub mod ids;
pub mod outbox;
pub mod schema;

pub use service_kit::db::{DbError, PoolReadiness, run};

pub type PgPool = service_kit::db::Pool<PgConnection>;

pub const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations-postgres");

/// Advisory lock key of the migration runner ("nutrMIGR" as ASCII), fixed so every binary and
/// version agrees on it.
const MIGRATION_LOCK_KEY: i64 = 0x6e75_7472_4d49_4752;

/// A pool for `url`; connections are made lazily.
/// DATABASE_URL of a service on this database.
pub fn database_url(env: &service_kit::Env) -> Result<Secret, service_kit::ConfigError> {
    env.database_url(
        &["postgres", "postgresql"],
        "postgres://app:password@127.0.0.1:5432/nutrition",
    )
}

pub fn pool(url: &Secret, size: u32) -> PgPool {
    service_kit::db::build_pool(url, size)
}

/// Applies pending migrations on `conn` under the advisory lock; returns the versions applied.
///
/// Each service connects as a role that may use the schemas but not change them (migration
/// `service_roles`): when every migration is applied already, nothing else is asked of the
/// database, so a service starts as its own role; when one is pending, only the schemas' owner
/// (the `migrate` command) can apply it, and the error says so.
pub fn migrate(conn: &mut PgConnection) -> anyhow::Result<Vec<String>> {
    if is_current(conn) {
        return Ok(Vec::new());
    }
    migrate_pending(conn).map_err(|e| {
        e.context(
            "migrating the Postgres schemas failed; a service's own role cannot change them: \
             run the `migrate` command with the owner's DATABASE_URL first",
        )
    })
}

/// Whether every embedded migration is recorded as applied, read without creating anything.
fn is_current(conn: &mut PgConnection) -> bool {
    use diesel::migration::MigrationSource;
    #[derive(diesel::QueryableByName)]
    struct Applied {
        #[diesel(sql_type = diesel::sql_types::Text)]
        version: String,
    }
    let Ok(applied) = diesel::sql_query("SELECT version FROM public.__diesel_schema_migrations")
        .load::<Applied>(conn)
    else {
        return false;
    };
    let applied: std::collections::HashSet<String> =
        applied.into_iter().map(|a| a.version).collect();
    match MigrationSource::<diesel::pg::Pg>::migrations(&MIGRATIONS) {
        Ok(all) => all
            .iter()
            .all(|m| applied.contains(&m.name().version().to_string())),
        Err(_) => false,
    }
}

fn migrate_pending(conn: &mut PgConnection) -> anyhow::Result<Vec<String>> {
    service_kit::db::migrate_locked(
        conn,
        MIGRATIONS,
        |c| {
            diesel::sql_query(format!("SELECT pg_advisory_lock({MIGRATION_LOCK_KEY})"))
                .execute(c)?;
            Ok(())
        },
        |c| {
            diesel::sql_query(format!("SELECT pg_advisory_unlock({MIGRATION_LOCK_KEY})"))
                .execute(c)?;
            Ok(())
        },
    )
}

/// Connects to `url`, waiting up to `wait` for the database to come up, and migrates. A failing
/// migration is not retried: it would fail the same way again.
pub fn connect_and_migrate(url: &Secret, wait: Duration) -> anyhow::Result<Vec<String>> {
    let mut conn = service_kit::db::retry_for(wait, "connecting to Postgres", || {
        Ok(PgConnection::establish(url.expose())?)
    })?;
    migrate(&mut conn)
}

/// Start-up of a Postgres service: migrates (waiting up to `wait` for the database) on the
/// blocking pool, then returns the pool the service will use.
pub async fn start(url: &Secret, pool_size: u32, wait: Duration) -> anyhow::Result<PgPool> {
    let migrate_url = url.clone();
    let applied =
        tokio::task::spawn_blocking(move || connect_and_migrate(&migrate_url, wait)).await??;
    if !applied.is_empty() {
        tracing::info!(?applied, "applied database migrations");
    }
    Ok(pool(url, pool_size))
}
