//! `daily_usage`: units consumed per licence per Europe/Rome day.
//!
//! One statement takes a unit, [`TAKE`] (for one licence or several at once): an
//! `INSERT … SELECT … ON DUPLICATE KEY UPDATE used = IF(used < limit, used + 1, used)`, which
//! InnoDB runs under the row's exclusive lock, so that however many requests arrive at once the
//! count never passes the limit. Its `SELECT` is the guard: the licence is on the plan asked,
//! the installation holds a seat on it, and the licence plainly grants access (the access guard
//! in SQL, unless the caller has just checked access itself). Every consumption goes through it:
//! the plain one, the one whose licence has access on other grounds, the one with an
//! `Idempotency-Key`.

use chrono::{NaiveDate, NaiveDateTime};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer, Text};
use diesel_async::RunQueryDsl;
use domain::licensing::Plan;

use super::fixed::{Bind, fixed};
use super::{Conn, Db, DbError, Pool};
use crate::repo::LicenceId;
use crate::schema::daily_usage;

/// One unit of a licence's quota asked for by one installation.
#[derive(Debug, Clone)]
pub struct Take {
    pub licence_id: LicenceId,
    pub instance_id: String,
    /// The plan the licence must be on: the token's, or the one the caller just read.
    pub plan: Plan,
    pub day: NaiveDate,
    /// The instant the licence must not have expired by, cut to MariaDB's microseconds.
    pub now: NaiveDateTime,
    /// The caller has just checked that the licence grants access (`check` on the seat it
    /// read): the statement's own access guard is skipped, the plan and seat tests stay.
    pub access_checked: bool,
}

/// Whether the unit was taken and the day's count (the count that stopped it when refused), or
/// `None` when the statement's guard did not hold: no such licence or seat, not on the plan,
/// or no plain access.
pub type Taken = Option<(bool, u32)>;

/// One unit of the quota: sent with the other takes waiting on this worker ([`Takes`]).
pub async fn take(db: &Db, take: Take) -> Result<Taken, DbError> {
    db.takes.submit(take).await
}

/// [`take`] on a connection the caller holds (in a transaction), alone.
pub(crate) async fn take_on(conn: &mut Conn, take: &Take) -> QueryResult<Taken> {
    let mut rows = take_rows(conn, std::slice::from_ref(take)).await?;
    Ok(rows.pop().map(|row| row.outcome()))
}

/// Most consumptions [`TAKE`] takes in one statement.
pub(crate) const MAX_TAKEN_AT_ONCE: usize = 16;

/// The take for `n` licences at once (1 to [`MAX_TAKEN_AT_ONCE`]), indexed by `n`: one round
/// trip, parse, plan and commit for all of them, where MariaDB's cost per statement is most of
/// what a consumption costs it (bench/licence/README.md, "What a request costs"). Each licence
/// is taken for one installation on one plan, and appears at most once.
///
/// The rows are read and written one after the other: the guard, then the insert or the update
/// under the row's lock, then the `RETURNING` row, which reads `LAST_INSERT_ID()` as that row's
/// own update left it (`LAST_INSERT_ID(expr)` marks whether the unit was taken), so a refusal
/// reports the count it was decided on. The row names its licence, since a licence whose guard
/// does not hold answers none. The quota is the plan's, from the licence row the guard has just
/// matched. A new day's row starts at one unit without comparing it to the quota: every plan's
/// is at least one. `STRAIGHT_JOIN` reads the licences by their primary key, in its order, each
/// before its seats: two such statements lock their rows in the same order, so the writes of one
/// never wait in a cycle with another's, and each licence before its seats, as activate and
/// deactivate do.
///
/// Placeholders: the day; the `n` licence ids; then `n` times (licence id, plan, instance id);
/// then whether access was checked (1 skips the access guard) and the instant the licences must
/// not have expired by.
pub(crate) static TAKE: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| {
    let quota = Plan::ALL
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
                 AND (? OR (l.status = 'active' AND l.disabled_at IS NULL \
                 AND (l.expires_at IS NULL OR l.expires_at > ?))) \
                 ON DUPLICATE KEY UPDATE \
                 daily_usage.used = IF(daily_usage.used < CASE l.plan {quota} ELSE 0 END, \
                 LAST_INSERT_ID(daily_usage.used + 1), daily_usage.used + 0 * LAST_INSERT_ID(0)), \
                 daily_usage.updated_at = IF(LAST_INSERT_ID() > 0, VALUES(updated_at), daily_usage.updated_at) \
                 RETURNING licence_id, used, CAST(LAST_INSERT_ID() AS SIGNED) AS taken"
            )
        })
        .collect()
});

