//! One run of a job: claim the slot, choose the recipients by the skip rules, record milestones,
//! and queue one outbox row per device, all in one transaction. Delivery happens afterwards
//! (`deliver`), so a crash between the two loses nothing: the queued rows wait in the outbox.

use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Jsonb, Text, Timestamp, Timestamptz};
use domain::fasting::{Milestone, due_milestones};
use domain::notifications::{Kind, payload};

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
/// Outbox rows expire `job.ttl()` after the real time of queuing.
pub fn run(
    conn: &mut PgConnection,
    job: Job,
    slot: Slot,
    now: DateTime<Utc>,
) -> QueryResult<Queued> {
    conn.transaction(|conn| {
        let claimed = diesel::sql_query(
            "INSERT INTO scheduler.job_run (job, slot) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        )
        .bind::<Text, _>(job.name())
        .bind::<Timestamp, _>(slot.local)
        .execute(conn)?;
        if claimed == 0 {
            return Ok(Queued {
                already_ran: true,
                ..Queued::default()
            });
        }
        let expires = Utc::now() + job.ttl();
        let queued = match job {
            Job::WeeklyWeighIn => broadcast(conn, job, slot.local, Kind::WeeklyWeighIn, "COALESCE(p.weekly_weigh_in, TRUE)", now, expires)?,
            Job::MealLunch => broadcast(conn, job, slot.local, Kind::MealLunch, MEAL_RULE, now, expires)?,
            Job::MealSnack => broadcast(conn, job, slot.local, Kind::MealSnack, MEAL_RULE, now, expires)?,
            Job::MealDinner => broadcast(conn, job, slot.local, Kind::MealDinner, MEAL_RULE, now, expires)?,
            Job::Milestones => milestones(conn, slot.local, now, expires)?,
        };
        diesel::sql_query(
            "UPDATE scheduler.job_run SET finished_at = now(), sent = $3, skipped = $4 WHERE job = $1 AND slot = $2",
        )
        .bind::<Text, _>(job.name())
        .bind::<Timestamp, _>(slot.local)
        .bind::<diesel::sql_types::Integer, _>(i32::try_from(queued.queued).unwrap_or(i32::MAX))
        .bind::<diesel::sql_types::Integer, _>(i32::try_from(queued.skipped).unwrap_or(i32::MAX))
        .execute(conn)?;
        Ok(queued)
    })
}

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
        "INSERT INTO scheduler.outbox (job, slot, user_id, device_id, endpoint, p256dh, auth, payload, expires_at)
         SELECT $2, $3, d.user_id, d.id, d.endpoint, d.p256dh, d.auth, $4, $5
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
fn milestones(
    conn: &mut PgConnection,
    slot: NaiveDateTime,
    now: DateTime<Utc>,
    expires: DateTime<Utc>,
) -> QueryResult<Queued> {
    let fasts: Vec<RunningFast> = diesel::sql_query(
        "SELECT f.id, f.user_id, f.started_at, f.planned_end_at, f.notified_milestones,
                (COALESCE(p.fasting_milestones, FALSE)
                 AND (p.fasting_paused_until IS NULL OR p.fasting_paused_until <= $1)) AS eligible
           FROM nutrition.fast_event f
           LEFT JOIN nutrition.profile p ON p.user_id = f.user_id
          WHERE f.status = 'IN_PROGRESS' AND f.started_at <= $1
          FOR UPDATE OF f",
    )
    .bind::<Timestamptz, _>(now)
    .load(conn)?;
    let mut out = Queued::default();
    for fast in fasts {
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
        diesel::sql_query(
            "UPDATE nutrition.fast_event
                SET notified_milestones = notified_milestones || $2, updated_at = now()
              WHERE id = $1",
        )
        .bind::<Text, _>(&fast.id)
        .bind::<Array<Text>, _>(&keys)
        .execute(conn)?;
        let body = serde_json::to_value(payload(Kind::Milestone(latest))).unwrap_or_default();
        let queued = diesel::sql_query(
            "INSERT INTO scheduler.outbox (job, slot, user_id, device_id, endpoint, p256dh, auth, payload, expires_at)
             SELECT $1, $2, d.user_id, d.id, d.endpoint, d.p256dh, d.auth, $4, $5
               FROM nutrition.device_token d WHERE d.user_id = $3
             ON CONFLICT (job, slot, device_id) DO NOTHING",
        )
        .bind::<Text, _>(Job::Milestones.name())
        .bind::<Timestamp, _>(slot)
        .bind::<Text, _>(&fast.user_id)
        .bind::<Jsonb, _>(body)
        .bind::<Timestamptz, _>(expires)
        .execute(conn)?;
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
