//! The five jobs and their Europe/Rome schedules, and which slot a run belongs to.
//!
//! A slot is the Rome wall-clock time a run is scheduled for (`2026-11-23 09:00`). Runs are
//! claimed by slot, so a slot runs once, across processes and replicas, and in the repeated hour
//! of the October change the second `02:05` is the same slot as the first and does not run again.
//!
//! After downtime only the latest missed slot inside the job's window runs (see [`Job::window`]);
//! older slots are dropped, because a reminder for a lunch long past is noise.

use std::str::FromStr;

use chrono::{DateTime, Duration, LocalResult, NaiveDateTime, TimeZone, Timelike, Utc};
use chrono_tz::Tz;
use cron::Schedule;

use domain::rome::TZ;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Job {
    WeeklyWeighIn,
    MealLunch,
    MealSnack,
    MealDinner,
    Milestones,
}

impl Job {
    pub const ALL: [Job; 5] = [
        Self::WeeklyWeighIn,
        Self::MealLunch,
        Self::MealSnack,
        Self::MealDinner,
        Self::Milestones,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::WeeklyWeighIn => "weekly-weigh-in",
            Self::MealLunch => "meal-lunch",
            Self::MealSnack => "meal-snack",
            Self::MealDinner => "meal-dinner",
            Self::Milestones => "milestones",
        }
    }

    /// Six-field cron (seconds first); weekdays by name, because the crate counts 1 = Sunday.
    pub fn cron(self) -> &'static str {
        match self {
            Self::WeeklyWeighIn => "0 0 9 * * Mon",
            Self::MealLunch => "0 0 13 * * *",
            Self::MealSnack => "0 0 16 * * *",
            Self::MealDinner => "0 0 19 * * *",
            Self::Milestones => "0 */5 * * * *",
        }
    }

    /// How late a slot may still run after its time: the weekly reminder is useful all morning, a
    /// meal reminder for half an hour, a milestone slot until the next one.
    pub fn window(self) -> Duration {
        match self {
            Self::WeeklyWeighIn => Duration::hours(3),
            Self::MealLunch | Self::MealSnack | Self::MealDinner => Duration::minutes(30),
            Self::Milestones => Duration::minutes(5),
        }
    }

    /// How long a push service should keep the message for an offline device: past the window
    /// the reminder is stale.
    pub fn ttl(self) -> Duration {
        match self {
            Self::WeeklyWeighIn => Duration::hours(6),
            Self::MealLunch | Self::MealSnack | Self::MealDinner => Duration::hours(1),
            Self::Milestones => Duration::minutes(30),
        }
    }

    fn schedule(self) -> Schedule {
        // The expressions are constants checked by the tests below.
        Schedule::from_str(self.cron())
            .unwrap_or_else(|e| unreachable!("bad cron for {}: {e}", self.name()))
    }
}

impl FromStr for Job {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|j| j.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown job `{s}`; expected one of {}",
                    Self::ALL.map(Job::name).join(", ")
                )
            })
    }
}

/// One scheduled run: its Rome wall-clock time and the instant it falls on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub local: NaiveDateTime,
    pub at: DateTime<Utc>,
}

fn slot_of(t: DateTime<Tz>) -> Slot {
    Slot {
        local: t.naive_local(),
        at: t.with_timezone(&Utc),
    }
}

/// The latest slot of `job` at or before `now`, if `now` is still inside its window.
///
/// Walks back minute by minute over the Rome wall clock and asks the schedule which minutes
/// match, instead of iterating the schedule backwards: around the October change a wall-clock
/// time has two instants, and the slot must be the one that has already happened.
pub fn due_slot(job: Job, now: DateTime<Utc>) -> Option<Slot> {
    let schedule = job.schedule();
    let local_now = now.with_timezone(&TZ).naive_local();
    let mut minute = local_now.with_second(0)?.with_nanosecond(0)?;
    // A window of W real minutes spans at most W + 60 wall-clock minutes (the repeated hour).
    let steps = job.window().num_minutes() + 61;
    for _ in 0..steps {
        // The latest instant of this wall-clock minute that is not in the future.
        let at = match TZ.from_local_datetime(&minute) {
            LocalResult::Single(t) => Some(t),
            LocalResult::Ambiguous(early, late) => [late, early]
                .into_iter()
                .find(|t| t.with_timezone(&Utc) <= now),
            LocalResult::None => None,
        };
        if let Some(t) = at
            && t.with_timezone(&Utc) <= now
            && schedule.includes(t)
        {
            let slot = slot_of(t);
            return (now - slot.at < job.window()).then_some(slot);
        }
        minute -= Duration::minutes(1);
    }
    None
}

