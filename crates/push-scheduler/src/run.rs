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
use diesel::sql_types::{Array, BigInt, Jsonb, Nullable, Text, Timestamp, Timestamptz};
use domain::fasting::{Milestone, due_milestones, next_milestone_at};
use domain::notifications::{Kind, payloads};

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

/// Each recipient's payload out of the statement's `{"it": …, "en": …}` (`payloads`): the one of
/// the user's language, read from `auth.user` (`u`) in the statement that picks the recipients, so
/// a language changed a moment before counts; Italian when the row has no other.
fn in_locale(payloads: &str) -> String {
    format!("COALESCE({payloads} -> u.locale, {payloads} -> 'it')")
}

/// Queues `kind` for every device of every user that `rule` keeps, in the user's language;
/// counts the users it leaves out.
fn broadcast(
    conn: &mut PgConnection,
    job: Job,
    slot: NaiveDateTime,
    kind: Kind,
    rule: &str,
    now: DateTime<Utc>,
    expires: DateTime<Utc>,
) -> QueryResult<Queued> {
    let body = payloads(kind);
    let payload = in_locale("$4::jsonb");
    // `rule` is one of this module's constants, never input.
    let queued = diesel::sql_query(format!(
        "INSERT INTO scheduler.outbox (job, slot, user_id, device_id, endpoint, p256dh, auth, payload, expires_at, fair_rank)
         SELECT $2, $3, d.user_id, d.id, d.endpoint, d.p256dh, d.auth, {payload}, $5, {FAIR_RANK}
           FROM nutrition.device_token d
           JOIN auth.\"user\" u ON u.id = d.user_id
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

/// How many due fasts a milestone run reads and writes at a time: each batch is one read and two
/// statements, so row locks last a statement and memory stays bounded after a long downtime.
const MILESTONE_BATCH: i64 = 500;

#[derive(QueryableByName)]
struct DueFast {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Timestamptz)]
    started_at: DateTime<Utc>,
    #[diesel(sql_type = Timestamptz)]
    planned_end_at: DateTime<Utc>,
    #[diesel(sql_type = Array<Text>)]
    notified_milestones: Vec<String>,
    #[diesel(sql_type = Timestamptz)]
    next_milestone_at: DateTime<Utc>,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    wanted: bool,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    paused_until: Option<DateTime<Utc>>,
}

/// What a run does with one due fast.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    /// Record `keys` (every milestone due), push `latest`, look again at `next`.
    Push {
        keys: Vec<String>,
        latest: Milestone,
        next: Option<DateTime<Utc>>,
    },
    /// Nothing to push now: look again at `next`. `skipped` when the user's settings left out
    /// milestones that are due.
    Later {
        next: Option<DateTime<Utc>>,
        skipped: bool,
    },
}

