//! Reading a fasting history from a CSV file: Zero's export, or this product's own
//! (`GET /me/export?format=csv`). Parsing only; what gets imported is the repository's call
//! ([`crate::repo::fasts::import`]).
//!
//! - **This product's file**: `protocol`, `startedAt`, `endedAt` (RFC 3339) of each ended fast; a
//!   fast still running is skipped.
//! - **Zero's file**: `Date` (the start's date, `M/D/YY` or `M/D/YYYY` as Zero writes it, or
//!   `YYYY-MM-DD`), `Start` and `End` (`HH:MM`, Europe/Rome wall-clock; an end earlier than the
//!   start is on the next day) and `Hours` (the fast's length as Zero counted it). Zero has no
//!   protocols: a fast gets the longest protocol whose fasting hours do not exceed its `Hours`
//!   (12:12 below 12), so that a fast Zero counted as done is done here too.
//!
//! Times without an offset are Rome's: a time the spring change skips moves past the gap, one
//! the autumn change repeats is its first occurrence ([`domain::rome::instant_of`]).

use chrono::{DateTime, NaiveDate, NaiveTime, Utc};
use domain::protocol::{PROTOCOLS, Protocol};

use crate::repo::fasts::{ImportRow, Skipped};

/// Most data rows a file may have.
pub const MAX_ROWS: usize = 5000;

/// Why a file as a whole is refused.
#[derive(Debug, PartialEq, Eq)]
pub enum FileError {
    /// Neither header is there.
    UnknownFormat,
    TooManyRows,
}

/// The fasts of a file and the lines skipped while reading it. `line` counts the header as 1.
pub fn read(text: &str) -> Result<(Vec<ImportRow>, Vec<Skipped>), FileError> {
    // The reader numbers lines by LF; spreadsheets and this product's export end them with CRLF.
    let text = text.replace("\r\n", "\n");
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let headers = reader
        .headers()
        .map_err(|_| FileError::UnknownFormat)?
        .clone();
    let column = |name: &str| headers.iter().position(|h| h.eq_ignore_ascii_case(name));
    let format = match (
        column("startedAt"),
        column("endedAt"),
        column("protocol"),
        column("Date"),
        column("Start"),
        column("End"),
    ) {
        (Some(start), Some(end), Some(protocol), ..) => Format::Own {
            start,
            end,
            protocol,
        },
        (_, _, _, Some(date), Some(start), Some(end)) => Format::Zero {
            date,
            start,
            end,
            hours: column("Hours"),
        },
        _ => return Err(FileError::UnknownFormat),
    };
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for (index, record) in reader.records().enumerate() {
        if index >= MAX_ROWS {
            return Err(FileError::TooManyRows);
        }
        let line = record
            .as_ref()
            .ok()
            .and_then(|r| r.position())
            .map_or(index + 2, |p| {
                usize::try_from(p.line()).unwrap_or(index + 2)
            });
        let parsed = match &record {
            Err(_) => Err("the line cannot be read as CSV"),
            Ok(r) if r.iter().all(str::is_empty) => continue,
            Ok(r) => format.row(r),
        };
        match parsed {
            Ok((protocol, started_at, ended_at)) => rows.push(ImportRow {
                line,
                protocol,
                started_at,
                ended_at,
            }),
            Err(reason) => skipped.push(Skipped {
                line,
                reason: reason.to_owned(),
            }),
        }
    }
    Ok((rows, skipped))
}

enum Format {
    Own {
        start: usize,
        end: usize,
        protocol: usize,
    },
    Zero {
        date: usize,
        start: usize,
        end: usize,
        hours: Option<usize>,
    },
}

type Fast = (Protocol, DateTime<Utc>, DateTime<Utc>);

impl Format {
    fn row(&self, r: &csv::StringRecord) -> Result<Fast, &'static str> {
        let cell = |i: usize| r.get(i).unwrap_or("");
        match *self {
            Self::Own {
                start,
                end,
                protocol,
            } => {
                let protocol = cell(protocol)
                    .parse::<Protocol>()
                    .map_err(|_| "unknown protocol")?;
                let started_at = instant(cell(start)).ok_or("startedAt is not a timestamp")?;
                if cell(end).is_empty() {
                    return Err("the fast has not ended");
                }
                let ended_at = instant(cell(end)).ok_or("endedAt is not a timestamp")?;
                ordered(protocol, started_at, ended_at)
            }
            Self::Zero {
                date,
                start,
                end,
                hours,
            } => {
                let day = zero_date(cell(date)).ok_or("Date is not a date")?;
                let start = clock(cell(start)).ok_or("Start is not a time (HH:MM)")?;
                if cell(end).is_empty() {
                    return Err("the fast has not ended");
                }
                let end = clock(cell(end)).ok_or("End is not a time (HH:MM)")?;
                let end_day = if end <= start {
                    day.succ_opt().ok_or("Date is not a date")?
                } else {
                    day
                };
                let started_at = domain::rome::instant_of(day.and_time(start));
                let ended_at = domain::rome::instant_of(end_day.and_time(end));
                let counted = match hours.map(cell).filter(|h| !h.is_empty()) {
                    Some(h) => h
                        .parse::<f64>()
                        .ok()
                        .filter(|h| h.is_finite() && *h >= 0.0)
                        .ok_or("Hours is not a number")?,
                    None => (ended_at - started_at).num_minutes() as f64 / 60.0,
                };
                ordered(
                    protocol_for(counted).ok_or("no protocol fits")?,
                    started_at,
                    ended_at,
                )
            }
        }
    }
}

