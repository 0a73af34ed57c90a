//! `usage_idempotency`: the first answer of a consume sent with an `Idempotency-Key`.
//!
//! The key's row is inserted in the same transaction that takes the unit. A parallel request
//! with the same key waits on the primary key until that transaction ends: after a commit it
//! finds the row and answers the stored result; after a rollback its own insert goes through.
//! Either way exactly one unit is taken per key, licence and day.

use chrono::NaiveDate;
use diesel::mysql::MysqlConnection;
use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error};
use domain::licensing::Plan;

use super::usage;
use crate::schema::usage_idempotency;

/// The result of a consume: whether a unit was taken, the day's count, and the plan it was
/// counted against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Consumed {
    pub taken: bool,
    pub used: u32,
    pub plan: Plan,
}

/// Consumes one unit of `plan`'s quota unless `key` was used on this licence and day already;
/// then the first result again.
pub fn consume_once(
    conn: &mut MysqlConnection,
    licence_id: &str,
    day: NaiveDate,
    key: &str,
    plan: Plan,
) -> QueryResult<Consumed> {
    let mut tries = 0;
    loop {
        tries += 1;
        let attempt = conn.transaction(|conn| {
            diesel::insert_into(usage_idempotency::table)
                .values((
                    usage_idempotency::licence_id.eq(licence_id),
                    usage_idempotency::day.eq(day),
                    usage_idempotency::idem_key.eq(key),
                    usage_idempotency::taken.eq(false),
                    usage_idempotency::used.eq(0),
                    usage_idempotency::plan.eq(plan.as_str()),
                ))
                .execute(conn)?;
            let (taken, used) = usage::consume(conn, licence_id, day, plan.daily_quota())?;
            diesel::update(usage_idempotency::table.find((licence_id, day, key)))
                .set((
                    usage_idempotency::taken.eq(taken),
                    usage_idempotency::used.eq(i32::try_from(used).unwrap_or(i32::MAX)),
                ))
                .execute(conn)?;
            Ok(Consumed { taken, used, plan })
        });
        match attempt {
            Ok(done) => return Ok(done),
            Err(Error::DatabaseError(DatabaseErrorKind::UniqueViolation, _)) => {
                if let Some(first) = stored(conn, licence_id, day, key)? {
                    return Ok(first);
                }
            }
            Err(e @ Error::DatabaseError(DatabaseErrorKind::SerializationFailure, _))
                if tries >= 5 =>
            {
                return Err(e);
            }
            Err(Error::DatabaseError(DatabaseErrorKind::SerializationFailure, _)) => {}
            Err(e) => return Err(e),
        }
        if tries >= 5 {
            return Err(Error::NotFound);
        }
    }
}

fn stored(
    conn: &mut MysqlConnection,
    licence_id: &str,
    day: NaiveDate,
    key: &str,
) -> QueryResult<Option<Consumed>> {
    let row: Option<(bool, i32, String)> = usage_idempotency::table
        .find((licence_id, day, key))
        .select((
            usage_idempotency::taken,
            usage_idempotency::used,
            usage_idempotency::plan,
        ))
        .first(conn)
        .optional()?;
    Ok(row.map(|(taken, used, plan)| Consumed {
        taken,
        used: u32::try_from(used).unwrap_or(0),
        plan: plan.parse().unwrap_or(Plan::Basic),
    }))
}

/// Drops the keys of days before `before`: a key only ever means something on its own day.
pub fn prune(conn: &mut MysqlConnection, before: NaiveDate) -> QueryResult<usize> {
    diesel::delete(usage_idempotency::table.filter(usage_idempotency::day.lt(before))).execute(conn)
}