/// The skip rules for one fast at `now`. Nothing is recorded for a skipped milestone, so it is
/// still due when the user can receive it again: a paused fast is looked at again when the pause
/// ends, and one whose user switched milestones off when its next milestone falls due (switching
/// them on, or changing the pause, brings the look forward: see nutrition-api's
/// `recheck_milestones`).
fn step(
    start: DateTime<Utc>,
    planned_end: DateTime<Utc>,
    notified: &[String],
    wanted: bool,
    paused_until: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Step {
    let due = due_milestones(start, planned_end, now, notified);
    let Some(latest) = latest_due(&due, start, planned_end) else {
        return Step::Later {
            next: next_milestone_at(start, planned_end, notified, None),
            skipped: false,
        };
    };
    if let Some(until) = paused_until.filter(|until| *until > now) {
        return Step::Later {
            next: Some(until),
            skipped: true,
        };
    }
    if !wanted {
        return Step::Later {
            next: next_milestone_at(start, planned_end, notified, Some(now)),
            skipped: true,
        };
    }
    let keys: Vec<String> = due.iter().map(|m| m.key().to_owned()).collect();
    let recorded: Vec<String> = notified.iter().cloned().chain(keys.clone()).collect();
    Step::Push {
        next: next_milestone_at(start, planned_end, &recorded, None),
        keys,
        latest,
    }
}

/// Milestones of running fasts: every milestone that became due is recorded in the fast's
/// `notifiedMilestones` (so it is never pushed later), and only the most recent one is pushed;
/// after downtime an older hydration reminder would only be noise. Paused users and users without
/// milestone pushes are skipped and nothing is recorded for them.
///
/// Only the fasts whose `next_milestone_at` has come are read, through its partial index, in
/// batches and without locks. Each batch is written by two statements: one records the
/// milestones of the fasts that still run and have none of them recorded (ending a fast or
/// another run meanwhile simply wins) and queues their rows, one moves the next look of the
/// others on. Row locks therefore last one statement, so ending a fast or writing the diary
/// never waits for the run.
fn milestones(
    conn: &mut PgConnection,
    slot: NaiveDateTime,
    now: DateTime<Utc>,
    expires: DateTime<Utc>,
    shutdown: &Shutdown,
) -> QueryResult<Queued> {
    let mut out = Queued::default();
    let mut after: Option<(DateTime<Utc>, String)> = None;
    loop {
        if shutdown.is_triggered() {
            break;
        }
        let fasts = due_fasts(conn, now, after.as_ref())?;
        let Some(last) = fasts.last() else { break };
        after = Some((last.next_milestone_at, last.id.clone()));
        let full = i64::try_from(fasts.len()).unwrap_or(i64::MAX) >= MILESTONE_BATCH;
        let mut push = PushBatch::default();
        let mut later = LaterBatch::default();
        for fast in fasts {
            match step(
                fast.started_at,
                fast.planned_end_at,
                &fast.notified_milestones,
                fast.wanted,
                fast.paused_until,
                now,
            ) {
                Step::Push { keys, latest, next } => {
                    let body = payloads(Kind::Milestone(latest));
                    push.ids.push(fast.id);
                    push.keys.push(keys.join(","));
                    push.next.push(next);
                    push.payloads.push(body);
                }
                Step::Later { next, skipped } => {
                    out.skipped += i64::from(skipped);
                    later.ids.push(fast.id);
                    later.seen.push(fast.next_milestone_at);
                    later.next.push(next);
                }
            }
        }
        out.queued += record_and_queue(conn, slot, expires, &push)?;
        look_later(conn, &later)?;
        if !full {
            break;
        }
    }
    Ok(out)
}

/// Due running fasts after the `(next_milestone_at, id)` cursor, in index order.
fn due_fasts(
    conn: &mut PgConnection,
    now: DateTime<Utc>,
    after: Option<&(DateTime<Utc>, String)>,
) -> QueryResult<Vec<DueFast>> {
    due_query("", now, after).load(conn)
}

/// The plan Postgres chooses for a milestone run's read of due fasts at `now`, first batch
/// (`after` `None`) or a later one: the run must find them through
/// `fast_event_next_milestone_idx`, whatever the number of running fasts.
pub fn explain_due_fasts(
    conn: &mut PgConnection,
    now: DateTime<Utc>,
    after: Option<&(DateTime<Utc>, String)>,
) -> QueryResult<String> {
    #[derive(QueryableByName)]
    struct Line {
        #[diesel(sql_type = Text, column_name = "QUERY PLAN")]
        line: String,
    }
    let lines: Vec<Line> = due_query("EXPLAIN ", now, after).load(conn)?;
    Ok(lines
        .into_iter()
        .map(|l| l.line)
        .collect::<Vec<_>>()
        .join("\n"))
}

fn due_query(
    prefix: &str,
    now: DateTime<Utc>,
    after: Option<&(DateTime<Utc>, String)>,
) -> diesel::query_builder::BoxedSqlQuery<'static, diesel::pg::Pg, diesel::query_builder::SqlQuery>
{
    let cursor = if after.is_some() {
        "AND (f.next_milestone_at, f.id) > ($3, $4)"
    } else {
        ""
    };
    let query = diesel::sql_query(format!(
        "{prefix}SELECT f.id, f.started_at, f.planned_end_at, f.notified_milestones,
                f.next_milestone_at, COALESCE(p.fasting_milestones, FALSE) AS wanted,
                p.fasting_paused_until AS paused_until
           FROM nutrition.fast_event f
           LEFT JOIN nutrition.profile p ON p.user_id = f.user_id
          WHERE f.status = 'IN_PROGRESS' AND f.next_milestone_at <= $1 {cursor}
          ORDER BY f.next_milestone_at, f.id
          LIMIT $2"
    ))
    .into_boxed()
    .bind::<Timestamptz, _>(now)
    .bind::<BigInt, _>(MILESTONE_BATCH);
    match after {
        None => query,
        Some((at, id)) => query
            .bind::<Timestamptz, _>(*at)
            .bind::<Text, _>(id.clone()),
    }
}

/// Fasts of a batch whose milestones are pushed, in parallel arrays for `unnest`.
#[derive(Default)]
struct PushBatch {
    ids: Vec<String>,
    /// The keys to record, comma-separated (Postgres arrays cannot be ragged).
    keys: Vec<String>,
    next: Vec<Option<DateTime<Utc>>>,
    /// Every language's payload of the milestone pushed (see [`payloads`]).
    payloads: Vec<serde_json::Value>,
}

/// Fasts of a batch looked at again later: the instant the run read, and the new one.
#[derive(Default)]
struct LaterBatch {
    ids: Vec<String>,
    seen: Vec<DateTime<Utc>>,
    next: Vec<Option<DateTime<Utc>>>,
}

/// Records the batch's milestones and queues one row per device of each fast recorded, in its
/// user's language, in one statement. The rows are locked in id order, so two runs over the same fasts (overlapping
/// slots on two replicas) wait for each other instead of deadlocking.
fn record_and_queue(
    conn: &mut PgConnection,
    slot: NaiveDateTime,
    expires: DateTime<Utc>,
    batch: &PushBatch,
) -> QueryResult<i64> {
    if batch.ids.is_empty() {
        return Ok(0);
    }
    let payload = in_locale("r.payload");
    let queued = diesel::sql_query(format!(
        "WITH todo AS (
             SELECT u.id, string_to_array(u.keys, ',') AS keys, u.next, u.payload
               FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::jsonb[]) AS u (id, keys, next, payload)
         ), locked AS MATERIALIZED (
             SELECT f.id FROM nutrition.fast_event f
              WHERE f.id IN (SELECT id FROM todo)
              ORDER BY f.id
                FOR UPDATE
         ), recorded AS (
             UPDATE nutrition.fast_event f
                SET notified_milestones = f.notified_milestones || t.keys,
                    next_milestone_at = t.next, updated_at = now()
               FROM todo t
              WHERE f.id = t.id AND f.id IN (SELECT id FROM locked)
                AND f.status = 'IN_PROGRESS' AND NOT (f.notified_milestones && t.keys)
             RETURNING f.user_id, t.payload
         )
         INSERT INTO scheduler.outbox (job, slot, user_id, device_id, endpoint, p256dh, auth, payload, expires_at, fair_rank)
         SELECT $5, $6, d.user_id, d.id, d.endpoint, d.p256dh, d.auth, {payload}, $7, {FAIR_RANK}
           FROM recorded r JOIN nutrition.device_token d ON d.user_id = r.user_id
           JOIN auth.\"user\" u ON u.id = d.user_id
         ON CONFLICT (job, slot, device_id) DO NOTHING"
    ))
    .bind::<Array<Text>, _>(&batch.ids)
    .bind::<Array<Text>, _>(&batch.keys)
    .bind::<Array<Nullable<Timestamptz>>, _>(&batch.next)
    .bind::<Array<Jsonb>, _>(&batch.payloads)
    .bind::<Text, _>(Job::Milestones.name())
    .bind::<Timestamp, _>(slot)
    .bind::<Timestamptz, _>(expires)
    .execute(conn)?;
    Ok(i64::try_from(queued).unwrap_or(i64::MAX))
}

