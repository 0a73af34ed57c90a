//! Fasting protocols: `"F:E"` strings naming F fasting hours and E eating hours.

use std::fmt;
use std::str::FromStr;

/// The protocols the product offers, in the order a picker shows them.
pub const PROTOCOLS: [&str; 11] = [
    "12:12", "13:11", "14:10", "16:8", "18:6", "20:4", "23:1", "24:0", "36:0", "48:0", "72:0",
];

/// A known protocol. Only values from [`PROTOCOLS`] can be constructed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Protocol {
    fasting_hours: u8,
    eating_hours: u8,
}

/// On the wire a protocol is one of the [`PROTOCOLS`] strings.
impl utoipa::PartialSchema for Protocol {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .enum_values(Some(PROTOCOLS))
            .description(Some(
                "A fasting protocol `F:E`: F hours of fasting (the planned length of a fast), E of eating.",
            ))
            .examples(["16:8"])
            .into()
    }
}

impl utoipa::ToSchema for Protocol {}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown fasting protocol; expected one of {}", PROTOCOLS.join(", "))]
pub struct UnknownProtocol;

impl Protocol {
    /// Planned length of a fast in hours.
    pub fn fasting_hours(self) -> u8 {
        self.fasting_hours
    }

    pub fn eating_hours(self) -> u8 {
        self.eating_hours
    }

    /// Planned length of a fast.
    pub fn planned_duration(self) -> chrono::Duration {
        chrono::Duration::hours(i64::from(self.fasting_hours))
    }
}

impl FromStr for Protocol {
    type Err = UnknownProtocol;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if !PROTOCOLS.contains(&s) {
            return Err(UnknownProtocol);
        }
        let (f, e) = s.split_once(':').ok_or(UnknownProtocol)?;
        Ok(Self {
            fasting_hours: f.parse().map_err(|_| UnknownProtocol)?,
            eating_hours: e.parse().map_err(|_| UnknownProtocol)?,
        })
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.fasting_hours, self.eating_hours)
    }
}

impl serde::Serialize for Protocol {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Protocol {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        raw.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_protocol_round_trips_and_hours_add_up() {
        for p in PROTOCOLS {
            let parsed: Protocol = p.parse().expect("listed protocol parses");
            assert_eq!(parsed.to_string(), p);
            let total = parsed.fasting_hours() + parsed.eating_hours();
            assert!(total == 24 || parsed.eating_hours() == 0, "{p}");
        }
        assert_eq!(
            "16:8".parse::<Protocol>().map(Protocol::fasting_hours),
            Ok(16)
        );
    }

    #[test]
    fn rejects_anything_else() {
        for bad in [
            "", "16", "16:08", "15:9", " 16:8", "16:8 ", "-1:25", "72:00",
        ] {
            assert_eq!(bad.parse::<Protocol>(), Err(UnknownProtocol), "{bad:?}");
        }
    }
}
