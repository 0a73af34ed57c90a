//! Fast events: statuses, milestones and the pause (free day).

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Duration, Utc};

/// A fast is running, or ended at/after its planned end (completed), or before it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum FastStatus {
    InProgress,
    Completed,
    EndedEarly,
}

impl FastStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InProgress => "IN_PROGRESS",
            Self::Completed => "COMPLETED",
            Self::EndedEarly => "ENDED_EARLY",
        }
    }

    /// The status of a fast ended at `ended_at`.
    pub fn on_end(planned_end: DateTime<Utc>, ended_at: DateTime<Utc>) -> Self {
        if ended_at >= planned_end {
            Self::Completed
        } else {
            Self::EndedEarly
        }
    }
}

impl FromStr for FastStatus {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "IN_PROGRESS" => Ok(Self::InProgress),
            "COMPLETED" => Ok(Self::Completed),
            "ENDED_EARLY" => Ok(Self::EndedEarly),
            _ => Err(()),
        }
    }
}

impl fmt::Display for FastStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How far in the past a fast may be said to have started.
pub const MAX_BACKDATE: Duration = Duration::days(7);

/// Fasts one person may start on one Rome calendar day (counted on the day each starts). Far
/// above any real use (a fast lasts hours), it bounds how fast one account's history, and every
/// read of all of it (statistics, export), can grow.
pub const MAX_FASTS_PER_DAY: i64 = 20;

/// How far back a corrected or recorded past fast may start. Imported history is not bound by it.
pub const MAX_CORRECTION_AGE: Duration = Duration::days(365);

/// Why the times of a corrected or recorded past fast are refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanError {
    /// The start is not before the end (a fast has a length).
    EndNotAfterStart,
    StartInFuture,
    EndInFuture,
    /// The start lies more than [`MAX_CORRECTION_AGE`] before now.
    TooOld,
}

impl SpanError {
    /// The field the client should correct and what is wrong with it.
    pub fn field_and_rule(self) -> (&'static str, &'static str) {
        match self {
            Self::EndNotAfterStart => ("endedAt", "must be after startedAt"),
            Self::StartInFuture => ("startedAt", "must not be in the future"),
            Self::EndInFuture => ("endedAt", "must not be in the future"),
            Self::TooOld => ("startedAt", "may lie at most 365 days in the past"),
        }
    }
}

/// The rules every correction and every recorded past fast obeys: start before end, neither in
/// the future, the start at most [`MAX_CORRECTION_AGE`] ago (unless `imported`). `end` is `None`
/// for a running fast. Overlap with other fasts needs the person's history: see the repository.
pub fn check_span(
    start: DateTime<Utc>,
    end: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
    imported: bool,
) -> Result<(), SpanError> {
    if start > now {
        return Err(SpanError::StartInFuture);
    }
    if let Some(end) = end {
        if end > now {
            return Err(SpanError::EndInFuture);
        }
        if end <= start {
            return Err(SpanError::EndNotAfterStart);
        }
    }
    if !imported && start < now - MAX_CORRECTION_AGE {
        return Err(SpanError::TooOld);
    }
    Ok(())
}

/// How long a person can take back what one tap did: resume a fast they just ended, or un-mark
/// a dinner together with the fast it started. Long enough to notice the slip, short enough that
/// the history it changes is still the moment just past.
pub const UNDO_WINDOW: Duration = Duration::minutes(10);

/// The milestone pushes of a running fast, in the order they fall due for a long fast.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Milestone {
    Hydration2h,
    Hydration4h,
    Hydration6h,
    Electrolyte18h,
    EndingSoon,
}

impl Milestone {
    pub const ALL: [Milestone; 5] = [
        Self::Hydration2h,
        Self::Hydration4h,
        Self::Hydration6h,
        Self::Electrolyte18h,
        Self::EndingSoon,
    ];

    pub fn key(self) -> &'static str {
        match self {
            Self::Hydration2h => "hydration_2h",
            Self::Hydration4h => "hydration_4h",
            Self::Hydration6h => "hydration_6h",
            Self::Electrolyte18h => "electrolyte_18h",
            Self::EndingSoon => "ending_soon",
        }
    }

    pub fn from_key(key: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.key() == key)
    }

    /// When the milestone falls due for a fast started at `start` and planned to end at `planned_end`.
    pub fn due_at(self, start: DateTime<Utc>, planned_end: DateTime<Utc>) -> DateTime<Utc> {
        match self {
            Self::Hydration2h => start + Duration::hours(2),
            Self::Hydration4h => start + Duration::hours(4),
            Self::Hydration6h => start + Duration::hours(6),
            Self::Electrolyte18h => start + Duration::hours(18),
            Self::EndingSoon => planned_end - Duration::minutes(30),
        }
    }
}

/// Milestones due at `now` and not yet notified, earliest due first.
pub fn due_milestones(
    start: DateTime<Utc>,
    planned_end: DateTime<Utc>,
    now: DateTime<Utc>,
    notified: &[String],
) -> Vec<Milestone> {
    let mut due: Vec<(DateTime<Utc>, Milestone)> = Milestone::ALL
        .into_iter()
        .filter(|m| !notified.iter().any(|k| k == m.key()))
        .map(|m| (m.due_at(start, planned_end), m))
        .filter(|(at, _)| *at <= now)
        .collect();
    due.sort();
    due.into_iter().map(|(_, m)| m).collect()
}

