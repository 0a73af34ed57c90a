//! The Europe/Rome calendar: local days, weeks (Monday first) and months as UTC instants.
//!
//! Boundaries are computed from local wall-clock midnight and converted with the zone rules, never
//! by adding 24 hours, so that the days of the DST changes come out 23 and 25 hours long.

use chrono::{
    DateTime, Datelike, Days, LocalResult, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Timelike,
    Utc,
};
use chrono_tz::Europe::Rome;
use chrono_tz::Tz;

/// The product time zone.
pub const TZ: Tz = Rome;

/// The Rome calendar date of an instant.
pub fn local_date(at: DateTime<Utc>) -> NaiveDate {
    at.with_timezone(&TZ).date_naive()
}

/// The UTC instant of a Rome wall-clock time. A time skipped by the spring change is moved to the
/// first instant after the gap; a time repeated in autumn resolves to its first occurrence.
pub fn instant_of(local: NaiveDateTime) -> DateTime<Utc> {
    match TZ.from_local_datetime(&local) {
        LocalResult::Single(t) => t.with_timezone(&Utc),
        LocalResult::Ambiguous(first, _) => first.with_timezone(&Utc),
        LocalResult::None => {
            // Gaps in Europe/Rome are one hour long and start on the hour, so the wall-clock hour
            // after the requested one exists and its start is the end of the gap.
            let later = local + chrono::Duration::hours(1);
            let hour_start = later
                .date()
                .and_time(NaiveTime::from_hms_opt(later.hour(), 0, 0).unwrap_or(NaiveTime::MIN));
            match TZ.from_local_datetime(&hour_start) {
                LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => t.with_timezone(&Utc),
                LocalResult::None => hour_start.and_utc(),
            }
        }
    }
}

/// The instant a Rome calendar day starts.
pub fn start_of_day(date: NaiveDate) -> DateTime<Utc> {
    instant_of(date.and_time(NaiveTime::MIN))
}

/// `[start, end)` of a Rome calendar day.
pub fn day_range(date: NaiveDate) -> (DateTime<Utc>, DateTime<Utc>) {
    (start_of_day(date), start_of_day(next_day(date)))
}

/// `[start, end)` of the Rome week (Monday to Sunday) containing `at`.
pub fn week_range(at: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
    let date = local_date(at);
    let monday = date - Days::new(u64::from(date.weekday().num_days_from_monday()));
    (start_of_day(monday), start_of_day(monday + Days::new(7)))
}

/// `[start, end)` of the Rome calendar month containing `at`.
pub fn month_range(at: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
    let date = local_date(at);
    let first = date.with_day(1).unwrap_or(date);
    let next = if first.month() == 12 {
        NaiveDate::from_ymd_opt(first.year() + 1, 1, 1)
    } else {
        NaiveDate::from_ymd_opt(first.year(), first.month() + 1, 1)
    };
    (start_of_day(first), start_of_day(next.unwrap_or(first)))
}

/// The next Rome midnight after `at`: when a daily quota resets.
pub fn next_midnight(at: DateTime<Utc>) -> DateTime<Utc> {
    start_of_day(next_day(local_date(at)))
}

/// The calendar day after `at`'s Rome day, at `hour`:00 Rome time.
pub fn next_day_at(at: DateTime<Utc>, hour: u32) -> DateTime<Utc> {
    let time = NaiveTime::from_hms_opt(hour.min(23), 0, 0).unwrap_or(NaiveTime::MIN);
    instant_of(next_day(local_date(at)).and_time(time))
}

fn next_day(date: NaiveDate) -> NaiveDate {
    date.succ_opt().unwrap_or(date)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::utc;

    fn date(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").expect("valid date")
    }

    #[test]
    fn dst_days_have_23_and_25_hours() {
        let (s, e) = day_range(date("2026-03-29"));
        assert_eq!((e - s).num_hours(), 23);
        let (s, e) = day_range(date("2026-10-25"));
        assert_eq!((e - s).num_hours(), 25);
        let (s, e) = day_range(date("2026-07-01"));
        assert_eq!((e - s).num_hours(), 24);
        assert_eq!(s, utc("2026-06-30T22:00:00Z"));
    }

    #[test]
    fn local_date_follows_rome_not_utc() {
        assert_eq!(local_date(utc("2026-01-01T23:30:00Z")), date("2026-01-02"));
        assert_eq!(local_date(utc("2026-07-01T21:59:59Z")), date("2026-07-01"));
        assert_eq!(local_date(utc("2026-07-01T22:00:00Z")), date("2026-07-02"));
    }

    #[test]
    fn week_starts_monday_across_dst() {
        // Sunday 2026-03-29 is the spring change; its week started Monday 23 March at CET.
        let (s, e) = week_range(utc("2026-03-29T12:00:00Z"));
        assert_eq!(s, utc("2026-03-22T23:00:00Z"));
        assert_eq!(e, utc("2026-03-29T22:00:00Z"));
        assert_eq!((e - s).num_hours(), 7 * 24 - 1);
    }

    #[test]
    fn month_ends() {
        let (s, e) = month_range(utc("2026-12-31T22:59:59Z"));
        assert_eq!(s, utc("2026-11-30T23:00:00Z"));
        assert_eq!(e, utc("2026-12-31T23:00:00Z"));
        let (s, e) = month_range(utc("2026-02-15T00:00:00Z"));
        assert_eq!((e - s).num_hours(), 28 * 24);
        let (s, e) = month_range(utc("2026-10-10T00:00:00Z"));
        assert_eq!((e - s).num_hours(), 31 * 24 + 1);
        assert_eq!(s, utc("2026-09-30T22:00:00Z"));
    }

    #[test]
    fn quota_resets_at_rome_midnight() {
        assert_eq!(
            next_midnight(utc("2026-03-28T23:30:00Z")),
            utc("2026-03-29T22:00:00Z")
        );
        assert_eq!(
            next_midnight(utc("2026-10-25T10:00:00Z")),
            utc("2026-10-25T23:00:00Z")
        );
    }

    #[test]
    fn gap_times_move_forward() {
        // 02:30 does not exist on 2026-03-29 in Rome; the clock jumps from 02:00 to 03:00 CEST.
        let t = instant_of(
            date("2026-03-29")
                .and_hms_opt(2, 30, 0)
                .expect("valid time"),
        );
        assert_eq!(t, utc("2026-03-29T01:00:00Z"));
        // 02:30 happens twice on 2026-10-25; the first is CEST.
        let t = instant_of(
            date("2026-10-25")
                .and_hms_opt(2, 30, 0)
                .expect("valid time"),
        );
        assert_eq!(t, utc("2026-10-25T00:30:00Z"));
    }

    #[test]
    fn default_pause_end_is_next_day_six() {
        assert_eq!(
            next_day_at(utc("2026-11-22T23:30:00Z"), 6),
            utc("2026-11-24T05:00:00Z")
        );
        assert_eq!(
            next_day_at(utc("2026-11-22T10:00:00Z"), 6),
            utc("2026-11-23T05:00:00Z")
        );
    }
}
