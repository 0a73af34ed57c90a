//! Rows of `auth.verification`: short-lived single-use values (OAuth state, password-reset and
//! e-mail verification tokens), each under an `identifier` naming its purpose.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use pg_store::schema::auth::verification;

pub fn insert(
    conn: &mut PgConnection,
    identifier: &str,
    value: &str,
    expires_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> QueryResult<()> {
    diesel::insert_into(verification::table)
        .values((
            verification::id.eq(session::ids::id()),
            verification::identifier.eq(identifier),
            verification::value.eq(value),
            verification::expires_at.eq(expires_at),
            verification::created_at.eq(now),
            verification::updated_at.eq(now),
        ))
        .execute(conn)?;
    Ok(())
}

/// The value under `identifier` if it has not expired, left in place.
pub fn find_live(
    conn: &mut PgConnection,
    identifier: &str,
    now: DateTime<Utc>,
) -> QueryResult<Option<String>> {
    verification::table
        .filter(verification::identifier.eq(identifier))
        .filter(verification::expires_at.gt(now))
        .select(verification::value)
        .first(conn)
        .optional()
}

/// Takes the value under `identifier` if it has not expired. Single use: of parallel callers,
/// only the one whose delete removed the row gets it.
pub fn consume(
    conn: &mut PgConnection,
    identifier: &str,
    now: DateTime<Utc>,
) -> QueryResult<Option<String>> {
    Ok(take(conn, identifier, now)?.map(|(value, _)| value))
}

/// [`consume`], answering the row's expiry beside its value, so that the row can be put back.
pub fn take(
    conn: &mut PgConnection,
    identifier: &str,
    now: DateTime<Utc>,
) -> QueryResult<Option<(String, DateTime<Utc>)>> {
    diesel::delete(
        verification::table
            .filter(verification::identifier.eq(identifier))
            .filter(verification::expires_at.gt(now)),
    )
    .returning((verification::value, verification::expires_at))
    .get_result(conn)
    .optional()
}

/// The live row under `identifier` (its id and value), locked until the transaction ends, so
/// that parallel uses of it are weighed one after the other.
pub fn lock_live(
    conn: &mut PgConnection,
    identifier: &str,
    now: DateTime<Utc>,
) -> QueryResult<Option<(String, String)>> {
    verification::table
        .filter(verification::identifier.eq(identifier))
        .filter(verification::expires_at.gt(now))
        .select((verification::id, verification::value))
        .for_update()
        .first(conn)
        .optional()
}

pub fn set_value(
    conn: &mut PgConnection,
    id: &str,
    value: &str,
    now: DateTime<Utc>,
) -> QueryResult<usize> {
    diesel::update(verification::table.find(id))
        .set((
            verification::value.eq(value),
            verification::updated_at.eq(now),
        ))
        .execute(conn)
}

pub fn delete_by_id(conn: &mut PgConnection, id: &str) -> QueryResult<usize> {
    diesel::delete(verification::table.find(id)).execute(conn)
}

/// Deletes every row whose identifier starts with `prefix` and whose value is `value`: the other
/// outstanding tokens of one purpose for one user.
pub fn delete_matching(conn: &mut PgConnection, prefix: &str, value: &str) -> QueryResult<usize> {
    diesel::delete(
        verification::table
            .filter(verification::identifier.like(format!("{prefix}%")))
            .filter(verification::value.eq(value)),
    )
    .execute(conn)
}

/// Deletes what has expired.
pub fn delete_expired(conn: &mut PgConnection, now: DateTime<Utc>) -> QueryResult<usize> {
    diesel::delete(verification::table.filter(verification::expires_at.le(now))).execute(conn)
}

/// Deletes every row under `identifier`, expired or not, and answers the newest one's value and
/// expiry. Of parallel callers, only those whose delete removed a row get one.
pub fn take_newest(
    conn: &mut PgConnection,
    identifier: &str,
) -> QueryResult<Option<(String, DateTime<Utc>)>> {
    let taken: Vec<(String, DateTime<Utc>)> =
        diesel::delete(verification::table.filter(verification::identifier.eq(identifier)))
            .returning((verification::value, verification::expires_at))
            .get_results(conn)?;
    Ok(taken.into_iter().max_by_key(|(_, expires_at)| *expires_at))
}

/// Deletes every row under `identifier`.
pub fn delete_all(conn: &mut PgConnection, identifier: &str) -> QueryResult<usize> {
    diesel::delete(verification::table.filter(verification::identifier.eq(identifier)))
        .execute(conn)
}

/// Deletes every row whose identifier starts with `prefix` and whose value contains `needle`.
pub fn delete_prefixed_containing(
    conn: &mut PgConnection,
    prefix: &str,
    needle: &str,
) -> QueryResult<usize> {
    diesel::delete(
        verification::table
            .filter(verification::identifier.like(format!("{prefix}%")))
            .filter(verification::value.like(format!("%{}%", escape_like(needle)))),
    )
    .execute(conn)
}

/// `text` with LIKE's wildcards escaped (Postgres's default escape is the backslash).
fn escape_like(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}
