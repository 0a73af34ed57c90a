//! `usage_idempotency`: the first answer of a consume sent with an `Idempotency-Key`.
//!
//! The key's row is inserted in the same transaction that reads the seat and takes the unit. A parallel request
//! with the same key waits on the primary key until that transaction ends: after a commit it
//! finds the row and answers the stored result; after a rollback its own insert goes through.
//! Either way exactly one unit is taken per key, licence and day.

use chrono::{NaiveDate, NaiveDateTime};
use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error};
use diesel_async::RunQueryDsl;
use domain::licensing::Plan;

use super::activations::{self, SeatFound};
use super::usage::{self, Take};
use super::{Conn, Db, DbError};
use crate::repo::LicenceId;
use crate::schema::usage_idempotency;

/// The result of a consume: whether a unit was taken, the day's count, and the plan it was
/// counted against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Consumed {
    pub taken: bool,
    pub used: u32,
    pub plan: Plan,
}

/// Consumes one unit of the quota of licence `licence_id` for `instance_id` unless `key` was
/// used on this licence and day already; then the first result again. In one transaction: the
/// seat is read, `check` decides on it (its refusal is handed back with nothing taken and no key
/// stored), the key's row is inserted, and the unit taken by [`usage::TAKE`] on the plan `check`
/// answers.
pub async fn consume_once<E>(
    db: &Db,
    licence_id: &LicenceId,
    instance_id: &str,
    day: NaiveDate,
    now: NaiveDateTime,
    key: &str,
    check: impl Fn(Option<SeatFound>) -> Result<Plan, E>,
) -> Result<Result<Consumed, E>, DbError> {
    let mut tries = 0;
    loop {
        tries += 1;
        let attempt = db
            .transaction(async |conn| {
                let found = activations::seat_on(conn, licence_id, instance_id).await?;
                let plan = match check(found) {
                    Ok(plan) => plan,
                    Err(refusal) => return Ok(Err(refusal)),
                };
                match once_on(conn, licence_id, instance_id, day, now, key, plan).await? {
                    Some(done) => Ok(Ok(done)),
                    // The seat went away since it was read: undone, and read again.
                    None => Err(Error::RollbackTransaction),
                }
            })
            .await;
        let retry = match attempt {
            Ok(outcome) => return Ok(outcome),
            Err(DbError::Query(Error::DatabaseError(DatabaseErrorKind::UniqueViolation, _))) => {
                let first = db
                    .run(async |conn| stored(conn, licence_id, day, key).await)
                    .await?;
                if let Some(first) = first {
                    return Ok(Ok(first));
                }
                true
            }
            Err(DbError::Query(
                Error::RollbackTransaction
                | Error::DatabaseError(DatabaseErrorKind::SerializationFailure, _),
            )) => true,
            Err(e) => return Err(e),
        };
        if retry && tries >= 5 {
            return Err(DbError::Unavailable(
                "the consumption conflicted with others five times".into(),
            ));
        }
    }
}

/// The key's row and the unit, on the transaction's connection; `None` when the take's guard
/// did not hold (the seat went away since it was read).
async fn once_on(
    conn: &mut Conn,
    licence_id: &LicenceId,
    instance_id: &str,
    day: NaiveDate,
    now: NaiveDateTime,
    key: &str,
    plan: Plan,
) -> QueryResult<Option<Consumed>> {
    diesel::insert_into(usage_idempotency::table)
        .values((
            usage_idempotency::licence_id.eq(licence_id),
            usage_idempotency::day.eq(day),
            usage_idempotency::idem_key.eq(key),
            usage_idempotency::taken.eq(false),
            usage_idempotency::used.eq(0),
            usage_idempotency::plan.eq(plan.as_str()),
        ))
        .execute(conn)
        .await?;
    let take = Take {
        licence_id: licence_id.to_owned(),
        instance_id: instance_id.to_owned(),
        plan,
        day,
        now,
        access_checked: true,
    };
    let Some((taken, used)) = usage::take_on(conn, &take).await? else {
        return Ok(None);
    };
    diesel::update(usage_idempotency::table.find((licence_id, day, key)))
        .set((
            usage_idempotency::taken.eq(taken),
            usage_idempotency::used.eq(i32::try_from(used).unwrap_or(i32::MAX)),
        ))
        .execute(conn)
        .await?;
    Ok(Some(Consumed { taken, used, plan }))
}

async fn stored(
    conn: &mut Conn,
    licence_id: &LicenceId,
    day: NaiveDate,
    key: &str,
) -> QueryResult<Option<Consumed>> {
    let row: Option<(bool, i32, super::Known<Plan>)> = usage_idempotency::table
        .find((licence_id, day, key))
        .select((
            usage_idempotency::taken,
            usage_idempotency::used,
            usage_idempotency::plan,
        ))
        .first(conn)
        .await
        .optional()?;
    Ok(row.map(|(taken, used, plan)| Consumed {
        taken,
        used: u32::try_from(used).unwrap_or(0),
        plan: plan.0,
    }))
}

/// Drops the keys of days before `before`: a key only ever means something on its own day.
pub async fn prune(db: &Db, before: NaiveDate) -> Result<usize, DbError> {
    db.run(async |conn| {
        diesel::delete(usage_idempotency::table.filter(usage_idempotency::day.lt(before)))
            .execute(conn)
            .await
    })
    .await
}
