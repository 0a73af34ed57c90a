//! Rows of `auth.session` as the account pages see them. Creating and verifying sessions lives in
//! the `session` crate, shared with nutrition-api; deleting a row here ends that session in every
//! service at once, since each verifies against this table on every request.

use ::session::Session;
use ::session::{SessionId, UserId};
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use pg_store::schema::auth::session;

/// The user's sessions that have not expired, newest first.
pub fn list_live(
    conn: &mut PgConnection,
    user_id: &UserId,
    now: DateTime<Utc>,
) -> QueryResult<Vec<Session>> {
    session::table
        .filter(session::user_id.eq(user_id))
        .filter(session::expires_at.gt(now))
        .order((session::created_at.desc(), session::id.desc()))
        .select(Session::as_select())
        .load(conn)
}

/// Ends one of the user's sessions; a session of someone else is left alone.
pub fn delete_one(conn: &mut PgConnection, user_id: &UserId, id: &SessionId) -> QueryResult<usize> {
    diesel::delete(
        session::table
            .filter(session::id.eq(id))
            .filter(session::user_id.eq(user_id)),
    )
    .execute(conn)
}

/// Ends every session of the user.
pub fn delete_all(conn: &mut PgConnection, user_id: &UserId) -> QueryResult<usize> {
    diesel::delete(session::table.filter(session::user_id.eq(user_id))).execute(conn)
}

/// Ends every session of the user but `keep_id`.
pub fn delete_others(
    conn: &mut PgConnection,
    user_id: &UserId,
    keep_id: &SessionId,
) -> QueryResult<usize> {
    diesel::delete(
        session::table
            .filter(session::user_id.eq(user_id))
            .filter(session::id.ne(keep_id)),
    )
    .execute(conn)
}

/// Deletes every expired session; returns how many.
pub fn delete_expired(conn: &mut PgConnection, now: DateTime<Utc>) -> QueryResult<usize> {
    ::session::store::delete_expired(conn, now)
}
