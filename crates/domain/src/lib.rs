//! Business rules of both products as pure functions: nothing here reads a clock, a database or
//! the network, so every rule is tested directly and reused by every service.
//!
//! Time is always passed in. "Today", days, weeks and months are those of the product time zone,
//! Europe/Rome, whose daylight-saving changes make some days 23 or 25 hours long.

pub mod body;
pub mod email;
pub mod fasting;
pub mod licensing;
pub mod locale;
pub mod meals;
pub mod notifications;
pub mod protocol;
pub mod recipes;
pub mod rome;
pub mod stats;
pub mod zones;

/// What the rules' unit tests share.
#[cfg(test)]
mod test_support {
    use chrono::{DateTime, Utc};

    /// An instant written as RFC 3339, as the tests state them.
    pub fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s)
            .expect("valid RFC 3339")
            .with_timezone(&Utc)
    }
}
