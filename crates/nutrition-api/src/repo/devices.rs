//! Registered push devices.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use session::{SessionId, UserId};

use crate::repo::Conn;
use service_kit::db::DbError;

use crate::repo::Repo;

use pg_store::schema::nutrition::device_token;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = device_token, check_for_backend(diesel::pg::Pg))]
pub struct DeviceRow {
    pub id: String,
    pub user_id: String,
    pub platform: String,
    pub endpoint: String,
    pub p256dh: String,
    pub auth: String,
    pub token: Option<String>,
    pub user_agent: Option<String>,
    pub created_at: DateTime<Utc>,
    pub last_seen_at: DateTime<Utc>,
}

pub struct NewDevice<'a> {
    pub platform: &'a str,
    pub endpoint: &'a str,
    pub p256dh: &'a str,
    pub auth: &'a str,
    pub token: Option<&'a str>,
    pub user_agent: Option<&'a str>,
    /// The session that registers it: the device goes when the session does.
    pub session_id: &'a SessionId,
}

/// Most devices one person has registered at a time.
pub const MAX_DEVICES: i64 = 20;

/// Registers a device, or refreshes the one with the same endpoint. A browser subscription
/// belongs to whoever registered it last: the same endpoint under another user is removed, so a
/// shared browser does not keep receiving the previous user's reminders (their queued messages
/// are cancelled by the sender, which only sends to a device that is still its user's).
///
/// A person keeps at most [`MAX_DEVICES`]: registering one more replaces the least recently seen,
/// which is almost always a browser that was reset or uninstalled without unsubscribing. Under
/// the user's lock, so that parallel registrations count right.
pub(crate) async fn upsert_in(
    conn: &mut Conn,
    user_id: &UserId,
    new: &NewDevice<'_>,
    now: DateTime<Utc>,
) -> QueryResult<DeviceRow> {
    conn.transaction(async |conn| {
        crate::repo::lock_user(conn, user_id).await?;
        diesel::delete(
            device_token::table
                .filter(device_token::endpoint.eq(new.endpoint))
                .filter(device_token::user_id.ne(user_id)),
        )
        .execute(conn)
        .await?;
        let row: DeviceRow = diesel::insert_into(device_token::table)
            .values((
                device_token::id.eq(session::ids::id()),
                device_token::user_id.eq(user_id),
                device_token::platform.eq(new.platform),
                device_token::endpoint.eq(new.endpoint),
                device_token::p256dh.eq(new.p256dh),
                device_token::auth.eq(new.auth),
                device_token::token.eq(new.token),
                device_token::user_agent.eq(new.user_agent),
                device_token::created_at.eq(now),
                device_token::last_seen_at.eq(now),
                device_token::session_id.eq(new.session_id),
            ))
            .on_conflict((device_token::user_id, device_token::endpoint))
            .do_update()
            .set((
                device_token::platform.eq(new.platform),
                device_token::p256dh.eq(new.p256dh),
                device_token::auth.eq(new.auth),
                device_token::token.eq(new.token),
                device_token::user_agent.eq(new.user_agent),
                device_token::last_seen_at.eq(now),
                device_token::session_id.eq(new.session_id),
            ))
            .returning(DeviceRow::as_returning())
            .get_result(conn)
            .await?;
        diesel::sql_query(
            "DELETE FROM nutrition.device_token WHERE id IN (
                SELECT id FROM nutrition.device_token WHERE user_id = $1
                 ORDER BY (id = $2) DESC, last_seen_at DESC, created_at DESC, id DESC
                OFFSET $3)",
        )
        .bind::<diesel::sql_types::Text, _>(user_id)
        .bind::<diesel::sql_types::Text, _>(&row.id)
        .bind::<diesel::sql_types::BigInt, _>(MAX_DEVICES)
        .execute(conn)
        .await?;
        Ok(row)
    })
    .await
}

/// Removes the user's device registered under any of `endpoints` (spellings of one address).
pub(crate) async fn remove_in(
    conn: &mut Conn,
    user_id: &UserId,
    endpoints: &[String],
) -> QueryResult<usize> {
    diesel::delete(
        device_token::table
            .filter(device_token::user_id.eq(user_id))
            .filter(device_token::endpoint.eq_any(endpoints)),
    )
    .execute(conn)
    .await
}

pub(crate) async fn of_user_in(conn: &mut Conn, user_id: &UserId) -> QueryResult<Vec<DeviceRow>> {
    device_token::table
        .filter(device_token::user_id.eq(user_id))
        .select(DeviceRow::as_select())
        .load(conn)
        .await
}

/// Removes the devices whose push service said they are gone.
pub(crate) async fn remove_by_ids_in(conn: &mut Conn, ids: &[String]) -> QueryResult<usize> {
    diesel::delete(device_token::table.filter(device_token::id.eq_any(ids)))
        .execute(conn)
        .await
}

pub async fn upsert(
    repo: &Repo,
    user_id: &UserId,
    new: &NewDevice<'_>,
    now: DateTime<Utc>,
) -> Result<DeviceRow, DbError> {
    repo.with(async |conn| upsert_in(conn, user_id, new, now).await)
        .await
}

pub async fn remove(repo: &Repo, user_id: &UserId, endpoints: &[String]) -> Result<usize, DbError> {
    repo.with(async |conn| remove_in(conn, user_id, endpoints).await)
        .await
}

pub async fn remove_by_ids(repo: &Repo, ids: &[String]) -> Result<usize, DbError> {
    repo.with(async |conn| remove_by_ids_in(conn, ids).await)
        .await
}

/// Counts a test push of `user_id` ([`crate::repo::limits::hit_test_push_in`]); when it is within
/// the limit, the user's devices, else the seconds until the window ends.
pub async fn for_test_push(
    repo: &Repo,
    user_id: &UserId,
    max: u32,
    window_secs: u32,
) -> Result<Result<Vec<DeviceRow>, u64>, DbError> {
    repo.with(async |conn| {
        if let Err(retry_after) =
            crate::repo::limits::hit_test_push_in(conn, user_id, max, window_secs).await?
        {
            return Ok(Err(retry_after));
        }
        of_user_in(conn, user_id).await.map(Ok)
    })
    .await
}
