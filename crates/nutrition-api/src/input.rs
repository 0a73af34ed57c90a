//! Checks every input from outside passes before any handler runs, one place per kind of input,
//! so that nothing Postgres would refuse ever reaches a query (a refusal there is a 500):
//!
//! - the path and the query string: no NUL character and valid UTF-8 once percent-decoded
//!   ([`reject_hostile_urls`], a middleware in front of every route);
//! - JSON bodies: no NUL character in any string (`service_kit::http::parse_json`, for every body);
//! - calendar dates and instants: inside years 0001 to 9999 ([`Day`], [`Instant`],
//!   [`check_instant`]), which Postgres's `date` and `timestamptz` hold and RFC 3339 can write.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Deserializer};

use crate::error::{ApiError, invalid};

/// Middleware answering 400 `VALIDATION_ERROR` when the path or the query string decodes to a NUL
/// character or to bytes that are not UTF-8.
pub async fn reject_hostile_urls(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    if let Err(rule) = check_url_part(req.path()) {
        return Err(ApiError::Validation(format!("path: {rule}")).into());
    }
    if let Err(rule) = check_url_part(req.query_string()) {
        return Err(ApiError::Validation(format!("query string: {rule}")).into());
    }
    next.call(req).await
}

/// A percent-encoded part of a URL is acceptable when it decodes to UTF-8 without NUL.
fn check_url_part(raw: &str) -> Result<(), &'static str> {
    // A malformed escape stays as it is, and is then judged as the characters it is.
    let decoded: Vec<u8> = percent_encoding::percent_decode_str(raw).collect();
    match String::from_utf8(decoded) {
        Err(_) => Err("must be valid UTF-8 once percent-decoded"),
        Ok(text) if text.contains('\0') => Err("must not contain the NUL character"),
        Ok(_) => Ok(()),
    }
}

/// The first and last calendar days accepted from outside.
pub const MIN_DAY: NaiveDate = match NaiveDate::from_ymd_opt(1, 1, 1) {
    Some(d) => d,
    None => NaiveDate::MIN,
};
pub const MAX_DAY: NaiveDate = match NaiveDate::from_ymd_opt(9999, 12, 31) {
    Some(d) => d,
    None => NaiveDate::MAX,
};

const RANGE_RULE: &str = "must lie between the years 0001 and 9999";

/// A calendar date (`YYYY-MM-DD`) from outside, inside [`MIN_DAY`]..=[`MAX_DAY`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Day(pub NaiveDate);

impl<'de> Deserialize<'de> for Day {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        let day = NaiveDate::deserialize(de)?;
        if (MIN_DAY..=MAX_DAY).contains(&day) {
            Ok(Self(day))
        } else {
            Err(serde::de::Error::custom(RANGE_RULE))
        }
    }
}

/// An RFC 3339 instant from outside whose UTC date lies inside [`MIN_DAY`]..=[`MAX_DAY`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Instant(pub DateTime<Utc>);

impl<'de> Deserialize<'de> for Instant {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        let t = DateTime::<Utc>::deserialize(de)?;
        in_range(t)
            .map(Self)
            .map_err(|_| serde::de::Error::custom(RANGE_RULE))
    }
}

fn in_range(t: DateTime<Utc>) -> Result<DateTime<Utc>, ()> {
    if (MIN_DAY..=MAX_DAY).contains(&t.date_naive()) {
        Ok(t)
    } else {
        Err(())
    }
}

/// Parses an RFC 3339 instant given as text (a query parameter), with the range of [`Instant`].
pub fn check_instant(field: &str, raw: &str) -> Result<DateTime<Utc>, ApiError> {
    let t = DateTime::parse_from_rfc3339(raw)
        .map_err(|_| invalid(field, "must be an RFC 3339 timestamp"))?
        .with_timezone(&Utc);
    in_range(t).map_err(|()| invalid(field, RANGE_RULE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_parts_must_decode_to_utf8_without_nul() {
        assert!(check_url_part("/me/fast-events/abc").is_ok());
        assert!(check_url_part("before=2026-11-23T10%3A00%3A00Z&limit=5").is_ok());
        assert!(check_url_part("/me/recipes/caff%C3%A8").is_ok());
        assert!(
            check_url_part("%zz%4").is_ok(),
            "malformed escapes stay text"
        );
        assert!(check_url_part("/me/fast-events/a%00b").is_err());
        assert!(check_url_part("/me/meal-plans/%FF").is_err());
        assert!(check_url_part("x=%C3%28").is_err());
        assert!(check_url_part("x=%ED%A0%80").is_err(), "a UTF-16 surrogate");
    }

    #[test]
    fn days_and_instants_stay_inside_years_1_to_9999() {
        let day = |s: &str| serde_json::from_str::<Day>(&format!("\"{s}\"")).map(|d| d.0);
        assert!(day("2026-11-23").is_ok());
        assert!(day("0001-01-01").is_ok() && day("9999-12-31").is_ok());
        for bad in ["0000-12-31", "-5000-01-01", "+10000-01-01", "2026-02-30"] {
            assert!(day(bad).is_err(), "{bad}");
        }
        assert!(check_instant("before", "2026-11-23T10:00:00Z").is_ok());
        assert!(check_instant("before", "0001-01-01T00:00:00+01:00").is_err());
        assert!(check_instant("before", "9999-12-31T23:00:00-02:00").is_err());
        assert!(check_instant("before", "soon").is_err());
        let instant = |s: &str| serde_json::from_str::<Instant>(&format!("\"{s}\"")).map(|t| t.0);
        assert!(instant("2026-11-23T10:00:00Z").is_ok());
        assert!(instant("+275760-09-13T00:00:00Z").is_err());
    }
}
