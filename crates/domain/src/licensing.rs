//! Licensing rules of the desktop app: plans with their features and daily quota, who has access
//! in which subscription state, the licence key format and the quota day.
//!
//! Decisions the specification leaves open, fixed here so that every caller agrees:
//! - Annual is a one-time purchase with Pro's quota and features, valid 365 days from purchase.
//! - Access per subscription state follows the payment provider's meaning of each state:
//!   `active`, `on_trial` and `past_due` (the provider is still retrying the payment) keep access;
//!   `cancelled` keeps it until the end of the paid period (`ends_at`); `paused`, `expired`,
//!   `unpaid` and `refunded` lose it. A licence disabled by an operator or a refund has no access
//!   whatever its state, and any licence with an expiry in the past has none either.
//! - The quota day is the Europe/Rome calendar day; it resets at Rome midnight.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, NaiveDate, Utc};

use crate::rome;

/// Installations one licence may be activated on at the same time.
pub const ACTIVATION_LIMIT: u32 = 3;

/// How long an Annual licence lasts from its purchase.
pub const ANNUAL_VALIDITY: chrono::Duration = chrono::Duration::days(365);

/// Every feature the desktop app gates, in the order the app lists them.
pub const ALL_FEATURES: [&str; 4] = ["audio", "video", "image", "export"];

/// Basic unlocks audio only.
const BASIC_FEATURES: [&str; 1] = ["audio"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Plan {
    Basic,
    Pro,
    Premium,
    Annual,
}

impl Plan {
    pub const ALL: [Plan; 4] = [Plan::Basic, Plan::Pro, Plan::Premium, Plan::Annual];

    pub fn as_str(self) -> &'static str {
        match self {
            Plan::Basic => "basic",
            Plan::Pro => "pro",
            Plan::Premium => "premium",
            Plan::Annual => "annual",
        }
    }

    /// Units that may be consumed per Rome day.
    pub fn daily_quota(self) -> u32 {
        match self {
            Plan::Basic => 10,
            Plan::Pro | Plan::Annual => 30,
            Plan::Premium => 150,
        }
    }

    pub fn features(self) -> &'static [&'static str] {
        match self {
            Plan::Basic => &BASIC_FEATURES,
            Plan::Pro | Plan::Premium | Plan::Annual => &ALL_FEATURES,
        }
    }

    /// When a licence of this plan bought at `purchased_at` stops being valid on its own; `None`
    /// for subscriptions, whose end is announced by the payment provider.
    pub fn expiry_from(self, purchased_at: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            Plan::Annual => Some(purchased_at + ANNUAL_VALIDITY),
            Plan::Basic | Plan::Pro | Plan::Premium => None,
        }
    }

    /// Whether the plan is a one-time purchase rather than a monthly subscription.
    pub fn is_one_time(self) -> bool {
        matches!(self, Plan::Annual)
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown plan; expected basic, pro, premium or annual")]
pub struct UnknownPlan;

impl FromStr for Plan {
    type Err = UnknownPlan;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Plan::ALL
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or(UnknownPlan)
    }
}

/// The state of the subscription (or one-time purchase) behind a licence, named as the payment
/// provider names it, plus `refunded`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    Active,
    OnTrial,
    PastDue,
    Paused,
    Cancelled,
    Expired,
    Unpaid,
    Refunded,
}

impl Status {
    pub const ALL: [Status; 8] = [
        Status::Active,
        Status::OnTrial,
        Status::PastDue,
        Status::Paused,
        Status::Cancelled,
        Status::Expired,
        Status::Unpaid,
        Status::Refunded,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::OnTrial => "on_trial",
            Status::PastDue => "past_due",
            Status::Paused => "paused",
            Status::Cancelled => "cancelled",
            Status::Expired => "expired",
            Status::Unpaid => "unpaid",
            Status::Refunded => "refunded",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown subscription status")]
pub struct UnknownStatus;

impl FromStr for Status {
    type Err = UnknownStatus;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Status::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or(UnknownStatus)
    }
}

/// What decides whether a licence grants access right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccessFacts {
    pub status: Status,
    /// The end of an Annual licence, or the provider's `ends_at` of a cancelled subscription.
    pub expires_at: Option<DateTime<Utc>>,
    pub disabled: bool,
}

/// Whether a licence in this state may be activated, validated and used at `now`.
pub fn has_access(facts: AccessFacts, now: DateTime<Utc>) -> bool {
    if facts.disabled || facts.expires_at.is_some_and(|end| end <= now) {
        return false;
    }
    match facts.status {
        Status::Active | Status::OnTrial | Status::PastDue => true,
        // A cancelled subscription runs to the end of the period already paid; without a known
        // end there is nothing paid to honour.
        Status::Cancelled => facts.expires_at.is_some(),
        Status::Paused | Status::Expired | Status::Unpaid | Status::Refunded => false,
    }
}

