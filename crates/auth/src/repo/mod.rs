//! Every query of the auth service, as plain sync diesel, one module per table, and [`Db`], the
//! one way a handler reaches them.
//!
//! auth stays on synchronous diesel and r2d2: its requests are bounded by password hashing, not
//! by the database, and a sign-up or a reset writes several rows that must stand or fall
//! together. A handler hands [`Db::read`] or [`Db::write`] a unit of work made of the functions
//! below; it never holds a pool, a connection kind or SQL.

use diesel::Connection;
pub use diesel::result::QueryResult;
use pg_store::PgPool;

use crate::error::ApiError;

pub mod accounts;
pub mod outbox;
pub mod passkeys;
pub mod rate_limits;
pub mod sessions;
pub mod two_factor;
pub mod users;
pub mod verification;

/// The connection a unit of work runs on: the functions of this module take it.
pub type Tx = diesel::PgConnection;

/// auth's database: units of work on the blocking pool.
#[derive(Clone)]
pub struct Db(PgPool);

impl Db {
    pub fn new(pool: PgPool) -> Self {
        Self(pool)
    }

    /// The pool, for what runs beside the handlers (readiness, metrics, the mail outbox, the
    /// session guard).
    pub fn pool(&self) -> &PgPool {
        &self.0
    }

    /// Runs `work` on one connection, each statement committed on its own: for a single
    /// statement or reads that need no common snapshot.
    pub async fn read<T, E, F>(&self, work: F) -> Result<T, ApiError>
    where
        F: FnOnce(&mut Tx) -> Result<T, E> + Send + 'static,
        E: Into<ApiError>,
        T: Send + 'static,
    {
        pg_store::run(&self.0, move |conn| work(conn).map_err(Into::into)).await
    }

    /// Runs `work` in one transaction: committed when it returns `Ok`, rolled back otherwise.
    pub async fn write<T, E, F>(&self, work: F) -> Result<T, ApiError>
    where
        F: FnOnce(&mut Tx) -> Result<T, E> + Send + 'static,
        E: Into<ApiError> + From<diesel::result::Error>,
        T: Send + 'static,
    {
        pg_store::run(&self.0, move |conn| {
            conn.transaction(work).map_err(Into::into)
        })
        .await
    }
}