/// The first slot of `job` strictly after `now`.
pub fn next_slot(job: Job, now: DateTime<Utc>) -> Option<Slot> {
    job.schedule()
        .after(&now.with_timezone(&TZ))
        .next()
        .map(slot_of)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s)
            .expect("valid")
            .with_timezone(&Utc)
    }

    #[test]
    fn names_round_trip_and_crons_parse() {
        for job in Job::ALL {
            assert_eq!(job.name().parse::<Job>(), Ok(job));
            assert!(Schedule::from_str(job.cron()).is_ok(), "{}", job.name());
        }
        assert!("lunch".parse::<Job>().is_err());
    }

    #[test]
    fn weekly_reminder_is_monday_nine_in_rome_across_dst() {
        // Winter (CET): 08:00 UTC. Summer (CEST): 07:00 UTC.
        let winter = next_slot(Job::WeeklyWeighIn, utc("2026-11-22T12:00:00Z")).expect("slot");
        assert_eq!(winter.at, utc("2026-11-23T08:00:00Z"));
        assert_eq!(winter.local.to_string(), "2026-11-23 09:00:00");
        // The Monday after the March change, and after the October change.
        assert_eq!(
            next_slot(Job::WeeklyWeighIn, utc("2026-03-28T12:00:00Z")).map(|s| s.at),
            Some(utc("2026-03-30T07:00:00Z"))
        );
        assert_eq!(
            next_slot(Job::WeeklyWeighIn, utc("2026-10-24T12:00:00Z")).map(|s| s.at),
            Some(utc("2026-10-26T08:00:00Z"))
        );
        // Never on another weekday.
        let mut t = utc("2026-01-01T00:00:00Z");
        for _ in 0..60 {
            let s = next_slot(Job::WeeklyWeighIn, t).expect("slot");
            assert_eq!(s.local.format("%a %H:%M").to_string(), "Mon 09:00");
            t = s.at;
        }
    }

    #[test]
    fn due_slot_respects_the_window() {
        let lunch = utc("2026-11-23T12:00:00Z"); // 13:00 CET
        assert_eq!(due_slot(Job::MealLunch, lunch).map(|s| s.at), Some(lunch));
        assert_eq!(
            due_slot(Job::MealLunch, lunch + Duration::minutes(29)).map(|s| s.at),
            Some(lunch)
        );
        assert_eq!(
            due_slot(Job::MealLunch, lunch + Duration::minutes(30)),
            None,
            "too late"
        );
        assert_eq!(
            due_slot(Job::MealLunch, lunch - Duration::seconds(1)),
            None,
            "not yet"
        );
        let m = due_slot(Job::Milestones, utc("2026-11-23T12:07:30Z")).expect("slot");
        assert_eq!(m.local.to_string(), "2026-11-23 13:05:00");
    }

    #[test]
    fn repeated_october_hour_gives_the_same_local_slot_twice() {
        // 02:05 CEST (00:05 UTC) and 02:05 CET (01:05 UTC) are one wall-clock slot.
        let first = due_slot(Job::Milestones, utc("2026-10-25T00:05:00Z")).expect("slot");
        let second = due_slot(Job::Milestones, utc("2026-10-25T01:05:00Z")).expect("slot");
        assert_eq!(first.local, second.local);
        assert_eq!(first.local.to_string(), "2026-10-25 02:05:00");
    }

    #[test]
    fn spring_gap_has_no_slots_inside_it() {
        // On 29 March 2026 the clock jumps from 02:00 to 03:00; milestones continue at 03:00.
        let after_gap = next_slot(Job::Milestones, utc("2026-03-29T00:58:00Z")).expect("slot");
        assert_eq!(after_gap.local.to_string(), "2026-03-29 03:00:00");
        assert_eq!(after_gap.at, utc("2026-03-29T01:00:00Z"));
    }

    #[test]
    fn meal_reminders_follow_local_time() {
        assert_eq!(
            next_slot(Job::MealDinner, utc("2026-07-01T00:00:00Z")).map(|s| s.at),
            Some(utc("2026-07-01T17:00:00Z"))
        );
        assert_eq!(
            next_slot(Job::MealSnack, utc("2026-12-01T00:00:00Z")).map(|s| s.at),
            Some(utc("2026-12-01T15:00:00Z"))
        );
    }
}
