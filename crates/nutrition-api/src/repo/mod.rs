//! Every statement of nutrition-api, one module per table group, behind one door: the
//! worker's [`Repo`] ([`db`]). Handlers call the public `async fn`s taking `&Repo` and never see a
//! connection; those check a connection out and run the statements on it, a transaction where
//! they must be seen together. Limits ("one running fast") are enforced by the database, never
//! by reading first and writing after.

use ::session::UserId;
use diesel::prelude::*;
use diesel::sql_types::Text;
use diesel_async::RunQueryDsl;

pub mod db;
pub mod devices;
pub mod export;
pub mod fasts;
pub mod idempotency;
pub mod limits;
pub mod plans;
pub mod profile;
pub mod session;
mod tls;
pub mod water;
pub mod weights;

pub use db::Repo;

/// The connection kind every statement here runs on.
pub(crate) type Conn = diesel_async::AsyncPgConnection;

/// Serialises, until the end of the current transaction, every change of one user's data that a
/// limit depends on (the number of devices and plans, the overlap of fasts, the pause history), so
/// that the check and the write of parallel requests, on any replica, happen one after another. A
/// transaction-scoped advisory lock: no row is written for it, and two users whose keys collide
/// merely wait for each other now and then.
pub(crate) async fn lock_user(conn: &mut Conn, user_id: &UserId) -> QueryResult<()> {
    diesel::sql_query("SELECT pg_advisory_xact_lock(hashtextextended('nutrition.user:' || $1, 0))")
        .bind::<Text, _>(user_id)
        .execute(conn)
        .await?;
    Ok(())
}
