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

/// A date of a query string (`?date=`, `?from=`): absent or empty is `None`, anything that is not
/// a [`Day`] is 400 `VALIDATION_ERROR` naming `field`.
pub fn query_day(field: &str, raw: Option<&str>) -> Result<Option<NaiveDate>, ApiError> {
    match raw {
        None | Some("") => Ok(None),
        Some(raw) => raw
            .parse::<NaiveDate>()
            .ok()
            .filter(|d| (MIN_DAY..=MAX_DAY).contains(d))
            .map(Some)
            .ok_or_else(|| invalid(field, "must be a date (YYYY-MM-DD)")),
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

/// The `Idempotency-Key` of a write, with the method and path it was sent to: a retry of the same
/// write under the same key answers the first result again (see [`crate::repo::idempotency`]).
#[derive(Debug, Clone)]
pub struct IdempotencyKey {
    pub key: String,
    /// `POST /me/water`: what the key was first used for must be what it is used for again.
    pub request: String,
}

/// Longest key accepted.
pub const MAX_IDEMPOTENCY_KEY: usize = 64;

/// The request's key, `None` without the header; 400 for a key that is empty, longer than
/// [`MAX_IDEMPOTENCY_KEY`] or not printable ASCII.
pub fn idempotency_key(req: &actix_web::HttpRequest) -> Result<Option<IdempotencyKey>, ApiError> {
    let mut values = req.headers().get_all("idempotency-key");
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(invalid("Idempotency-Key", "must be sent once"));
    }
    let key = value
        .to_str()
        .ok()
        .filter(|k| !k.is_empty() && k.len() <= MAX_IDEMPOTENCY_KEY)
        .filter(|k| k.bytes().all(|b| b.is_ascii_graphic()))
        .ok_or_else(|| {
            invalid(
                "Idempotency-Key",
                "must be 1 to 64 printable ASCII characters",
            )
        })?;
    Ok(Some(IdempotencyKey {
        key: key.to_owned(),
        request: format!("{} {}", req.method(), req.path()),
    }))
}

/// An optional [`IdempotencyKey`]: a write without the header is simply not remembered.
#[derive(Debug, Clone)]
pub struct MaybeIdempotencyKey(pub Option<IdempotencyKey>);

impl actix_web::FromRequest for MaybeIdempotencyKey {
    type Error = ApiError;
    type Future = std::future::Ready<Result<Self, ApiError>>;

    fn from_request(req: &actix_web::HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        std::future::ready(idempotency_key(req).map(Self))
    }
}

/// Largest file `POST /me/fast-events/import` reads.
pub const MAX_IMPORT_BYTES: usize = 1024 * 1024;

/// A `text/csv` body of at most [`MAX_IMPORT_BYTES`], as UTF-8 text without a byte-order mark
/// (which spreadsheets write) and without NUL.
#[derive(Debug)]
pub struct CsvBody(pub String);

impl actix_web::FromRequest for CsvBody {
    type Error = ApiError;
    type Future = service_kit::http::BodyFuture<Self, ApiError>;

    fn from_request(
        req: &actix_web::HttpRequest,
        payload: &mut actix_web::dev::Payload,
    ) -> Self::Future {
        let csv = req
            .headers()
            .get(actix_web::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("text/csv"));
        if !csv {
            return Box::pin(std::future::ready(Err(ApiError::UnsupportedMediaTypeOf(
                "text/csv",
            ))));
        }
        service_kit::http::from_body(req, payload, MAX_IMPORT_BYTES, |_, bytes| {
            let text =
                std::str::from_utf8(&bytes).map_err(|_| invalid("body", "must be UTF-8 text"))?;
            if text.contains('\0') {
                return Err(invalid("body", "must not contain the NUL character"));
            }
            Ok(CsvBody(text.trim_start_matches('\u{feff}').to_owned()))
        })
    }
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
