//! The languages the product speaks: Italian (the default) and English.

use std::fmt;
use std::str::FromStr;

#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Locale {
    #[default]
    It,
    En,
}

impl Locale {
    pub const ALL: [Locale; 2] = [Locale::It, Locale::En];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::It => "it",
            Self::En => "en",
        }
    }

    /// The first of the product's languages in an `Accept-Language` header, by preference
    /// (q-values, then order), matching primary subtags (`en-GB` is English); Italian when the
    /// header names neither, is absent or cannot be read.
    pub fn from_accept_language(header: Option<&str>) -> Self {
        let Some(header) = header else {
            return Self::default();
        };
        let mut best: Option<(u16, usize, Locale)> = None;
        for (position, part) in header.split(',').enumerate().take(32) {
            let mut pieces = part.split(';');
            let tag = pieces.next().unwrap_or("").trim();
            let primary = tag.split('-').next().unwrap_or("");
            let Ok(locale) = primary.to_ascii_lowercase().parse::<Locale>() else {
                continue;
            };
            let mut quality: u16 = 1000;
            for param in pieces {
                let param = param.trim();
                // Parameter names are case-insensitive (RFC 9110).
                if let Some(q) = param
                    .strip_prefix("q=")
                    .or_else(|| param.strip_prefix("Q="))
                {
                    quality = parse_quality(q).unwrap_or(0);
                }
            }
            if quality == 0 {
                continue;
            }
            // Higher quality wins; at equal quality the earlier tag.
            if best.is_none_or(|(q, p, _)| quality > q || (quality == q && position < p)) {
                best = Some((quality, position, locale));
            }
        }
        best.map_or_else(Self::default, |(_, _, l)| l)
    }
}

/// A q-value (`0` to `1` with up to three decimals) in thousandths.
fn parse_quality(raw: &str) -> Option<u16> {
    let value: f64 = raw.trim().parse().ok()?;
    if !(0.0..=1.0).contains(&value) {
        return None;
    }
    Some((value * 1000.0).round() as u16)
}

/// Neither `it` nor `en`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownLocale;

impl fmt::Display for UnknownLocale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("must be \"it\" or \"en\"")
    }
}

impl std::error::Error for UnknownLocale {}

impl FromStr for Locale {
    type Err = UnknownLocale;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "it" => Ok(Self::It),
            "en" => Ok(Self::En),
            _ => Err(UnknownLocale),
        }
    }
}

impl fmt::Display for Locale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Locale;

    #[test]
    fn the_first_known_language_by_preference_wins() {
        assert_eq!(
            Locale::from_accept_language(Some("en-US,en;q=0.9")),
            Locale::En
        );
        assert_eq!(
            Locale::from_accept_language(Some("fr, it;q=0.5")),
            Locale::It
        );
        assert_eq!(
            Locale::from_accept_language(Some("fr, it;q=0.5, en;q=0.8")),
            Locale::En
        );
        assert_eq!(Locale::from_accept_language(Some("de")), Locale::It);
        assert_eq!(Locale::from_accept_language(Some("en;q=0")), Locale::It);
        assert_eq!(Locale::from_accept_language(Some("EN-gb")), Locale::En);
        assert_eq!(Locale::from_accept_language(None), Locale::It);
        assert_eq!(
            Locale::from_accept_language(Some(";;,,q=,en;q=abc")),
            Locale::It
        );
    }

    #[test]
    fn quality_orders_before_position() {
        let pick = |h: &str| Locale::from_accept_language(Some(h));
        assert_eq!(pick("en-US;q=0.9, it"), Locale::It);
        assert_eq!(pick("it;q=0.3, de, en-GB;q=0.4"), Locale::En);
        assert_eq!(
            pick("en;q=0.5, it;q=0.5"),
            Locale::En,
            "a tie goes to the first"
        );
        assert_eq!(pick("it-CH;Q=0.2, en;q=0.1"), Locale::It);
        assert_eq!(pick(" en-AU ; q=1.000 , it"), Locale::En);
    }

    #[test]
    fn what_names_neither_language_is_italian() {
        let pick = |h: &str| Locale::from_accept_language(Some(h));
        for header in [
            "",
            "*",
            "fr-FR, de;q=0.9",
            "english",
            "en_US",
            "en;q=2",
            "en;q=-1",
            "en;q=0.000",
            "\u{0}",
            "-en, ,,,",
        ] {
            assert_eq!(pick(header), Locale::It, "{header:?}");
        }
        let long = format!("{}en", "x,".repeat(5000));
        assert_eq!(pick(&long), Locale::It, "only the first tags are read");
    }

    #[test]
    fn codes_round_trip() {
        for l in Locale::ALL {
            assert_eq!(l.as_str().parse::<Locale>(), Ok(l));
            assert_eq!(l.to_string(), l.as_str());
        }
        assert_eq!(Locale::default(), Locale::It);
        assert!("EN".parse::<Locale>().is_err());
        assert!("".parse::<Locale>().is_err());
    }
}