/// The quota day an instant belongs to: the Rome calendar date.
pub fn quota_day(now: DateTime<Utc>) -> NaiveDate {
    rome::local_date(now)
}

/// When the quota of `now`'s day resets: the next Rome midnight.
pub fn quota_resets_at(now: DateTime<Utc>) -> DateTime<Utc> {
    rome::next_midnight(now)
}

/// Units left of `limit` after `used`.
pub fn remaining(limit: u32, used: u32) -> u32 {
    limit.saturating_sub(used)
}

/// Licence keys are five groups of five characters from an alphabet without look-alikes
/// (no 0/O, 1/I/L, U), so that a key read aloud or typed from a printout survives.
const KEY_CHARS: &[u8; 30] = b"23456789ABCDEFGHJKMNPQRSTVWXYZ";
const KEY_GROUPS: usize = 5;
const KEY_GROUP_LEN: usize = 5;
/// Random bytes a key is built from: one per character.
pub const KEY_RANDOM_BYTES: usize = KEY_GROUPS * KEY_GROUP_LEN;

/// Formats random bytes as a licence key, `XXXXX-XXXXX-XXXXX-XXXXX-XXXXX`: about 122 bits of
/// randomness. Each byte is reduced modulo the alphabet; the resulting bias (some characters
/// 9 in 256, others 8 in 256) costs a fraction of a bit and keeps the code obvious.
pub fn format_key(random: &[u8; KEY_RANDOM_BYTES]) -> String {
    let mut out = String::with_capacity(KEY_GROUPS * (KEY_GROUP_LEN + 1));
    for (i, byte) in random.iter().enumerate() {
        if i > 0 && i % KEY_GROUP_LEN == 0 {
            out.push('-');
        }
        out.push(char::from(KEY_CHARS[usize::from(*byte) % KEY_CHARS.len()]));
    }
    out
}

/// A key as a customer may type it: surrounding blanks dropped, letters upper-cased. Anything
/// else is kept, so that a wrong key stays wrong.
pub fn normalise_key(raw: &str) -> String {
    raw.trim().to_ascii_uppercase()
}

/// Whether `key` has the shape [`format_key`] produces (after [`normalise_key`]).
pub fn is_well_formed_key(key: &str) -> bool {
    let groups: Vec<&str> = key.split('-').collect();
    groups.len() == KEY_GROUPS
        && groups
            .iter()
            .all(|g| g.len() == KEY_GROUP_LEN && g.bytes().all(|b| KEY_CHARS.contains(&b)))
}

/// A licence key as a client sent it, normalised ([`normalise_key`]) and bounded: 1 to 64
/// characters. The shape is not checked beyond that, so that a mistyped key is answered as an
/// unknown licence (404) rather than as bad input.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LicenceKey(String);

impl LicenceKey {
    pub const MAX_LEN: usize = 64;

