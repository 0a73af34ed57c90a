//! `webhook_event`: every payment event processed, under a unique key.

use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error};
use diesel_async::RunQueryDsl;

use super::Conn;
use crate::repo::LicenceId;
use crate::schema::webhook_event;

/// Records `key` inside the caller's transaction. `Ok(false)` when the key is already recorded:
/// the event was processed before (or is being processed right now by a concurrent delivery,
/// in which case this insert waited for that transaction to commit).
pub async fn record(
    conn: &mut Conn,
    key: &str,
    event_name: &str,
    received_at: chrono::NaiveDateTime,
) -> QueryResult<bool> {
    let outcome = diesel::insert_into(webhook_event::table)
        .values((
            webhook_event::event_key.eq(key),
            webhook_event::event_name.eq(event_name),
            webhook_event::received_at.eq(received_at),
        ))
        .execute(conn)
        .await;
    match outcome {
        Ok(_) => Ok(true),
        Err(Error::DatabaseError(DatabaseErrorKind::UniqueViolation, _)) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Links the recorded event to the licence it touched, for the operator reading the history.
pub async fn link(conn: &mut Conn, key: &str, licence_id: &LicenceId) -> QueryResult<()> {
    diesel::update(webhook_event::table.filter(webhook_event::event_key.eq(key)))
        .set(webhook_event::licence_id.eq(licence_id))
        .execute(conn)
        .await?;
    Ok(())
}

pub async fn count(conn: &mut Conn) -> QueryResult<i64> {
    webhook_event::table.count().get_result(conn).await
}
