//! Fasting statistics and streaks, computed from a user's fasts and pauses.
//!
//! - Hours: the time fasted inside the current Rome week (Monday first) and month, the running
//!   fast up to now, with overlapping fasts merged so that no minute counts twice; one decimal.
//! - Sessions: ended fasts only; `completionRate` = completed / total, 0 without any, four decimals.
//! - Streaks: a Rome calendar day counts when a completed fast ended on it, or a completed fast of
//!   24 hours or more covered the whole day. A day touched by a pause neither breaks nor extends a
//!   streak. Today, until it is over, breaks nothing: a streak that ran until yesterday is current.

use std::collections::BTreeSet;

use chrono::{DateTime, Duration, NaiveDate, Utc};

use crate::fasting::FastStatus;
use crate::rome;

/// What the statistics need of a fast.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastSpan {
    pub status: FastStatus,
    pub started_at: DateTime<Utc>,
    /// `None` while running.
    pub ended_at: Option<DateTime<Utc>>,
}

/// A pause (free day) from `start` to `end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PauseSpan {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(example = json!({"weeklyHours": 32.5, "monthlyHours": 120.0, "currentStreak": 3,
    "longestStreak": 9, "completionRate": 0.8, "totalSessions": 10, "completedSessions": 8}))]
pub struct Stats {
    pub weekly_hours: f64,
    pub monthly_hours: f64,
    pub current_streak: u32,
    pub longest_streak: u32,
    pub completion_rate: f64,
    pub total_sessions: u32,
    pub completed_sessions: u32,
}

/// A fast of this length or more counts every Rome day it fully covers.
pub const LONG_FAST: Duration = Duration::hours(24);

pub fn compute(fasts: &[FastSpan], pauses: &[PauseSpan], now: DateTime<Utc>) -> Stats {
    let intervals = merged_intervals(fasts, now);
    let (week_start, week_end) = rome::week_range(now);
    let (month_start, month_end) = rome::month_range(now);
    let ended: Vec<&FastSpan> = fasts
        .iter()
        .filter(|f| f.status != FastStatus::InProgress)
        .collect();
    let total = u32::try_from(ended.len()).unwrap_or(u32::MAX);
    let completed = u32::try_from(
        ended
            .iter()
            .filter(|f| f.status == FastStatus::Completed)
            .count(),
    )
    .unwrap_or(u32::MAX);
    let rate = if total == 0 {
        0.0
    } else {
        round_to(f64::from(completed) / f64::from(total), 4)
    };
    let (current, longest) = streaks(fasts, pauses, now);
    Stats {
        weekly_hours: hours_within(&intervals, week_start, week_end),
        monthly_hours: hours_within(&intervals, month_start, month_end),
        current_streak: current,
        longest_streak: longest,
        completion_rate: rate,
        total_sessions: total,
        completed_sessions: completed,
    }
}

fn round_to(x: f64, decimals: i32) -> f64 {
    let f = 10f64.powi(decimals);
    (x * f).round() / f
}

/// The fasts as sorted, non-overlapping `[start, end)` intervals; a running fast ends at `now`.
fn merged_intervals(fasts: &[FastSpan], now: DateTime<Utc>) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
    let mut spans: Vec<(DateTime<Utc>, DateTime<Utc>)> = fasts
        .iter()
        .map(|f| {
            (
                f.started_at,
                f.ended_at.unwrap_or(now).min(now.max(f.started_at)),
            )
        })
        .filter(|(s, e)| e > s)
        .collect();
    spans.sort();
    let mut merged: Vec<(DateTime<Utc>, DateTime<Utc>)> = Vec::with_capacity(spans.len());
    for (s, e) in spans {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    merged
}

