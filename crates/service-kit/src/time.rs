//! Timestamps on the wire: RFC 3339 in UTC with `Z` and millisecond precision, which is what the
//! JavaScript clients produce and parse (`Date.prototype.toJSON`).

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serializer;

pub fn format(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// `#[serde(serialize_with = "service_kit::time::serialize")]`
pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format(t))
}

/// `#[serde(serialize_with = "service_kit::time::serialize_opt")]`
pub fn serialize_opt<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_str(&format(t)),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn millis_and_z() {
        let t = DateTime::parse_from_rfc3339("2026-11-22T06:00:00.123456+01:00")
            .expect("valid")
            .with_timezone(&Utc);
        assert_eq!(format(&t), "2026-11-22T05:00:00.123Z");
    }
}
