//! Database plumbing shared by the Postgres and MariaDB services: r2d2 pools of sync diesel
//! connections, running diesel on the blocking pool, readiness, and migrations applied under a
//! database-wide lock so that replicas starting together never race on the schema.

use std::time::Duration;

use diesel::r2d2::{ConnectionManager, R2D2Connection};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness};

use crate::config::Secret;
use crate::http::Readiness;

pub type Pool<C> = diesel::r2d2::Pool<ConnectionManager<C>>;
pub type PooledConnection<C> = diesel::r2d2::PooledConnection<ConnectionManager<C>>;

/// How long a request waits for a free connection before it is answered 503.
pub const CHECKOUT_TIMEOUT: Duration = Duration::from_secs(5);

/// Builds a pool without connecting: the service starts (and `/ready` reports 503) even while
/// the database is still coming up.
pub fn build_pool<C>(url: &Secret, max_size: u32) -> Pool<C>
where
    C: R2D2Connection + 'static,
{
    builder(max_size).build_unchecked(ConnectionManager::new(url.expose()))
}

/// Like [`build_pool`], running `customizer` on every new connection (session settings).
pub fn build_pool_with<C, K>(url: &Secret, max_size: u32, customizer: K) -> Pool<C>
where
    C: R2D2Connection + 'static,
    K: diesel::r2d2::CustomizeConnection<C, diesel::r2d2::Error> + 'static,
{
    builder(max_size)
        .connection_customizer(Box::new(customizer))
        .build_unchecked(ConnectionManager::new(url.expose()))
}

fn builder<C: R2D2Connection + 'static>(
    max_size: u32,
) -> diesel::r2d2::Builder<ConnectionManager<C>> {
    diesel::r2d2::Pool::builder()
        .max_size(max_size)
        .min_idle(Some(0))
        .connection_timeout(CHECKOUT_TIMEOUT)
        .test_on_check_out(true)
        .idle_timeout(Some(Duration::from_secs(300)))
        .error_handler(Box::new(TracingErrorHandler))
}

/// r2d2's default handler logs through the `log` crate; route connection errors into tracing.
#[derive(Debug)]
struct TracingErrorHandler;

impl<E: std::fmt::Display> diesel::r2d2::HandleError<E> for TracingErrorHandler {
    fn handle_error(&self, error: E) {
        tracing::warn!(%error, "database connection error");
    }
}

/// Readiness of a pool: a connection can be checked out and answers a ping.
pub struct PoolReadiness<C: R2D2Connection + 'static>(pub Pool<C>);

impl<C: R2D2Connection + 'static> Readiness for PoolReadiness<C> {
    fn check(&self) -> Result<(), String> {
        let mut conn = self
            .0
            .get_timeout(Duration::from_secs(2))
            .map_err(|e| e.to_string())?;
        conn.ping().map_err(|e| e.to_string())
    }
}

/// Failure to reach or use the database from a request.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// No connection within [`CHECKOUT_TIMEOUT`]: the database is down or saturated (503).
    #[error("no database connection available: {0}")]
    Unavailable(String),
    #[error(transparent)]
    Query(#[from] diesel::result::Error),
    /// The blocking task was cancelled or panicked.
    #[error("database task failed")]
    Task,
}

/// Runs sync diesel code on actix's blocking pool with a connection from `pool`, keeping the
/// caller's tracing span. Checkout happens inside the closure so that no async worker ever waits
/// on the pool.
pub async fn run<C, F, T, E>(pool: &Pool<C>, f: F) -> Result<T, E>
where
    C: R2D2Connection + 'static,
    F: FnOnce(&mut C) -> Result<T, E> + Send + 'static,
    T: Send + 'static,
    E: From<DbError> + Send + 'static,
{
    let pool = pool.clone();
    let span = tracing::Span::current();
    actix_web::web::block(move || {
        let _entered = span.enter();
        crate::metrics::POOL_WAITING.inc();
        let conn = pool.get();
        crate::metrics::POOL_WAITING.dec();
        let mut conn = conn.map_err(|e| {
            crate::metrics::POOL_TIMEOUTS.inc();
            E::from(DbError::Unavailable(e.to_string()))
        })?;
        f(&mut conn)
    })
    .await
    .map_err(|_| E::from(DbError::Task))?
}

/// Applies every pending migration while holding a database lock taken by `lock` and released by
/// `unlock` on the same connection. A second process blocks on the lock, then finds nothing to do.
/// Returns the versions applied by this call.
pub fn migrate_locked<C, L, U>(
    conn: &mut C,
    migrations: EmbeddedMigrations,
    lock: L,
    unlock: U,
) -> anyhow::Result<Vec<String>>
where
    C: MigrationHarness<C::Backend> + diesel::Connection,
    L: FnOnce(&mut C) -> anyhow::Result<()>,
    U: FnOnce(&mut C) -> anyhow::Result<()>,
{
    lock(conn)?;
    let outcome = conn
        .run_pending_migrations(migrations)
        .map(|versions| versions.iter().map(ToString::to_string).collect::<Vec<_>>())
        .map_err(|e| anyhow::anyhow!("migration failed: {e}"));
    // Release even after a failure; the lock also dies with the connection.
    let released = unlock(conn);
    let versions = outcome?;
    released?;
    Ok(versions)
}

/// Retries `attempt` with a growing pause until it succeeds or `total` has passed, so that a
/// service started together with its database waits for it instead of crash-looping.
pub fn retry_for<T>(
    total: Duration,
    what: &str,
    mut attempt: impl FnMut() -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let start = std::time::Instant::now();
    let mut pause = Duration::from_millis(200);
    loop {
        match attempt() {
            Ok(v) => return Ok(v),
            Err(e) if start.elapsed() + pause < total => {
                tracing::warn!(error = %e, "{what} failed; retrying in {pause:?}");
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_secs(5));
            }
            Err(e) => return Err(e.context(format!("{what} did not succeed within {total:?}"))),
        }
    }
}
