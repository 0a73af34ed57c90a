//! The MariaDB side: pools whose connections work in UTC, and migrations under `GET_LOCK`.

use std::time::Duration;

use diesel::mysql::MysqlConnection;
use diesel::r2d2::CustomizeConnection;
use diesel::sql_types::{Integer, Nullable};
use diesel::{Connection, QueryableByName, RunQueryDsl};
use diesel_migrations::{EmbeddedMigrations, embed_migrations};
use service_kit::Secret;

pub type MyPool = service_kit::db::Pool<MysqlConnection>;

pub const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations-licensing");

/// Named lock serialising migration runs across processes.
const MIGRATION_LOCK: &str = "licensing.migrations";
/// How long a second migrator waits for the first before giving up.
const MIGRATION_LOCK_WAIT_SECS: i32 = 300;

/// Every connection stores and reads DATETIME values as UTC.
#[derive(Debug, Clone, Copy)]
struct UtcSession;

impl CustomizeConnection<MysqlConnection, diesel::r2d2::Error> for UtcSession {
    fn on_acquire(&self, conn: &mut MysqlConnection) -> Result<(), diesel::r2d2::Error> {
        utc_session(conn).map_err(diesel::r2d2::Error::QueryError)
    }
}

fn utc_session(conn: &mut MysqlConnection) -> diesel::QueryResult<()> {
    diesel::sql_query("SET time_zone = '+00:00'").execute(conn)?;
    Ok(())
}

pub fn pool(url: &Secret, size: u32) -> MyPool {
    service_kit::db::build_pool_with(url, size, UtcSession)
}

#[derive(QueryableByName)]
struct LockResult {
    #[diesel(sql_type = Nullable<Integer>)]
    acquired: Option<i32>,
}

/// Applies pending migrations under a MariaDB named lock; returns the versions applied.
pub fn migrate(conn: &mut MysqlConnection) -> anyhow::Result<Vec<String>> {
    service_kit::db::migrate_locked(
        conn,
        MIGRATIONS,
        |c| {
            let got: LockResult = diesel::sql_query(format!(
                "SELECT GET_LOCK('{MIGRATION_LOCK}', {MIGRATION_LOCK_WAIT_SECS}) AS acquired"
            ))
            .get_result(c)?;
            match got.acquired {
                Some(1) => Ok(()),
                _ => Err(anyhow::anyhow!(
                    "another process held the migration lock for {MIGRATION_LOCK_WAIT_SECS} s"
                )),
            }
        },
        |c| {
            diesel::sql_query(format!("DO RELEASE_LOCK('{MIGRATION_LOCK}')")).execute(c)?;
            Ok(())
        },
    )
}

/// One connection in UTC, for the admin subcommands.
pub fn connect(url: &Secret) -> anyhow::Result<MysqlConnection> {
    let mut conn = MysqlConnection::establish(url.expose())
        .map_err(|e| anyhow::anyhow!("cannot connect to MariaDB: {e}"))?;
    utc_session(&mut conn)?;
    Ok(conn)
}

/// Connects (waiting up to `wait` for MariaDB) and migrates.
pub fn connect_and_migrate(url: &Secret, wait: Duration) -> anyhow::Result<Vec<String>> {
    let mut conn = service_kit::db::retry_for(wait, "connecting to MariaDB", || {
        let mut conn = MysqlConnection::establish(url.expose())?;
        utc_session(&mut conn)?;
        Ok(conn)
    })?;
    migrate(&mut conn)
}
