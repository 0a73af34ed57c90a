//! `daily_usage`: units consumed per licence per Europe/Rome day.
//!
//! Consuming is the stored function `licence_usage_take` (migration
//! `2026-11-25-000800_usage_take_function`, which explains it): one `INSERT … ON DUPLICATE KEY
//! UPDATE used = IF(used < limit, used + 1, used)`, which InnoDB runs under the row's exclusive
//! lock, so that however many requests arrive at once the count never passes the limit. The
//! function hands back the new count (or the count that stopped it) in the same round trip, and
//! its statement commits like any other under autocommit. Over the worker's own connections, a
//! consumption sends the same update as [`TAKE_ON_PLAN`], without the function.

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

/// One unit of `day`'s quota for an installation whose token names the licence's plan, in one
/// statement that is its own guard: the licence is `active`, not disabled, not past its
/// `expires_at` at the bound instant, still on the token's plan, and the installation holds a
/// seat on it. When all of that holds (which implies [`domain::licensing::has_access`], as in
/// `SEAT_AND_TAKE`), the statement takes the unit as `licence_usage_take` does and answers one
/// row: the day's count, and `taken`, the count again when this statement took the unit or 0
/// when the plan's limit (the last placeholder) was already reached. When any of it does not
/// hold, it inserts nothing and answers no row, and the caller asks the seat's statement why.
///
/// It is the function's `INSERT … ON DUPLICATE KEY UPDATE` with the seat's checks as its
/// `SELECT`, without the call: MariaDB runs it about a third faster than the seat's statement
/// calling the function (bench/licence/README.md). `LAST_INSERT_ID(expr)` marks what happened
/// as in the function (migration `2026-11-25-000800_usage_take_function`), and `RETURNING`
/// reads the row as the update left it, under the row's lock, so a refusal reports the count
/// it was decided on. Only the worker's own client reads the answer of a prepared `INSERT …
/// RETURNING`; diesel's (libmariadb) reports no columns for it, so the pool keeps the function.
pub(crate) const TAKE_ON_PLAN: &str = "INSERT INTO daily_usage (licence_id, day, used, updated_at) \
     SELECT l.id, ?, LAST_INSERT_ID(1), UTC_TIMESTAMP(6) \
     FROM licence l JOIN activation a ON a.licence_id = l.id AND a.instance_id = ? \
     WHERE l.id = ? AND l.plan = ? AND l.status = 'active' AND l.disabled_at IS NULL \
     AND (l.expires_at IS NULL OR l.expires_at > ?) \
     ON DUPLICATE KEY UPDATE \
     daily_usage.used = IF(daily_usage.used < ?, LAST_INSERT_ID(daily_usage.used + 1), \
     daily_usage.used + 0 * LAST_INSERT_ID(0)), \
     daily_usage.updated_at = IF(LAST_INSERT_ID() > 0, VALUES(updated_at), daily_usage.updated_at) \
     RETURNING used, LAST_INSERT_ID() AS taken";

/// The values of [`TAKE_ON_PLAN`]'s placeholders, in the order of its text.
pub(crate) fn take_on_plan_binds(
    licence_id: &str,
    instance_id: &str,
    plan: domain::licensing::Plan,
    day: NaiveDate,
    now: chrono::NaiveDateTime,
) -> Vec<Bind> {
    vec![
        Bind::Date(day),
        Bind::Text(instance_id.to_owned()),
        Bind::Text(licence_id.to_owned()),
        Bind::Text(plan.as_str().to_owned()),
        Bind::Datetime(now),
        Bind::Int(i32::try_from(plan.daily_quota()).unwrap_or(i32::MAX)),
    ]
}

/// Most consumptions [`TAKE_ON_PLAN_MANY`] takes in one statement.
pub(crate) const MAX_TAKEN_AT_ONCE: usize = 16;

/// [`TAKE_ON_PLAN`] for `n` licences at once (2 to [`MAX_TAKEN_AT_ONCE`]), indexed by `n`: one
/// round trip, parse, plan and commit for all of them, where MariaDB's cost per statement is most
/// of what a consumption costs it (bench/licence/README.md, "What a request costs"). Each
/// licence is taken for one installation on the plan its token names, and appears at most once.
///
/// The rows are read and written one after the other, each as the single statement would: its
/// guard, then the insert or the update under the row's lock, then its `RETURNING` row, which
/// reads `LAST_INSERT_ID()` as that row's own update left it. The row names its licence, since
/// a licence whose guard does not hold answers none. The quota is the plan's, from the licence
/// row the guard has just matched to the token's plan. `STRAIGHT_JOIN` reads the licences by
/// their primary key, in its order, each before its seats: two such statements lock their rows
/// in the same order, so the writes of one never wait in a cycle with another's, and each
/// licence before its seats, as activate and deactivate do.
///
/// Placeholders: the day; the `n` licence ids; then `n` times (licence id, plan, instance id);
/// then the instant the licences must not have expired by.
pub(crate) static TAKE_ON_PLAN_MANY: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(
    || {
        let quota = domain::licensing::Plan::ALL
            .iter()
            .map(|p| format!("WHEN '{}' THEN {}", p.as_str(), p.daily_quota()))
            .collect::<Vec<_>>()
            .join(" ");
        (0..=MAX_TAKEN_AT_ONCE)
            .map(|n| {
                let ids = vec!["?"; n].join(", ");
                let rows = vec!["(?, ?, ?)"; n].join(", ");
                format!(
                    "INSERT INTO daily_usage (licence_id, day, used, updated_at) \
                     SELECT l.id, ?, LAST_INSERT_ID(1), UTC_TIMESTAMP(6) \
                     FROM licence l STRAIGHT_JOIN activation a ON a.licence_id = l.id \
                     WHERE l.id IN ({ids}) AND (l.id, l.plan, a.instance_id) IN ({rows}) \
                     AND l.status = 'active' AND l.disabled_at IS NULL \
                     AND (l.expires_at IS NULL OR l.expires_at > ?) \
                     ON DUPLICATE KEY UPDATE \
                     daily_usage.used = IF(daily_usage.used < CASE l.plan {quota} ELSE 0 END, \
                     LAST_INSERT_ID(daily_usage.used + 1), daily_usage.used + 0 * LAST_INSERT_ID(0)), \
                     daily_usage.updated_at = IF(LAST_INSERT_ID() > 0, VALUES(updated_at), daily_usage.updated_at) \
                     RETURNING licence_id, used, LAST_INSERT_ID() AS taken"
                )
            })
            .collect()
    },
);

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
