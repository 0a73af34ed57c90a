//! One run of a job: claim the slot, choose the recipients by the skip rules, record milestones,
//! and queue one outbox row per device. Delivery happens afterwards (`deliver`), so a crash
//! between the two loses nothing: the queued rows wait in the outbox.
//!
//! A broadcast (weekly weigh-in, meal reminders) is one transaction: claim and rows together. A
//! milestone run claims its slot first and then handles each fast in a transaction of its own, so
//! that it never holds a lock on every running fast while it works (ending a fast or writing the
//! diary would wait for the whole run). A crash in the middle of a milestone run leaves the
//! remaining fasts' milestones unrecorded, so the next run (five minutes later) pushes them.

use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Jsonb, Text, Timestamp, Timestamptz};
use domain::fasting::{Milestone, due_milestones};
use domain::notifications::{Kind, payload};

use crate::deliver::Shutdown;
use crate::jobs::{Job, Slot};

/// What a run did before delivery.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Queued {
    /// Outbox rows written.
    pub queued: i64,
    /// Users the skip rules left out (paused, toggle off).
    pub skipped: i64,
    /// The slot had already run (here or in another process): nothing was done.
    pub already_ran: bool,
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// Runs `job` for `slot` as if the time were `now` (which decides pauses and due milestones).
/// Outbox rows expire `job.ttl()` after the real time of queuing. A milestone run stops between
/// two fasts once `shutdown` is triggered; the next run handles the rest.
pub fn run(
    conn: &mut PgConnection,
    job: Job,
    slot: Slot,
    now: DateTime<Utc>,
    shutdown: &Shutdown,
) -> QueryResult<Queued> {
    let expires = Utc::now() + job.ttl();
    let kind = match job {
        Job::WeeklyWeighIn => Kind::WeeklyWeighIn,
        Job::MealLunch => Kind::MealLunch,
        Job::MealSnack => Kind::MealSnack,
        Job::MealDinner => Kind::MealDinner,
        Job::Milestones => {
            if !conn.transaction(|conn| claim(conn, job, slot))? {
                return Ok(Queued {
                    already_ran: true,
                    ..Queued::default()
                });
            }
            let queued = milestones(conn, slot.local, now, expires, shutdown)?;
            record(conn, job, slot, queued)?;
            return Ok(queued);
        }
    };
    let rule = if job == Job::WeeklyWeighIn {
        "COALESCE(p.weekly_weigh_in, TRUE)"
    } else {
        MEAL_RULE
    };
    conn.transaction(|conn| {
        if !claim(conn, job, slot)? {
            return Ok(Queued {
                already_ran: true,
                ..Queued::default()
            });
        }
        let queued = broadcast(conn, job, slot.local, kind, rule, now, expires)?;
        record(conn, job, slot, queued)?;
        Ok(queued)
    })
}

/// Inserts the `(job, slot)` claim; `false` when the slot already ran (here or elsewhere).
fn claim(conn: &mut PgConnection, job: Job, slot: Slot) -> QueryResult<bool> {
    let claimed = diesel::sql_query(
        "INSERT INTO scheduler.job_run (job, slot) VALUES ($1, $2) ON CONFLICT DO NOTHING",
    )
    .bind::<Text, _>(job.name())
    .bind::<Timestamp, _>(slot.local)
    .execute(conn)?;
    Ok(claimed == 1)
}

/// Marks the run finished with what it queued and skipped.
fn record(conn: &mut PgConnection, job: Job, slot: Slot, queued: Queued) -> QueryResult<()> {
    diesel::sql_query(
        "UPDATE scheduler.job_run SET finished_at = clock_timestamp(), sent = $3, skipped = $4 WHERE job = $1 AND slot = $2",
    )
    .bind::<Text, _>(job.name())
    .bind::<Timestamp, _>(slot.local)
    .bind::<diesel::sql_types::Integer, _>(i32::try_from(queued.queued).unwrap_or(i32::MAX))
    .bind::<diesel::sql_types::Integer, _>(i32::try_from(queued.skipped).unwrap_or(i32::MAX))
    .execute(conn)?;
    Ok(())
}

/// A device's place among its user's devices, most recently seen first: senders take every
/// user's first device before anyone's second.
const FAIR_RANK: &str = "LEAST(row_number() OVER (PARTITION BY d.user_id ORDER BY d.last_seen_at DESC, d.id) - 1, 32767)::smallint";

/// Meal reminders: switched on, and not paused at the run's time (`$1`).
const MEAL_RULE: &str = "COALESCE(p.meal_reminders, FALSE) AND (p.fasting_paused_until IS NULL OR p.fasting_paused_until <= $1)";

/// Queues `kind` for every device of every user that `rule` keeps; counts the users it leaves out.
fn broadcast(
    conn: &mut PgConnection,
    job: Job,
    slot: NaiveDateTime,
    kind: Kind,
    rule: &str,
    now: DateTime<Utc>,
    expires: DateTime<Utc>,
) -> QueryResult<Queued> {
    let body = serde_json::to_value(payload(kind)).unwrap_or_default();
    // `rule` is one of this module's constants, never input.
    let queued = diesel::sql_query(format!(
        "INSERT INTO scheduler.outbox (job, slot, user_id, device_id, endpoint, p256dh, auth, payload, expires_at, fair_rank)
         SELECT $2, $3, d.user_id, d.id, d.endpoint, d.p256dh, d.auth, $4, $5, {FAIR_RANK}
           FROM nutrition.device_token d
           LEFT JOIN nutrition.profile p ON p.user_id = d.user_id
          WHERE $1 = $1 AND ({rule})
         ON CONFLICT (job, slot, device_id) DO NOTHING"
    ))
    .bind::<Timestamptz, _>(now)
    .bind::<Text, _>(job.name())
    .bind::<Timestamp, _>(slot)
    .bind::<Jsonb, _>(body)
    .bind::<Timestamptz, _>(expires)
    .execute(conn)?;
    let skipped: Count = diesel::sql_query(format!(
        "SELECT count(DISTINCT d.user_id) AS n
           FROM nutrition.device_token d
           LEFT JOIN nutrition.profile p ON p.user_id = d.user_id
          WHERE $1 = $1 AND NOT ({rule})"
    ))
    .bind::<Timestamptz, _>(now)
    .get_result(conn)?;
    Ok(Queued {
        queued: i64::try_from(queued).unwrap_or(i64::MAX),
        skipped: skipped.n,
        already_ran: false,
    })
}