/// Hours of `intervals` inside `[from, to)`, one decimal.
fn hours_within(
    intervals: &[(DateTime<Utc>, DateTime<Utc>)],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> f64 {
    let seconds: i64 = intervals
        .iter()
        .map(|(s, e)| ((*e).min(to) - (*s).max(from)).num_seconds().max(0))
        .sum();
    // Seconds fit an f64 exactly far beyond any fasting history.
    #[allow(clippy::cast_precision_loss)]
    let hours = seconds as f64 / 3600.0;
    round_to(hours, 1)
}

/// Rome days that count for a streak.
fn counted_days(fasts: &[FastSpan]) -> BTreeSet<NaiveDate> {
    let mut days = BTreeSet::new();
    for f in fasts.iter().filter(|f| f.status == FastStatus::Completed) {
        let Some(end) = f.ended_at else { continue };
        days.insert(rome::local_date(end));
        if end - f.started_at >= LONG_FAST {
            let mut day = rome::local_date(f.started_at);
            while day <= rome::local_date(end) {
                let (from, to) = rome::day_range(day);
                if f.started_at <= from && to <= end {
                    days.insert(day);
                }
                match day.succ_opt() {
                    Some(next) => day = next,
                    None => break,
                }
            }
        }
    }
    days
}

/// Rome days touched by a pause.
fn paused_days(pauses: &[PauseSpan]) -> BTreeSet<NaiveDate> {
    let mut days = BTreeSet::new();
    for p in pauses.iter().filter(|p| p.end > p.start) {
        let mut day = rome::local_date(p.start);
        // The end instant itself belongs to the day it ends on only if it is past midnight.
        let last = rome::local_date(p.end - Duration::nanoseconds(1));
        while day <= last {
            days.insert(day);
            match day.succ_opt() {
                Some(next) => day = next,
                None => break,
            }
        }
    }
    days
}

/// `(current, longest)` streaks in days.
fn streaks(fasts: &[FastSpan], pauses: &[PauseSpan], now: DateTime<Utc>) -> (u32, u32) {
    let counted = counted_days(fasts);
    let paused = paused_days(pauses);
    let today = rome::local_date(now);
    let Some(first) = counted.iter().next().copied() else {
        return (0, 0);
    };
    // Walk forward from the first counted day to today; a run survives paused days and today.
    let mut longest = 0u32;
    let mut run = 0u32;
    let mut day = first;
    while day <= today {
        if paused.contains(&day) {
            // Neutral: a free day neither breaks the run nor adds to it.
        } else if counted.contains(&day) {
            run += 1;
            longest = longest.max(run);
        } else if day != today {
            run = 0;
        }
        match day.succ_opt() {
            Some(next) => day = next,
            None => break,
        }
    }
    (run, longest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::utc;
    use proptest::prelude::*;

    fn done(start: &str, end: &str) -> FastSpan {
        FastSpan {
            status: FastStatus::Completed,
            started_at: utc(start),
            ended_at: Some(utc(end)),
        }
    }

    fn early(start: &str, end: &str) -> FastSpan {
        FastSpan {
            status: FastStatus::EndedEarly,
            ..done(start, end)
        }
    }

    #[test]
    fn empty_history() {
        let s = compute(&[], &[], utc("2026-11-22T10:00:00Z"));
        assert_eq!(s.weekly_hours, 0.0);
        assert_eq!(
            (s.current_streak, s.longest_streak, s.total_sessions),
            (0, 0, 0)
        );
        assert_eq!(s.completion_rate, 0.0);
    }

    #[test]
    fn hours_count_overlap_with_week_and_month_and_the_running_fast() {
        // Sunday 22 Nov 2026; the Rome week started Monday 16 Nov 00:00 CET (15 Nov 23:00 UTC).
        let now = utc("2026-11-22T12:00:00Z");
        let fasts = [
            // 4 h of it before the week began, 12 h inside.
            done("2026-11-15T19:00:00Z", "2026-11-16T11:00:00Z"),
            early("2026-11-18T20:00:00Z", "2026-11-19T06:30:00Z"),
            FastSpan {
                status: FastStatus::InProgress,
                started_at: utc("2026-11-22T02:00:00Z"),
                ended_at: None,
            },
        ];
        let s = compute(&fasts, &[], now);
        assert_eq!(s.weekly_hours, 12.0 + 10.5 + 10.0);
        assert_eq!(s.monthly_hours, 16.0 + 10.5 + 10.0);
        assert_eq!((s.total_sessions, s.completed_sessions), (2, 1));
        assert_eq!(s.completion_rate, 0.5);
    }

    #[test]
    fn month_boundary_follows_rome_not_utc() {
        // 1 Dec 00:00 in Rome is 30 Nov 23:00 UTC: the last hour of this fast belongs to December.
        let fasts = [done("2026-11-30T15:00:00Z", "2026-12-01T00:00:00Z")];
        let s = compute(&fasts, &[], utc("2026-12-01T10:00:00Z"));
        assert_eq!(s.monthly_hours, 1.0);
        let s = compute(&fasts, &[], utc("2026-11-30T22:30:00Z"));
        assert_eq!(
            s.monthly_hours, 7.5,
            "up to 30 Nov 22:30 UTC, still November in Rome"
        );
    }

    #[test]
    fn dst_weeks_have_the_right_length() {
        // The week of the October change (Mon 19 Oct 00:00 CEST to Mon 26 Oct 00:00 CET) lasts
        // 169 hours; a fast covering all of it, seen 36 s before the week ends, counts 169.0.
        let fasts = [done("2026-10-18T00:00:00Z", "2026-10-25T23:00:00Z")];
        let s = compute(&fasts, &[], utc("2026-10-25T22:59:24Z"));
        assert_eq!(s.weekly_hours, 169.0);
        // The week of the March change lasts 167 hours.
        let fasts = [done("2026-03-20T00:00:00Z", "2026-03-29T22:00:00Z")];
        let s = compute(&fasts, &[], utc("2026-03-29T21:59:24Z"));
        assert_eq!(s.weekly_hours, 167.0);
    }

    #[test]
    fn overlapping_fasts_count_once() {
        let fasts = [
            done("2026-11-20T00:00:00Z", "2026-11-20T16:00:00Z"),
            early("2026-11-20T10:00:00Z", "2026-11-20T20:00:00Z"),
        ];
        let s = compute(&fasts, &[], utc("2026-11-21T00:00:00Z"));
        assert_eq!(s.weekly_hours, 20.0);
    }

    #[test]
    fn streak_of_consecutive_days_and_today_breaks_nothing() {
        let fasts = [
            done("2026-11-18T19:00:00Z", "2026-11-19T11:00:00Z"),
            done("2026-11-19T19:00:00Z", "2026-11-20T11:00:00Z"),
            done("2026-11-20T19:00:00Z", "2026-11-21T11:00:00Z"),
        ];
        // 22 Nov morning: today has no completed fast yet, the run to yesterday stands.
        let s = compute(&fasts, &[], utc("2026-11-22T08:00:00Z"));
        assert_eq!((s.current_streak, s.longest_streak), (3, 3));
        // 23 Nov: the 22nd passed without a fast; the streak is broken.
        let s = compute(&fasts, &[], utc("2026-11-23T08:00:00Z"));
        assert_eq!((s.current_streak, s.longest_streak), (0, 3));
    }

    #[test]
    fn ended_early_does_not_count_for_streaks() {
        let fasts = [
            done("2026-11-19T19:00:00Z", "2026-11-20T11:00:00Z"),
            early("2026-11-20T19:00:00Z", "2026-11-21T05:00:00Z"),
        ];
        let s = compute(&fasts, &[], utc("2026-11-22T08:00:00Z"));
        assert_eq!((s.current_streak, s.longest_streak), (0, 1));
    }

    #[test]
    fn paused_days_neither_break_nor_extend() {
        let fasts = [
            done("2026-11-18T19:00:00Z", "2026-11-19T11:00:00Z"),
            done("2026-11-20T19:00:00Z", "2026-11-21T11:00:00Z"),
        ];
        // 20 Nov paused (Rome day from 19 Nov 23:00 UTC).
        let pause = PauseSpan {
            start: utc("2026-11-19T23:00:00Z"),
            end: utc("2026-11-20T05:00:00Z"),
        };
        let s = compute(&fasts, &[pause], utc("2026-11-21T20:00:00Z"));
        assert_eq!((s.current_streak, s.longest_streak), (2, 2));
        let s = compute(&fasts, &[], utc("2026-11-21T20:00:00Z"));
        assert_eq!((s.current_streak, s.longest_streak), (1, 1));
        // A fast completed on a paused day does not extend the run either.
        let on_pause = [done("2026-11-19T10:00:00Z", "2026-11-20T02:00:00Z")];
        let s = compute(&on_pause, &[pause], utc("2026-11-20T20:00:00Z"));
        assert_eq!((s.current_streak, s.longest_streak), (0, 0));
    }

    #[test]
    fn a_long_fast_counts_each_day_it_covers() {
        // 72 h from 17 Nov 20:00 Rome to 20 Nov 20:00 Rome: covers 18 and 19 whole, ends on 20.
        let fasts = [done("2026-11-17T19:00:00Z", "2026-11-20T19:00:00Z")];
        let s = compute(&fasts, &[], utc("2026-11-20T20:00:00Z"));
        assert_eq!((s.current_streak, s.longest_streak), (3, 3));
    }

    #[test]
    fn a_long_fast_across_the_autumn_change_covers_the_25_hour_day() {
        // 24 Oct 23:00 Rome (21:00 UTC) to 26 Oct 00:00 Rome (25 Oct 23:00 UTC): 26 hours,
        // covering all of 25 October (25 hours long) and ending just after its end.
        let fasts = [done("2026-10-24T21:00:00Z", "2026-10-25T23:00:00Z")];
        let s = compute(&fasts, &[], utc("2026-10-26T08:00:00Z"));
        assert_eq!(s.longest_streak, 2, "25 Oct covered, 26 Oct ended on");
    }

    fn arb_fasts() -> impl Strategy<Value = Vec<FastSpan>> {
        let base = utc("2026-10-01T00:00:00Z").timestamp();
        prop::collection::vec(
            (0i64..60 * 24 * 3600, 60i64..80 * 3600, prop::bool::ANY),
            0..12,
        )
        .prop_map(move |v| {
            v.into_iter()
                .map(|(start, len, completed)| {
                    let started_at = DateTime::from_timestamp(base + start, 0).unwrap_or_default();
                    FastSpan {
                        status: if completed {
                            FastStatus::Completed
                        } else {
                            FastStatus::EndedEarly
                        },
                        started_at,
                        ended_at: Some(started_at + Duration::seconds(len)),
                    }
                })
                .collect()
        })
    }

    proptest! {
        /// No minute counts twice: the month's hours never exceed the month's length, nor the
        /// sum of the fasts' own lengths; the week never exceeds the month it lies in.
        #[test]
        fn hours_are_bounded(fasts in arb_fasts(), offset in 0i64..60 * 24 * 3600) {
            let now = utc("2026-10-01T00:00:00Z") + Duration::seconds(offset);
            let s = compute(&fasts, &[], now);
            let (ms, me) = rome::month_range(now);
            #[allow(clippy::cast_precision_loss)]
            let month_hours = (me - ms).num_seconds() as f64 / 3600.0;
            prop_assert!(s.monthly_hours <= month_hours + 0.05 + 1e-9);
            #[allow(clippy::cast_precision_loss)]
            let own: f64 = fasts.iter().map(|f| (f.ended_at.unwrap_or(now).min(now) - f.started_at).num_seconds().max(0) as f64 / 3600.0).sum();
            // One-decimal rounding may add up to 0.05 h.
            prop_assert!(s.monthly_hours <= own + 0.05 + 1e-9);
            prop_assert!(s.weekly_hours <= 7.0 * 25.0);
            prop_assert!(s.current_streak <= s.longest_streak);
            prop_assert!(s.completed_sessions <= s.total_sessions);
            prop_assert!((0.0..=1.0).contains(&s.completion_rate));
        }

        /// A pause over days that do not count never shortens a streak.
        #[test]
        fn pauses_never_shorten_streaks(fasts in arb_fasts(), p_start in 0i64..60 * 24 * 3600, p_len in 3600i64..72 * 3600) {
            let now = utc("2026-12-01T00:00:00Z");
            let start = utc("2026-10-01T00:00:00Z") + Duration::seconds(p_start);
            let pause = PauseSpan { start, end: start + Duration::seconds(p_len) };
            let counted = counted_days(&fasts);
            prop_assume!(paused_days(&[pause]).is_disjoint(&counted));
            let without = compute(&fasts, &[], now);
            let with = compute(&fasts, &[pause], now);
            prop_assert!(with.longest_streak >= without.longest_streak);
            prop_assert!(with.current_streak >= without.current_streak);
        }
    }
}
