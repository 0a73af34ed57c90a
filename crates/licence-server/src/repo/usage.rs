//! `daily_usage`: units consumed per licence per Europe/Rome day.
//!
//! Consuming is one conditional statement, `UPDATE … SET used = used + 1 WHERE … AND used < limit`,
//! which InnoDB runs under the row's exclusive lock: however many requests arrive at once, the
//! count never passes the limit. `LAST_INSERT_ID(expr)` hands the new count back on the same
//! connection without a second read of the row (and so without a transaction).

use chrono::NaiveDate;
use diesel::mysql::MysqlConnection;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Date, Text};

use super::fixed::{Bind, fixed};
use crate::schema::daily_usage;

#[derive(QueryableByName)]
struct Count {
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
    if increment(conn, licence_id, day, limit)? {
        return Ok((true, last_insert_id(conn)?));
    }
    // Either the day's row does not exist yet or the quota is used up. Creating the row on its
    // own (autocommit) holds no lock into the retry, so concurrent first requests cannot deadlock.
    diesel::sql_query("INSERT IGNORE INTO daily_usage (licence_id, day, used) VALUES (?, ?, 0)")
        .bind::<Text, _>(licence_id)
        .bind::<Date, _>(day)
        .execute(conn)?;
    if increment(conn, licence_id, day, limit)? {
        return Ok((true, last_insert_id(conn)?));
    }
    Ok((false, used(conn, licence_id, day)?))
}

fn increment(
    conn: &mut MysqlConnection,
    licence_id: &str,
    day: NaiveDate,
    limit: u32,
) -> QueryResult<bool> {
    let changed = fixed(
        "UPDATE daily_usage SET used = LAST_INSERT_ID(used + 1), updated_at = UTC_TIMESTAMP(6) \
         WHERE licence_id = ? AND day = ? AND used < ?",
        vec![
            Bind::Text(licence_id.to_owned()),
            Bind::Date(day),
            Bind::Int(i32::try_from(limit).unwrap_or(i32::MAX)),
        ],
    )
    .execute(conn)?;
    Ok(changed == 1)
}

fn last_insert_id(conn: &mut MysqlConnection) -> QueryResult<u32> {
    let c: Count =
        fixed("SELECT CAST(LAST_INSERT_ID() AS SIGNED) AS n", Vec::new()).get_result(conn)?;
    Ok(u32::try_from(c.n).unwrap_or(0))
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
