//! `daily_usage`: units consumed per licence per Europe/Rome day.
//!
//! Consuming is the stored function `licence_usage_take` (migration
//! `2026-11-25-000800_usage_take_function`, which explains it): one `INSERT … ON DUPLICATE KEY
//! UPDATE used = IF(used < limit, used + 1, used)`, which InnoDB runs under the row's exclusive
//! lock, so that however many requests arrive at once the count never passes the limit. The
//! function hands back the new count (or the count that stopped it) in the same round trip, and
//! its statement commits like any other under autocommit.

use chrono::NaiveDate;
use diesel::mysql::MysqlConnection;
use diesel::prelude::*;
use diesel::sql_types::BigInt;

use super::fixed::{Bind, fixed};
use crate::schema::daily_usage;

#[derive(QueryableByName)]
struct Taken {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// `Ok((true, used))` when one unit was taken (`used` counts it), `Ok((false, used))` when the
/// day's `limit` was already reached.
pub fn consume(
    conn: &mut MysqlConnection,
    licence_id: &str,
    day: NaiveDate,
    limit: u32,
) -> QueryResult<(bool, u32)> {
    let taken: Taken = fixed(
        "SELECT licence_usage_take(?, ?, ?) AS n",
        vec![
            Bind::Text(licence_id.to_owned()),
            Bind::Date(day),
            Bind::Int(i32::try_from(limit).unwrap_or(i32::MAX)),
        ],
    )
    .get_result(conn)?;
    Ok(outcome(taken.n))
}

/// `licence_usage_take`'s answer: the new count when positive, `-1 - used` when refused.
pub(crate) fn outcome(n: i64) -> (bool, u32) {
    let count = |v: i64| u32::try_from(v).unwrap_or(u32::MAX);
    if n > 0 {
        (true, count(n))
    } else {
        (false, count(-1 - n))
    }
}

/// Units used on `day` (0 when nothing was consumed).
pub fn used(conn: &mut MysqlConnection, licence_id: &str, day: NaiveDate) -> QueryResult<u32> {
    let used: Option<i32> = daily_usage::table
        .find((licence_id, day))
        .select(daily_usage::used)
        .first(conn)
        .optional()?;
    Ok(used.and_then(|u| u32::try_from(u).ok()).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes() {
        assert_eq!(outcome(1), (true, 1));
        assert_eq!(outcome(250), (true, 250));
        assert_eq!(outcome(-1), (false, 0));
        assert_eq!(outcome(-251), (false, 250));
    }
}
