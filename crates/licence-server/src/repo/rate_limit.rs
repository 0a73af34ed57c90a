//! `licence_rate_limit`: fixed-window counters per client address, in MariaDB so that every
//! replica counts the same requests.
//!
//! A request within the limit costs one statement: a conditional `UPDATE` that counts it only
//! while the window has room (or has run out, which restarts it), under the row's lock, so
//! concurrent requests can never count past the limit. `hits` counts the requests let through;
//! a request refused leaves the row alone. Only the first request of an address (the row does
//! not exist yet) and a refused one take more round trips: the row is created on its own
//! (autocommit, no lock held into the retry), and a refusal reads when the window ends.
//! MariaDB evaluates `SET` assignments left to right, each seeing the ones before, so `hits` is
//! set first (1 when the window ran out) and `window_start` restarts exactly when `hits` did.
//!
//! The table has a fixed ceiling (MEMORY). A new address that finds it full first drops every
//! counter whose window has ended and tries again; only if every counter is live is it refused
//! ([`Hit::Full`]), never counted nowhere and let through.

use diesel::mysql::MysqlConnection;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer, Text};

use super::fixed::{Bind, fixed};

#[derive(QueryableByName)]
struct Left {
    #[diesel(sql_type = BigInt)]
    left_ms: i64,
}

/// What counting a request found.
#[derive(Debug, PartialEq, Eq)]
pub enum Hit {
    /// Counted, within the limit.
    Within,
    /// Over the limit until the window ends, in this many seconds.
    Refused(u64),
    /// A new address, and every counter of the table is in a live window: nowhere to count it.
    Full,
}

/// Counts one request in `bucket`, at most `max` per `window_secs`.
pub fn hit(
    conn: &mut MysqlConnection,
    bucket: &str,
    max: u32,
    window_secs: u32,
) -> QueryResult<Hit> {
    let window = i32::try_from(window_secs).unwrap_or(i32::MAX);
    let max = i32::try_from(max).unwrap_or(i32::MAX);
    if count(conn, bucket, max, window)? {
        return Ok(Hit::Within);
    }
    // Either the address has no row yet or its window is full.
    let created = match create(conn, bucket) {
        Err(e) if is_table_full(&e) => {
            // Counters whose window has ended count nothing any more: make room and try once
            // more. Only when every counter is live is there no room (MEMORY's fixed ceiling).
            ended(conn, window)?;
            match create(conn, bucket) {
                Err(e) if is_table_full(&e) => return Ok(Hit::Full),
                other => other?,
            }
        }
        other => other?,
    };
    // `max` is at least 1 (settings), so the request that creates the row is within it.
    if created == 1 || count(conn, bucket, max, window)? {
        return Ok(Hit::Within);
    }
    let left: Option<Left> = diesel::sql_query(
        "SELECT CAST(TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), \
           window_start + INTERVAL ? SECOND) DIV 1000 AS SIGNED) AS left_ms \
         FROM licence_rate_limit WHERE bucket = ?",
    )
    .bind::<Integer, _>(window)
    .bind::<Text, _>(bucket)
    .get_result(conn)
    .optional()?;
    let left_ms = left.map_or(0, |l| l.left_ms);
    // Rounded up: a client waiting the advertised time finds the window over.
    Ok(Hit::Refused(
        u64::try_from((left_ms.max(0) + 999) / 1000)
            .unwrap_or(1)
            .max(1),
    ))
}

fn create(conn: &mut MysqlConnection, bucket: &str) -> QueryResult<usize> {
    diesel::sql_query(
        "INSERT IGNORE INTO licence_rate_limit (bucket, window_start, hits) \
         VALUES (?, UTC_TIMESTAMP(6), 1)",
    )
    .bind::<Text, _>(bucket)
    .execute(conn)
}

/// MariaDB's ER_RECORD_FILE_FULL (1114), which diesel reports only by its message.
fn is_table_full(e: &diesel::result::Error) -> bool {
    matches!(e, diesel::result::Error::DatabaseError(_, info)
        if info.message().contains("licence_rate_limit") && info.message().contains("is full"))
}

/// Drops the counters whose window has ended.
fn ended(conn: &mut MysqlConnection, window: i32) -> QueryResult<usize> {
    diesel::sql_query(
        "DELETE FROM licence_rate_limit WHERE window_start <= UTC_TIMESTAMP(6) - INTERVAL ? SECOND",
    )
    .bind::<Integer, _>(window)
    .execute(conn)
}

/// Counts a request in its address's row if the window has room or has ended (binds: the
/// window's seconds, the bucket, the limit, the window's seconds).
pub(super) const COUNT: &str = "UPDATE licence_rate_limit SET \
       hits = IF(window_start <= UTC_TIMESTAMP(6) - INTERVAL ? SECOND, 1, hits + 1), \
       window_start = IF(hits = 1, UTC_TIMESTAMP(6), window_start) \
     WHERE bucket = ? AND (hits < ? OR window_start <= UTC_TIMESTAMP(6) - INTERVAL ? SECOND)";

/// Counts the request in an existing row if its window has room or has ended; whether it did.
fn count(conn: &mut MysqlConnection, bucket: &str, max: i32, window: i32) -> QueryResult<bool> {
    let changed = fixed(
        COUNT,
        vec![
            Bind::Int(window),
            Bind::Text(bucket.to_owned()),
            Bind::Int(max),
            Bind::Int(window),
        ],
    )
    .execute(conn)?;
    Ok(changed == 1)
}

/// Drops counters whose window ended long ago.
pub fn prune(conn: &mut MysqlConnection) -> QueryResult<usize> {
    diesel::sql_query(
        "DELETE FROM licence_rate_limit WHERE window_start < UTC_TIMESTAMP(6) - INTERVAL 1 DAY",
    )
    .execute(conn)
}