/// A row of [`TAKE`].
#[derive(QueryableByName)]
struct TakenRow {
    #[diesel(sql_type = Text)]
    licence_id: LicenceId,
    #[diesel(sql_type = Integer)]
    used: i32,
    #[diesel(sql_type = BigInt)]
    taken: i64,
}

impl TakenRow {
    fn outcome(&self) -> (bool, u32) {
        (self.taken > 0, u32::try_from(self.used).unwrap_or(0))
    }
}

/// [`TAKE`] for `batch` (all of one day and one `access_checked`, of distinct licences).
async fn take_rows(conn: &mut Conn, batch: &[Take]) -> QueryResult<Vec<TakenRow>> {
    let Some(first) = batch.first() else {
        return Ok(Vec::new());
    };
    let mut binds = Vec::with_capacity(3 + 4 * batch.len());
    binds.push(Bind::Date(first.day));
    binds.extend(batch.iter().map(|t| Bind::Text(t.licence_id.to_string())));
    for t in batch {
        binds.push(Bind::Text(t.licence_id.to_string()));
        binds.push(Bind::Text(t.plan.as_str().to_owned()));
        binds.push(Bind::Text(t.instance_id.clone()));
    }
    binds.push(Bind::Int(i32::from(first.access_checked)));
    // The latest of their instants, so that no licence passes the expiry test for an instant
    // before its own request's.
    let latest = batch.iter().map(|t| t.now).max().unwrap_or(first.now);
    binds.push(Bind::Datetime(latest));
    let sql = TAKE[batch.len()].as_str();
    fixed(sql, binds).load(conn).await
}

/// The takes waiting on one worker, sent together.
pub(crate) struct Takes(pub(crate) Pool<Conn>);

impl service_kit::adb::Batch for Takes {
    type Item = Take;
    type Answer = Taken;
    const KIND: &'static str = "consume";
    const MAX: usize = MAX_TAKEN_AT_ONCE;
    /// Two, though one is faster while no lock is held long (held on two cores with one worker
    /// per core: 12,300–12,700 consumptions/s on one connection per worker, 11,200–11,800 with
    /// two statements in flight): a consumption locks its rows, and one that waits on another
    /// transaction's lock (a consumption with an `Idempotency-Key` holds its day's row a little
    /// longer) would otherwise hold up every consumption of its worker.
    const SENDERS: usize = 2;

    /// Of one day and one `access_checked`, and never two of one licence: a consumption must
    /// see the count the other left.
    fn fits(batch: &[Take], take: &Take) -> bool {
        batch[0].day == take.day
            && batch[0].access_checked == take.access_checked
            && batch.iter().all(|t| t.licence_id != take.licence_id)
    }

    async fn send(&self, batch: &[Take]) -> Result<Vec<Taken>, DbError> {
        let mut rows = self
            .0
            .run(async |conn| take_rows(conn, batch).await)
            .await?;
        Ok(batch
            .iter()
            .map(|t| {
                let i = rows.iter().position(|r| r.licence_id == t.licence_id)?;
                Some(rows.swap_remove(i).outcome())
            })
            .collect())
    }
}

/// Units used on `day` (0 when nothing was consumed).
pub async fn used(db: &Db, licence_id: &LicenceId, day: NaiveDate) -> Result<u32, DbError> {
    let used: Option<i32> = db
        .run(async |conn| {
            daily_usage::table
                .find((licence_id, day))
                .select(daily_usage::used)
                .first(conn)
                .await
                .optional()
        })
        .await?;
    Ok(used.and_then(|u| u32::try_from(u).ok()).unwrap_or(0))
}
