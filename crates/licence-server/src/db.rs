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

/// Named lock serialising the migration runs of one database across processes. MariaDB's named
/// locks are server-wide, so the name carries the database's (hashed to stay within the 64
/// characters a lock name may have): migrators of other databases on the same server, another
/// environment or the tests' scratch databases, never wait for each other.
const MIGRATION_LOCK: &str = "CONCAT('licensing.migrations.', MD5(DATABASE()))";
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
    service_kit::db::migrate_locked(conn, MIGRATIONS, lock_migrations, unlock_migrations)
}

/// Takes the connected database's migration lock, waiting for another migrator if need be.
pub fn lock_migrations(conn: &mut MysqlConnection) -> anyhow::Result<()> {
    let got: LockResult = diesel::sql_query(format!(
        "SELECT GET_LOCK({MIGRATION_LOCK}, {MIGRATION_LOCK_WAIT_SECS}) AS acquired"
    ))
    .get_result(conn)?;
    match got.acquired {
        Some(1) => Ok(()),
        _ => Err(anyhow::anyhow!(
            "another process held the migration lock for {MIGRATION_LOCK_WAIT_SECS} s"
        )),
    }
}

/// Releases the lock [`lock_migrations`] took.
pub fn unlock_migrations(conn: &mut MysqlConnection) -> anyhow::Result<()> {
    diesel::sql_query(format!("DO RELEASE_LOCK({MIGRATION_LOCK})")).execute(conn)?;
    Ok(())
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
