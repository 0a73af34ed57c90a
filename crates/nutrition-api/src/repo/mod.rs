//! Plain sync diesel on `&mut PgConnection`, one module per table group. Limits ("one running
//! fast") are enforced by the database, never by reading first and writing after.

use diesel::prelude::*;
use diesel::sql_types::Text;

pub mod devices;
pub mod fasts;
pub mod limits;
pub mod plans;
pub mod profile;

/// Serialises, until the end of the current transaction, every change of one user's data that a
/// limit depends on (the number of devices and plans, the overlap of fasts, the pause history), so
/// that the check and the write of parallel requests, on any replica, happen one after another. A
/// transaction-scoped advisory lock: no row is written for it, and two users whose keys collide
/// merely wait for each other now and then.
pub fn lock_user(conn: &mut PgConnection, user_id: &str) -> QueryResult<()> {
    diesel::sql_query("SELECT pg_advisory_xact_lock(hashtextextended('nutrition.user:' || $1, 0))")
        .bind::<Text, _>(user_id)
        .execute(conn)?;
    Ok(())
}
