//! The time the service acts on. Production reads the system clock; tests hand the application a
//! [`ManualClock`] to put it on a chosen instant (the Rome midnight of a DST change, a token's
//! expiry) without waiting for it.

use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, Utc};

pub trait Clock: Send + Sync + std::fmt::Debug + 'static {
    fn now(&self) -> DateTime<Utc>;
}

pub type SharedClock = Arc<dyn Clock>;

#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that stands still until it is set or advanced.
#[derive(Debug)]
pub struct ManualClock(Mutex<DateTime<Utc>>);

impl ManualClock {
    pub fn new(at: DateTime<Utc>) -> Arc<Self> {
        Arc::new(Self(Mutex::new(at)))
    }

    pub fn set(&self, at: DateTime<Utc>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = at;
    }

    pub fn advance(&self, by: chrono::Duration) {
        let mut now = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        *now += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Instants as the contract writes them: RFC 3339, UTC, whole seconds, `Z`.
pub fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A naive UTC value as MariaDB's `DATETIME(6)` columns hold it.
pub fn naive(t: DateTime<Utc>) -> chrono::NaiveDateTime {
    t.naive_utc()
}

/// The UTC instant of a `DATETIME(6)` value.
pub fn utc(t: chrono::NaiveDateTime) -> DateTime<Utc> {
    t.and_utc()
}
