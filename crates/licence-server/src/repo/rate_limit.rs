//! `licence_rate_limit`: fixed-window counters per client address, in MariaDB so that every
//! replica counts against the same limit.
//!
//! A replica takes a window's requests in blocks (`licence_rate_take`, migration
//! `2026-11-26-001000_rate_limit_blocks`, which explains the block sizes) and spends them
//! without the database (`routes::limits`), so that the shared counter costs an address that
//! asks often one statement per block. The function runs under the MEMORY table's lock, so
//! concurrent takes, from any replica, never hand out more than the limit in a window.
//!
//! The table has a fixed ceiling (MEMORY). A new address that finds it full first drops every
//! counter whose window has ended and tries again; only if every counter is live is it refused
//! ([`Take::Full`]), never counted nowhere and let through.

use std::time::Duration;

use diesel::prelude::*;
use diesel::sql_types::BigInt;
use diesel_async::RunQueryDsl;

use super::fixed::{Bind, fixed};
use super::{Db, DbError};

#[derive(QueryableByName)]
struct Taken {
    #[diesel(sql_type = BigInt)]
    taken: i64,
}

/// What asking the shared counter for requests found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    /// This many requests (at least one) are the caller's to spend until the window ends, in
    /// `left`.
    Granted { requests: u32, left: Duration },
    /// The window's limit is spent; it ends in `left`.
    Refused { left: Duration },
    /// A new address, and every counter of the table is in a live window: nowhere to count it.
    Full,
}

/// Binds: the bucket, the limit, the window's seconds, how many requests are wanted.
pub(crate) const TAKE: &str = "SELECT licence_rate_take(?, ?, ?, ?) AS taken";

/// Asks for up to `want` (at least one) of `bucket`'s requests, at most `max` per `window_secs`.
pub async fn take(
    db: &Db,
    bucket: &str,
    max: u32,
    window_secs: u32,
    want: u32,
) -> Result<Take, DbError> {
    let binds = take_binds(bucket, max, window_secs, want);
    let row: Taken = db
        .run(async |conn| fixed(TAKE, binds).get_result(conn).await)
        .await?;
    Ok(decode(row.taken))
}

/// The values of [`TAKE`]'s placeholders, in the order of its text.
fn take_binds(bucket: &str, max: u32, window_secs: u32, want: u32) -> Vec<Bind> {
    let int = |v: u32| i32::try_from(v).unwrap_or(i32::MAX);
    vec![
        Bind::Text(bucket.to_owned()),
        Bind::Int(int(max)),
        Bind::Int(int(window_secs)),
        Bind::Int(int(want)),
    ]
}

/// The function's answer: granted × 10⁹ + the window's milliseconds left, or -1 when full.
fn decode(taken: i64) -> Take {
    if taken < 0 {
        return Take::Full;
    }
    const GRANT: i64 = 1_000_000_000;
    let left = Duration::from_millis(u64::try_from(taken % GRANT).unwrap_or(0));
    match u32::try_from(taken / GRANT).unwrap_or(u32::MAX) {
        0 => Take::Refused { left },
        requests => Take::Granted { requests, left },
    }
}

/// Drops counters whose window ended long ago.
pub async fn prune(db: &Db) -> Result<usize, DbError> {
    db.run(async |conn| {
        diesel::sql_query(
            "DELETE FROM licence_rate_limit WHERE window_start < UTC_TIMESTAMP(6) - INTERVAL 1 DAY",
        )
        .execute(conn)
        .await
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_the_function_answer() {
        assert_eq!(decode(-1), Take::Full);
        assert_eq!(
            decode(0),
            Take::Refused {
                left: Duration::ZERO
            }
        );
        assert_eq!(
            decode(41_250),
            Take::Refused {
                left: Duration::from_millis(41_250)
            }
        );
        assert_eq!(
            decode(7_000_060_000),
            Take::Granted {
                requests: 7,
                left: Duration::from_secs(60)
            }
        );
    }
}