    pub fn parse(raw: &str) -> Result<Self, InvalidField> {
        let key = normalise_key(raw);
        if key.is_empty() || key.len() > Self::MAX_LEN || key.chars().any(char::is_control) {
            return Err(InvalidField("must be a licence key of 1 to 64 characters"));
        }
        Ok(Self(key))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The id a desktop installation chose for itself: 1 to 191 printable characters (191 keeps the
/// unique index of MariaDB's utf8mb4 columns within its key length), surrounding blanks dropped.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct InstanceId(String);

impl InstanceId {
    pub const MAX_LEN: usize = 191;

    pub fn parse(raw: &str) -> Result<Self, InvalidField> {
        let id = raw.trim();
        if id.is_empty() || id.len() > Self::MAX_LEN || id.chars().any(char::is_control) {
            return Err(InvalidField("must be 1 to 191 printable characters"));
        }
        Ok(Self(id.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for InstanceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a client's value was refused, as the rule it broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidField(pub &'static str);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::utc;

    #[test]
    fn plan_table() {
        assert_eq!(Plan::Basic.daily_quota(), 10);
        assert_eq!(Plan::Pro.daily_quota(), 30);
        assert_eq!(Plan::Premium.daily_quota(), 150);
        assert_eq!(Plan::Annual.daily_quota(), Plan::Pro.daily_quota());
        assert_eq!(Plan::Basic.features(), ["audio"]);
        assert_eq!(Plan::Pro.features(), ALL_FEATURES);
        assert_eq!(Plan::Premium.features(), ALL_FEATURES);
        assert_eq!(Plan::Annual.features(), Plan::Pro.features());
        assert!(Plan::Annual.is_one_time());
        assert!(!Plan::Premium.is_one_time());
    }

    #[test]
    fn plan_names_round_trip() {
        for p in Plan::ALL {
            assert_eq!(p.as_str().parse::<Plan>(), Ok(p));
        }
        assert_eq!(" PRO ".parse::<Plan>(), Ok(Plan::Pro));
        assert_eq!("gold".parse::<Plan>(), Err(UnknownPlan));
    }

    #[test]
    fn status_names_round_trip() {
        for s in Status::ALL {
            assert_eq!(s.as_str().parse::<Status>(), Ok(s));
        }
        assert_eq!("Active".parse::<Status>(), Err(UnknownStatus));
    }

    #[test]
    fn annual_lasts_365_days_subscriptions_do_not_expire_on_their_own() {
        let bought = utc("2026-02-28T10:00:00Z");
        assert_eq!(
            Plan::Annual.expiry_from(bought),
            Some(utc("2027-02-28T10:00:00Z"))
        );
        assert_eq!(Plan::Basic.expiry_from(bought), None);
    }

    #[test]
    fn access_per_status() {
        let now = utc("2026-06-01T12:00:00Z");
        let facts = |status, expires_at, disabled| AccessFacts {
            status,
            expires_at,
            disabled,
        };
        for s in [Status::Active, Status::OnTrial, Status::PastDue] {
            assert!(has_access(facts(s, None, false), now), "{s}");
            assert!(!has_access(facts(s, None, true), now), "{s} disabled");
        }
        for s in [
            Status::Paused,
            Status::Expired,
            Status::Unpaid,
            Status::Refunded,
        ] {
            assert!(!has_access(facts(s, None, false), now), "{s}");
        }
        let later = Some(utc("2026-06-01T12:00:01Z"));
        let earlier = Some(utc("2026-06-01T12:00:00Z"));
        assert!(has_access(facts(Status::Cancelled, later, false), now));
        assert!(!has_access(facts(Status::Cancelled, earlier, false), now));
        assert!(!has_access(facts(Status::Cancelled, None, false), now));
        // An Annual licence past its year.
        assert!(!has_access(facts(Status::Active, earlier, false), now));
    }

    #[test]
    fn quota_day_and_reset_follow_rome_across_dst() {
        // 23:30 UTC on 28 March is 00:30 on 29 March in Rome (still CET).
        let t = utc("2026-03-28T23:30:00Z");
        assert_eq!(quota_day(t).to_string(), "2026-03-29");
        // The spring day is 23 hours long: it ends at 22:00 UTC.
        assert_eq!(quota_resets_at(t), utc("2026-03-29T22:00:00Z"));
        let t = utc("2026-10-25T22:59:59Z");
        assert_eq!(quota_day(t).to_string(), "2026-10-25");
        assert_eq!(quota_resets_at(t), utc("2026-10-25T23:00:00Z"));
        assert_eq!(remaining(10, 4), 6);
        assert_eq!(remaining(10, 12), 0);
    }

    #[test]
    fn keys_have_the_documented_shape() {
        let mut bytes = [0u8; KEY_RANDOM_BYTES];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = u8::try_from(i * 37 % 256).unwrap_or(0);
        }
        let key = format_key(&bytes);
        assert_eq!(key.len(), 29);
        assert!(is_well_formed_key(&key), "{key}");
        assert_eq!(normalise_key(&format!("  {}\n", key.to_lowercase())), key);
        assert!(!is_well_formed_key("AAAAA-AAAAA-AAAAA-AAAAA"));
        assert!(!is_well_formed_key("AAAAA-AAAAA-AAAAA-AAAAA-AAAA0"));
        assert!(!KEY_CHARS.contains(&b'O') && !KEY_CHARS.contains(&b'I'));
        assert_eq!(
            format_key(&[255; KEY_RANDOM_BYTES]),
            "HHHHH-HHHHH-HHHHH-HHHHH-HHHHH"
        );
    }

    #[test]
    fn keys_and_instance_ids_are_bounded() {
        assert_eq!(
            LicenceKey::parse(" abcde-fghjk ").map(|k| k.as_str().to_owned()),
            Ok("ABCDE-FGHJK".to_owned())
        );
        assert!(LicenceKey::parse("  ").is_err());
        assert!(LicenceKey::parse(&"A".repeat(65)).is_err());
        assert!(LicenceKey::parse("A\u{7}B").is_err());
        assert_eq!(
            InstanceId::parse(" mac-1 ").map(InstanceId::into_string),
            Ok("mac-1".to_owned())
        );
        assert!(InstanceId::parse("").is_err());
        assert!(InstanceId::parse(&"i".repeat(192)).is_err());
        assert!(InstanceId::parse("a\nb").is_err());
    }
}
