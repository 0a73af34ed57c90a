//! Registered push devices.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use nutrition_store::schema::nutrition::device_token;

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
    pub session_id: &'a str,
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
pub fn upsert(
    conn: &mut PgConnection,
    user_id: &str,
    new: &NewDevice<'_>,
    now: DateTime<Utc>,
) -> QueryResult<DeviceRow> {
    conn.transaction(|conn| {
        crate::repo::lock_user(conn, user_id)?;
        diesel::delete(
            device_token::table
                .filter(device_token::endpoint.eq(new.endpoint))
                .filter(device_token::user_id.ne(user_id)),
        )
        .execute(conn)?;
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
            .get_result(conn)?;
        diesel::sql_query(
            "DELETE FROM nutrition.device_token WHERE id IN (
                SELECT id FROM nutrition.device_token WHERE user_id = $1
                 ORDER BY (id = $2) DESC, last_seen_at DESC, created_at DESC, id DESC
                OFFSET $3)",
        )
        .bind::<diesel::sql_types::Text, _>(user_id)
        .bind::<diesel::sql_types::Text, _>(&row.id)
        .bind::<diesel::sql_types::BigInt, _>(MAX_DEVICES)
        .execute(conn)?;
        Ok(row)
    })
}

/// Removes the user's device registered under any of `endpoints` (spellings of one address).
pub fn remove(conn: &mut PgConnection, user_id: &str, endpoints: &[String]) -> QueryResult<usize> {
    diesel::delete(
        device_token::table
            .filter(device_token::user_id.eq(user_id))
            .filter(device_token::endpoint.eq_any(endpoints)),
    )
    .execute(conn)
}

pub fn of_user(conn: &mut PgConnection, user_id: &str) -> QueryResult<Vec<DeviceRow>> {
    device_token::table
        .filter(device_token::user_id.eq(user_id))
        .select(DeviceRow::as_select())
        .load(conn)
}

/// Removes the devices whose push service said they are gone.
pub fn remove_by_ids(conn: &mut PgConnection, ids: &[String]) -> QueryResult<usize> {
    diesel::delete(device_token::table.filter(device_token::id.eq_any(ids))).execute(conn)
}
