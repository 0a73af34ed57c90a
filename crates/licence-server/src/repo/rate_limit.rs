//! `licence_rate_limit`: fixed-window counters per client address, in MariaDB so that every
//! replica counts the same requests.
//!
//! One upsert per request, no read-then-write: `ON DUPLICATE KEY UPDATE` runs under the row's
//! lock. MariaDB evaluates its assignments left to right, each seeing the ones before, so `hits`
//! is set first (1 when the window ran out) and `window_start` restarts exactly when `hits` did.

use diesel::mysql::MysqlConnection;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer, Text};

#[derive(QueryableByName)]
struct Window {
    #[diesel(sql_type = Integer)]
    hits: i32,
    #[diesel(sql_type = BigInt)]
    left_ms: i64,
}

/// Counts one request in `bucket`; `Ok(None)` while within `max` per `window_secs`, else
/// `Ok(Some(seconds))` until the window ends.
pub fn hit(
    conn: &mut MysqlConnection,
    bucket: &str,
    max: u32,
    window_secs: u32,
) -> QueryResult<Option<u64>> {
    let window = i32::try_from(window_secs).unwrap_or(i32::MAX);
    diesel::sql_query(
        "INSERT INTO licence_rate_limit (bucket, window_start, hits) VALUES (?, UTC_TIMESTAMP(6), 1) \
         ON DUPLICATE KEY UPDATE \
           hits = IF(window_start <= UTC_TIMESTAMP(6) - INTERVAL ? SECOND, 1, hits + 1), \
           window_start = IF(hits = 1, UTC_TIMESTAMP(6), window_start)",
    )
    .bind::<Text, _>(bucket)
    .bind::<Integer, _>(window)
    .execute(conn)?;
    let w: Window = diesel::sql_query(
        "SELECT hits, CAST(TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), \
           window_start + INTERVAL ? SECOND) DIV 1000 AS SIGNED) AS left_ms \
         FROM licence_rate_limit WHERE bucket = ?",
    )
    .bind::<Integer, _>(window)
    .bind::<Text, _>(bucket)
    .get_result(conn)?;
    if u32::try_from(w.hits).unwrap_or(u32::MAX) <= max {
        return Ok(None);
    }
    // Rounded up: a client waiting the advertised time finds the window over.
    Ok(Some(
        u64::try_from((w.left_ms.max(0) + 999) / 1000)
            .unwrap_or(1)
            .max(1),
    ))
}

/// Drops counters whose window ended long ago.
pub fn prune(conn: &mut MysqlConnection) -> QueryResult<usize> {
    diesel::sql_query(
        "DELETE FROM licence_rate_limit WHERE window_start < UTC_TIMESTAMP(6) - INTERVAL 1 DAY",
    )
    .execute(conn)
}