#[derive(QueryableByName)]
struct RunningFast {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Text)]
    user_id: String,
    #[diesel(sql_type = Timestamptz)]
    started_at: DateTime<Utc>,
    #[diesel(sql_type = Timestamptz)]
    planned_end_at: DateTime<Utc>,
    #[diesel(sql_type = Array<Text>)]
    notified_milestones: Vec<String>,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    eligible: bool,
}

/// Milestones of running fasts: every milestone that became due is recorded in the fast's
/// `notifiedMilestones` (so it is never pushed later), and only the most recent one is pushed;
/// after downtime an older hydration reminder would only be noise. Paused users and users without
/// milestone pushes are skipped and nothing is recorded for them.
///
/// The running fasts are read without locks; each fast is then handled in its own transaction by
/// a conditional update that records its milestones only if it still runs and none of them was
/// recorded meanwhile (by another run), so ending a fast during the run simply wins.
fn milestones(
    conn: &mut PgConnection,
    slot: NaiveDateTime,
    now: DateTime<Utc>,
    expires: DateTime<Utc>,
    shutdown: &Shutdown,
) -> QueryResult<Queued> {
    let fasts: Vec<RunningFast> = diesel::sql_query(
        "SELECT f.id, f.user_id, f.started_at, f.planned_end_at, f.notified_milestones,
                (COALESCE(p.fasting_milestones, FALSE)
                 AND (p.fasting_paused_until IS NULL OR p.fasting_paused_until <= $1)) AS eligible
           FROM nutrition.fast_event f
           LEFT JOIN nutrition.profile p ON p.user_id = f.user_id
          WHERE f.status = 'IN_PROGRESS' AND f.started_at <= $1",
    )
    .bind::<Timestamptz, _>(now)
    .load(conn)?;
    let mut out = Queued::default();
    for fast in fasts {
        if shutdown.is_triggered() {
            break;
        }
        let due = due_milestones(
            fast.started_at,
            fast.planned_end_at,
            now,
            &fast.notified_milestones,
        );
        let Some(latest) = latest_due(&due, fast.started_at, fast.planned_end_at) else {
            continue;
        };
        if !fast.eligible {
            out.skipped += 1;
            continue;
        }
        let keys: Vec<String> = due.iter().map(|m| m.key().to_owned()).collect();
        let body = serde_json::to_value(payload(Kind::Milestone(latest))).unwrap_or_default();
        let queued = conn.transaction(|conn| -> QueryResult<usize> {
            let recorded = diesel::sql_query(
                "UPDATE nutrition.fast_event
                    SET notified_milestones = notified_milestones || $2, updated_at = now()
                  WHERE id = $1 AND status = 'IN_PROGRESS' AND NOT (notified_milestones && $2)",
            )
            .bind::<Text, _>(&fast.id)
            .bind::<Array<Text>, _>(&keys)
            .execute(conn)?;
            if recorded == 0 {
                return Ok(0);
            }
            diesel::sql_query(format!(
                "INSERT INTO scheduler.outbox (job, slot, user_id, device_id, endpoint, p256dh, auth, payload, expires_at, fair_rank)
                 SELECT $1, $2, d.user_id, d.id, d.endpoint, d.p256dh, d.auth, $4, $5, {FAIR_RANK}
                   FROM nutrition.device_token d WHERE d.user_id = $3
                 ON CONFLICT (job, slot, device_id) DO NOTHING"
            ))
            .bind::<Text, _>(Job::Milestones.name())
            .bind::<Timestamp, _>(slot)
            .bind::<Text, _>(&fast.user_id)
            .bind::<Jsonb, _>(&body)
            .bind::<Timestamptz, _>(expires)
            .execute(conn)
        })?;
        out.queued += i64::try_from(queued).unwrap_or(i64::MAX);
    }
    Ok(out)
}

/// The due milestone that fell due last.
fn latest_due(
    due: &[Milestone],
    start: DateTime<Utc>,
    planned_end: DateTime<Utc>,
) -> Option<Milestone> {
    due.iter()
        .copied()
        .max_by_key(|m| (m.due_at(start, planned_end), *m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    #[test]
    fn the_most_recent_due_milestone_is_pushed() {
        let start = DateTime::parse_from_rfc3339("2026-11-22T00:00:00Z")
            .expect("valid")
            .with_timezone(&Utc);
        let end = start + Duration::hours(16);
        let due = due_milestones(start, end, start + Duration::hours(7), &[]);
        assert_eq!(latest_due(&due, start, end), Some(Milestone::Hydration6h));
        let due = due_milestones(start, end, start + Duration::hours(16), &[]);
        assert_eq!(latest_due(&due, start, end), Some(Milestone::EndingSoon));
        assert_eq!(latest_due(&[], start, end), None);
    }
}