fn ordered(p: Protocol, start: DateTime<Utc>, end: DateTime<Utc>) -> Result<Fast, &'static str> {
    if end <= start {
        return Err("the fast ends before it starts");
    }
    if end - start > chrono::Duration::days(30) {
        return Err("the fast lasts more than 30 days");
    }
    Ok((p, start, end))
}

fn instant(raw: &str) -> Option<DateTime<Utc>> {
    let raw = raw.trim_start_matches('\'');
    let t = DateTime::parse_from_rfc3339(raw).ok()?.with_timezone(&Utc);
    (crate::input::MIN_DAY..=crate::input::MAX_DAY)
        .contains(&t.date_naive())
        .then_some(t)
}

fn zero_date(raw: &str) -> Option<NaiveDate> {
    if let Ok(d) = raw.parse::<NaiveDate>() {
        return Some(d);
    }
    let mut parts = raw.split('/');
    let month: u32 = parts.next()?.parse().ok()?;
    let day: u32 = parts.next()?.parse().ok()?;
    let year_raw = parts.next()?;
    if parts.next().is_some() {
        return None;
    }
    let year: i32 = year_raw.parse().ok()?;
    let year = if year_raw.len() <= 2 {
        2000 + year
    } else {
        year
    };
    NaiveDate::from_ymd_opt(year, month, day).filter(|d| *d >= crate::input::MIN_DAY)
}

fn clock(raw: &str) -> Option<NaiveTime> {
    NaiveTime::parse_from_str(raw, "%H:%M")
        .or_else(|_| NaiveTime::parse_from_str(raw, "%H:%M:%S"))
        .ok()
}

/// The longest protocol of at most `hours` fasting hours; the shortest one below that.
fn protocol_for(hours: f64) -> Option<Protocol> {
    let all = PROTOCOLS.iter().filter_map(|p| p.parse::<Protocol>().ok());
    all.clone()
        .filter(|p| f64::from(p.fasting_hours()) <= hours)
        .max_by_key(|p| p.fasting_hours())
        .or_else(|| all.min_by_key(|p| p.fasting_hours()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(s: &str) -> DateTime<Utc> {
        s.parse().expect("a timestamp")
    }

    #[test]
    fn zero_rows_run_from_the_start_to_the_end_the_next_day() {
        let (rows, skipped) = read(
            "Date,Start,End,Hours,Night Eating\n1/17/21,19:15,12:00,16,1\n1/16/21,19:45,10:14,14,2\n1/15/21,21:00,,13,3\n",
        )
        .expect("a Zero file");
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].line, 2);
        assert_eq!(rows[0].started_at, utc("2021-01-17T18:15:00Z"));
        assert_eq!(rows[0].ended_at, utc("2021-01-18T11:00:00Z"));
        assert_eq!(rows[0].protocol.to_string(), "16:8");
        assert_eq!(rows[1].protocol.to_string(), "14:10");
        assert_eq!(skipped.len(), 1);
        assert_eq!(skipped[0].line, 4);
    }

    #[test]
    fn rome_times_across_the_spring_change() {
        // 29 March 2026: 02:00-03:00 does not exist in Rome.
        let (rows, _) =
            read("Date,Start,End,Hours\n3/28/26,20:00,12:00,16\n").expect("a Zero file");
        assert_eq!(rows[0].started_at, utc("2026-03-28T19:00:00Z"));
        assert_eq!(rows[0].ended_at, utc("2026-03-29T10:00:00Z"));
        assert_eq!(
            rows[0].ended_at - rows[0].started_at,
            chrono::Duration::hours(15)
        );
    }

    #[test]
    fn the_own_format_skips_running_fasts_and_bad_cells() {
        let text = "id,status,protocol,startedAt,plannedEndAt,endedAt,autoStarted\r\n\
            a,COMPLETED,16:8,2026-01-01T20:00:00Z,2026-01-02T12:00:00Z,2026-01-02T12:30:00Z,false\r\n\
            b,IN_PROGRESS,16:8,2026-01-03T20:00:00Z,2026-01-04T12:00:00Z,,false\r\n\
            c,COMPLETED,17:7,2026-01-05T20:00:00Z,2026-01-06T12:00:00Z,2026-01-06T12:30:00Z,false\r\n";
        let (rows, skipped) = read(text).expect("our file");
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].protocol.to_string(), "16:8");
        let reasons: Vec<_> = skipped
            .iter()
            .map(|s| (s.line, s.reason.as_str()))
            .collect();
        assert_eq!(
            reasons,
            vec![(3, "the fast has not ended"), (4, "unknown protocol")]
        );
    }

    #[test]
    fn other_files_and_too_many_rows_are_refused() {
        assert_eq!(
            read("a,b\n1,2\n").map(|_| ()),
            Err(FileError::UnknownFormat)
        );
        assert_eq!(read("").map(|_| ()), Err(FileError::UnknownFormat));
        let mut big = String::from("Date,Start,End\n");
        for _ in 0..=MAX_ROWS {
            big.push_str("1/1/21,20:00,12:00\n");
        }
        assert_eq!(read(&big).map(|_| ()), Err(FileError::TooManyRows));
    }
}
