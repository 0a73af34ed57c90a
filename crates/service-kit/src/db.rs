//! Database plumbing shared by the Postgres and MariaDB services: r2d2 pools of sync diesel
//! connections, running diesel on the blocking pool, readiness, and migrations applied under a
//! database-wide lock so that replicas starting together never race on the schema.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use diesel::connection::{Instrumentation, InstrumentationEvent};
use diesel::r2d2::{ConnectionManager, ManageConnection, R2D2Connection};
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness};

use crate::config::Secret;
use crate::http::Readiness;

pub type Pool<C> = diesel::r2d2::Pool<Manager<C>>;
pub type PooledConnection<C> = diesel::r2d2::PooledConnection<Manager<C>>;

/// How long a request waits for a free connection before it is answered 503.
pub const CHECKOUT_TIMEOUT: Duration = Duration::from_secs(5);

/// Builds a pool without connecting: the service starts (and `/ready` reports 503) even while
/// the database is still coming up.
pub fn build_pool<C>(url: &Secret, max_size: u32) -> Pool<C>
where
    C: R2D2Connection + 'static,
{
    builder(max_size).build_unchecked(Manager::new(url.expose()))
}

/// Like [`build_pool`], running `customizer` on every new connection (session settings).
pub fn build_pool_with<C, K>(url: &Secret, max_size: u32, customizer: K) -> Pool<C>
where
    C: R2D2Connection + 'static,
    K: diesel::r2d2::CustomizeConnection<C, diesel::r2d2::Error> + 'static,
{
    builder(max_size)
        .connection_customizer(Box::new(customizer))
        .build_unchecked(Manager::new(url.expose()))
}

fn builder<C: R2D2Connection + 'static>(max_size: u32) -> diesel::r2d2::Builder<Manager<C>> {
    diesel::r2d2::Pool::builder()
        .max_size(max_size)
        .min_idle(Some(0))
        .connection_timeout(CHECKOUT_TIMEOUT)
        // Cheap: `Manager::is_valid` only pings while a lost connection was seen recently.
        .test_on_check_out(true)
        .idle_timeout(Some(Duration::from_secs(300)))
        .error_handler(Box::new(TracingErrorHandler))
}

/// Whether `error` says the connection itself can no longer serve (server restarted, socket
/// closed, network cut, or statements it prepared that no longer fit the schema), as opposed to
/// a statement the database refused on a healthy connection. Such a connection is discarded and
/// the request answered 503: the next attempt gets a working one.
pub fn is_connection_lost(error: &DieselError) -> bool {
    match error {
        // tokio-postgres (nutrition-api's driver) reports a socket that is gone as an error
        // without SQLSTATE, which diesel-async turns into this kind.
        DieselError::DatabaseError(
            DatabaseErrorKind::ClosedConnection | DatabaseErrorKind::UnableToSendCommand,
            _,
        ) => true,
        // MariaDB's client reports a lost server without a kind of its own. Postgres refuses a
        // prepared statement whose result columns changed type since it was prepared (a
        // migration applied by a newer replica) with SQLSTATE 0A000, which diesel does not
        // expose: only a new connection prepares it afresh.
        DieselError::DatabaseError(DatabaseErrorKind::Unknown, info) => {
            let message = info.message().to_ascii_lowercase();
            [
                "server has gone away",
                "lost connection to",
                "server closed the connection",
                "no connection to the server",
                "cached plan must not change result type",
                // Postgres ending the backend (pg_terminate_backend, a shutdown): the socket
                // closes right after this answer.
                "terminating connection",
            ]
            .iter()
            .any(|needle| message.contains(needle))
        }
        _ => false,
    }
}

/// diesel's r2d2 manager, made cheap at checkout.
///
/// r2d2's `test_on_check_out` pings every connection before handing it out, which doubles the
/// round trips of a one-statement request. Instead every connection carries a [`Watch`] that sees
/// each statement's outcome: a statement failing because the connection is gone marks that
/// connection broken (r2d2 then discards it rather than returning it to the pool) and counts a
/// loss for the whole pool. A loss usually means the database went away for every connection at
/// once, so until each idle connection has answered a ping made after the latest loss, checkout
/// pings it; the rest of the time checkout costs no round trip.
pub struct Manager<C: R2D2Connection + 'static> {
    inner: ConnectionManager<C>,
    losses: Arc<AtomicU64>,
}

impl<C: R2D2Connection + 'static> Manager<C> {
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            inner: ConnectionManager::new(url),
            losses: Arc::default(),
        }
    }

    /// Connections lost so far, by any of this pool's connections.
    pub fn losses(&self) -> u64 {
        self.losses.load(Ordering::SeqCst)
    }
}

impl<C: R2D2Connection + 'static> std::fmt::Debug for Manager<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Manager")
            .field("losses", &self.losses())
            .finish_non_exhaustive()
    }
}

/// Per-connection observer of statement outcomes (diesel's instrumentation hook).
struct Watch {
    losses: Arc<AtomicU64>,
    /// A statement failed because the connection is gone.
    lost: bool,
    /// The pool's loss count when this connection was last known to work.
    known_good_at: u64,
}

impl Instrumentation for Watch {
    fn on_connection_event(&mut self, event: InstrumentationEvent<'_>) {
        if let InstrumentationEvent::FinishQuery {
            error: Some(error), ..
        } = event
            && !self.lost
            && is_connection_lost(error)
        {
            self.lost = true;
            self.losses.fetch_add(1, Ordering::SeqCst);
        }
    }
}

fn watch_of<C: R2D2Connection>(conn: &mut C) -> Option<&mut Watch> {
    conn.instrumentation().downcast_mut::<Watch>()
}

impl<C: R2D2Connection + Send + 'static> ManageConnection for Manager<C> {
    type Connection = C;
    type Error = diesel::r2d2::Error;

    fn connect(&self) -> Result<C, Self::Error> {
        let mut conn = self.inner.connect()?;
        conn.set_instrumentation(Watch {
            losses: Arc::clone(&self.losses),
            lost: false,
            known_good_at: self.losses(),
        });
        Ok(conn)
    }

    fn is_valid(&self, conn: &mut C) -> Result<(), Self::Error> {
        let losses = self.losses();
        match watch_of(conn) {
            Some(watch) if watch.lost => {
                return Err(diesel::r2d2::Error::QueryError(
                    DieselError::BrokenTransactionManager,
                ));
            }
            Some(watch) if watch.known_good_at >= losses => return Ok(()),
            // Older than the latest loss, or watched by something else: ask the server.
            _ => {}
        }
        self.inner.is_valid(conn)?;
        if let Some(watch) = watch_of(conn) {
            watch.known_good_at = losses;
        }
        Ok(())
    }

    fn has_broken(&self, conn: &mut C) -> bool {
        self.inner.has_broken(conn) || watch_of(conn).is_some_and(|w| w.lost)
    }
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

/// `From<DbError>` for a service's error type: the one way every service maps the database's
/// failures. No connection is `$unavailable` (given the cause), a failed statement goes through
/// the type's own `From<diesel::result::Error>`, and a failed task is `Self::internal`.
#[macro_export]
macro_rules! from_db_error {
    ($error:ty, $unavailable:expr) => {
        impl From<$crate::db::DbError> for $error {
            fn from(e: $crate::db::DbError) -> Self {
                match e {
                    $crate::db::DbError::Unavailable(cause) => ($unavailable)(cause),
                    $crate::db::DbError::Query(e) => e.into(),
                    other => Self::internal(other),
                }
            }
        }
    };
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
            tracing::warn!(error = %e, "no database connection");
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