/// The earliest instant after `after` at which a milestone not yet notified falls due; `None`
/// when every milestone is notified or already due by then. With `after` `None`, the earliest of
/// all the milestones not yet notified, due or not.
///
/// The milestone run keeps this instant on each running fast, so that a run reads only the fasts
/// that have something due instead of every running fast.
pub fn next_milestone_at(
    start: DateTime<Utc>,
    planned_end: DateTime<Utc>,
    notified: &[String],
    after: Option<DateTime<Utc>>,
) -> Option<DateTime<Utc>> {
    Milestone::ALL
        .into_iter()
        .filter(|m| !notified.iter().any(|k| k == m.key()))
        .map(|m| m.due_at(start, planned_end))
        .filter(|at| after.is_none_or(|after| *at > after))
        .min()
}

/// Longest a pause may last from now.
pub const MAX_PAUSE: Duration = Duration::days(30);

/// Why a requested pause end is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PauseError {
    #[error("until must be in the future")]
    InPast,
    #[error("until must be at most 30 days ahead")]
    TooFar,
}

/// The end of a pause requested at `now`: `None` (omitted) means the next Rome calendar day at
/// 06:00; a given instant must lie in the future and at most 30 days ahead.
pub fn pause_until(
    now: DateTime<Utc>,
    requested: Option<DateTime<Utc>>,
) -> Result<DateTime<Utc>, PauseError> {
    match requested {
        None => Ok(crate::rome::next_day_at(now, 6)),
        Some(until) if until <= now => Err(PauseError::InPast),
        Some(until) if until > now + MAX_PAUSE => Err(PauseError::TooFar),
        Some(until) => Ok(until),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::utc;

    #[test]
    fn status_on_end() {
        let planned = utc("2026-11-22T20:00:00Z");
        assert_eq!(FastStatus::on_end(planned, planned), FastStatus::Completed);
        assert_eq!(
            FastStatus::on_end(planned, planned - Duration::seconds(1)),
            FastStatus::EndedEarly
        );
        assert_eq!(
            "ENDED_EARLY".parse::<FastStatus>(),
            Ok(FastStatus::EndedEarly)
        );
        assert!("done".parse::<FastStatus>().is_err());
    }

    #[test]
    fn milestones_fall_due_in_order_and_once() {
        let start = utc("2026-11-22T00:00:00Z");
        let end = start + Duration::hours(16);
        assert!(due_milestones(start, end, start + Duration::minutes(119), &[]).is_empty());
        assert_eq!(
            due_milestones(start, end, start + Duration::hours(2), &[]),
            [Milestone::Hydration2h]
        );
        let at_16 = due_milestones(start, end, start + Duration::hours(16), &[]);
        assert_eq!(
            at_16,
            [
                Milestone::Hydration2h,
                Milestone::Hydration4h,
                Milestone::Hydration6h,
                Milestone::EndingSoon
            ]
        );
        let notified: Vec<String> = ["hydration_2h", "hydration_4h"].map(String::from).to_vec();
        assert_eq!(
            due_milestones(start, end, start + Duration::hours(7), &notified),
            [Milestone::Hydration6h]
        );
        // A 24 h fast: electrolytes at 18 h, before ending soon at 23:30.
        let long_end = start + Duration::hours(24);
        assert_eq!(
            due_milestones(start, long_end, start + Duration::hours(24), &notified),
            [
                Milestone::Hydration6h,
                Milestone::Electrolyte18h,
                Milestone::EndingSoon
            ]
        );
        for m in Milestone::ALL {
            assert_eq!(Milestone::from_key(m.key()), Some(m));
        }
    }

    #[test]
    fn next_milestone_instant() {
        let start = utc("2026-11-22T00:00:00Z");
        let end = start + Duration::hours(16);
        assert_eq!(
            next_milestone_at(start, end, &[], None),
            Some(start + Duration::hours(2))
        );
        let notified: Vec<String> = ["hydration_2h", "hydration_4h", "hydration_6h"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            next_milestone_at(start, end, &notified, None),
            Some(end - Duration::minutes(30)),
            "ending soon at 15:30 comes before electrolytes at 18 h"
        );
        // Due but not notified counts without `after`, and not with it.
        assert_eq!(
            next_milestone_at(start, end, &[], Some(start + Duration::hours(5))),
            Some(start + Duration::hours(6))
        );
        assert_eq!(
            next_milestone_at(start, end, &[], Some(start + Duration::hours(6))),
            Some(end - Duration::minutes(30)),
            "strictly after"
        );
        let all: Vec<String> = Milestone::ALL.map(|m| m.key().to_owned()).to_vec();
        assert_eq!(next_milestone_at(start, end, &all, None), None);
        assert_eq!(
            next_milestone_at(start, end, &[], Some(start + Duration::hours(18))),
            None
        );
        // Agrees with `due_milestones`: nothing is due before the instant, something is at it.
        for hours in [1, 3, 5, 8, 15, 17, 20] {
            let now = start + Duration::hours(hours);
            let next = next_milestone_at(start, end, &notified, None).expect("one left");
            assert_eq!(
                due_milestones(start, end, now, &notified).is_empty(),
                now < next
            );
        }
    }

    #[test]
    fn pause_rules() {
        let now = utc("2026-11-22T10:00:00Z");
        assert_eq!(
            pause_until(now, None),
            Ok(utc("2026-11-23T05:00:00Z")),
            "06:00 Rome, CET"
        );
        assert_eq!(pause_until(now, Some(now)), Err(PauseError::InPast));
        assert_eq!(
            pause_until(now, Some(now + Duration::days(30))),
            Ok(now + Duration::days(30))
        );
        assert_eq!(
            pause_until(now, Some(now + Duration::days(30) + Duration::seconds(1))),
            Err(PauseError::TooFar)
        );
        // Summer: 06:00 CEST is 04:00 UTC.
        // 22:30 UTC is already the 2nd in Rome.
        assert_eq!(
            pause_until(utc("2026-07-01T22:30:00Z"), None),
            Ok(utc("2026-07-03T04:00:00Z"))
        );
    }
}