/// Moves the next look of fasts with nothing to push, locking in id order like
/// [`record_and_queue`]. Only where the instant is still the one the run read: a fast brought forward meanwhile (milestones switched on, pause changed) keeps
/// its earlier instant. `updated_at` stays: the fast as its user sees it did not change.
fn look_later(conn: &mut PgConnection, batch: &LaterBatch) -> QueryResult<()> {
    if batch.ids.is_empty() {
        return Ok(());
    }
    diesel::sql_query(
        "WITH locked AS MATERIALIZED (
             SELECT f.id FROM nutrition.fast_event f
              WHERE f.id = ANY ($1::text[])
              ORDER BY f.id
                FOR UPDATE
         )
         UPDATE nutrition.fast_event f
            SET next_milestone_at = u.next
           FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[]) AS u (id, seen, next)
          WHERE f.id = u.id AND f.id IN (SELECT id FROM locked)
            AND f.status = 'IN_PROGRESS' AND f.next_milestone_at = u.seen",
    )
    .bind::<Array<Text>, _>(&batch.ids)
    .bind::<Array<Timestamptz>, _>(&batch.seen)
    .bind::<Array<Nullable<Timestamptz>>, _>(&batch.next)
    .execute(conn)?;
    Ok(())
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

    #[test]
    fn each_due_fast_is_pushed_or_looked_at_again_later() {
        let start = DateTime::parse_from_rfc3339("2026-11-22T00:00:00Z")
            .expect("valid")
            .with_timezone(&Utc);
        let end = start + Duration::hours(16);
        let h = Duration::hours;
        // Brought forward with nothing due yet: the exact next instant.
        assert_eq!(
            step(start, end, &[], true, None, start + Duration::minutes(30)),
            Step::Later {
                next: Some(start + h(2)),
                skipped: false
            }
        );
        // Due after downtime: everything recorded, the latest pushed, the next look at the
        // first milestone left.
        assert_eq!(
            step(start, end, &[], true, None, start + h(7)),
            Step::Push {
                keys: vec![
                    "hydration_2h".into(),
                    "hydration_4h".into(),
                    "hydration_6h".into()
                ],
                latest: Milestone::Hydration6h,
                next: Some(end - Duration::minutes(30)),
            }
        );
        // Paused: looked at again when the pause ends, nothing recorded.
        let until = start + h(9);
        assert_eq!(
            step(start, end, &[], true, Some(until), start + h(7)),
            Step::Later {
                next: Some(until),
                skipped: true
            }
        );
        // A pause that ended counts for nothing.
        assert!(matches!(
            step(start, end, &[], true, Some(start + h(1)), start + h(7)),
            Step::Push { .. }
        ));
        // Milestones off: looked at again when the next one falls due.
        assert_eq!(
            step(start, end, &[], false, None, start + h(7)),
            Step::Later {
                next: Some(end - Duration::minutes(30)),
                skipped: true
            }
        );
        // The last milestone recorded: nothing left to look at.
        let four: Vec<String> = [
            "hydration_2h",
            "hydration_4h",
            "hydration_6h",
            "ending_soon",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            step(start, end, &four, true, None, start + h(18)),
            Step::Push {
                keys: vec!["electrolyte_18h".into()],
                latest: Milestone::Electrolyte18h,
                next: None,
            }
        );
    }
}
