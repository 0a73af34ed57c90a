//! Fasting zones: what the body does after a given number of hours without food, each with a
//! short explanation and the study it rests on. The data lives in `data/fasting-zones.json`, so
//! the web app shows exactly the same text (its build imports the file) as the services.

use serde::{Deserialize, Serialize};

/// The raw file, as the web app's build reads it.
pub const ZONES_JSON: &str = include_str!("../data/fasting-zones.json");

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Zone {
    pub key: String,
    /// Hours since the start of the fast at which the zone begins; it lasts until the next one.
    pub from_hour: u32,
    pub title: String,
    pub summary: String,
    pub source: String,
    pub source_url: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ZoneFile {
    zones: Vec<Zone>,
}

/// Every zone, in order of `from_hour`, the first starting at hour 0.
pub fn zones() -> Vec<Zone> {
    serde_json::from_str::<ZoneFile>(ZONES_JSON)
        .map(|f| f.zones)
        .unwrap_or_default()
}

/// The zone a fast is in after `hours` hours.
pub fn zone_at(hours: f64) -> Option<Zone> {
    zones()
        .into_iter()
        .take_while(|z| f64::from(z.from_hour) <= hours)
        .last()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_parses_and_covers_every_hour_in_order() {
        let file: ZoneFile = serde_json::from_str(ZONES_JSON).expect("fasting-zones.json");
        let zones = file.zones;
        assert!(zones.len() >= 4);
        assert_eq!(zones[0].from_hour, 0);
        for pair in zones.windows(2) {
            assert!(pair[0].from_hour < pair[1].from_hour, "{pair:?}");
        }
        for z in &zones {
            assert!(!z.title.is_empty() && !z.summary.is_empty() && !z.source.is_empty());
            assert!(z.source_url.starts_with("https://doi.org/"), "{}", z.key);
            assert!(z.summary.chars().count() <= 240, "{} is not short", z.key);
        }
        let keys: std::collections::BTreeSet<_> = zones.iter().map(|z| &z.key).collect();
        assert_eq!(keys.len(), zones.len(), "keys are unique");
    }

    #[test]
    fn a_fast_is_in_the_last_zone_it_has_reached() {
        assert_eq!(zone_at(0.0).map(|z| z.key), Some("digestion".into()));
        assert_eq!(zone_at(11.9).map(|z| z.key), Some("post_absorptive".into()));
        assert_eq!(
            zone_at(16.0).map(|z| z.key),
            Some("metabolic_switch".into())
        );
        assert_eq!(zone_at(30.0).map(|z| z.key), Some("gluconeogenesis".into()));
        assert_eq!(zone_at(100.0).map(|z| z.key), Some("ketosis".into()));
        assert_eq!(zone_at(-1.0), None);
    }
}
