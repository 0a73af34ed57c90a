//! Push hosts that stop answering are left alone for a while.
//!
//! A push endpoint can be any host its registration was allowed on, and a host that accepts
//! connections and never answers holds each send to it for the whole time-out. Whoever holds a
//! domain can point any number of subdomains at one such server, so hosts are judged by their
//! registrable domain ([`push::registrable_domain`]), not by name. After [`FAILURES`] sends in a
//! row got no answer (time-out, connection refused or reset, TLS failure), the domain's messages
//! are deferred for [`COOL_DOWN`] without being sent or counted as attempts of their devices.
//! Then one message probes it: an answer (any status) closes the breaker, none opens it again.
//! A tarpit farm thus costs a few time-outs per cool-down, not one per message.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use push::Reached;

/// Sends in a row without an answer that open a domain's breaker.
pub const FAILURES: u32 = 3;
/// How long an open breaker defers its domain's messages.
pub const COOL_DOWN: Duration = Duration::from_secs(5 * 60);
/// How long a message waits while its domain's probe is in flight: longer than any send.
pub const PROBE_WAIT: Duration = Duration::from_secs(30);
/// Domains remembered at most; past that a new domain is not tracked until some close.
const MAX_DOMAINS: usize = 10_000;

/// The breakers of one process, one per registrable domain.
#[derive(Debug)]
pub struct Breakers {
    failures: u32,
    cool_down: Duration,
    domains: Mutex<HashMap<String, State>>,
}

#[derive(Debug, Default)]
struct State {
    /// Sends in a row that got no answer.
    failures: u32,
    open_until: Option<Instant>,
    /// A probe is in flight.
    probing: bool,
}

/// Whether a message may be sent now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Send it; `probe` when it tests a domain whose cool-down is over.
    Send { probe: bool },
    /// Try again after this long.
    Defer(Duration),
}

impl Default for Breakers {
    fn default() -> Self {
        Self::new(FAILURES, COOL_DOWN)
    }
}

impl Breakers {
    pub fn new(failures: u32, cool_down: Duration) -> Self {
        Self {
            failures: failures.max(1),
            cool_down,
            domains: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, State>> {
        self.domains.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a message to `domain` may be sent now.
    pub fn admit(&self, domain: &str) -> Admit {
        let mut domains = self.lock();
        let Some(state) = domains.get_mut(domain) else {
            return Admit::Send { probe: false };
        };
        match state.open_until {
            None => Admit::Send { probe: false },
            Some(until) => {
                let now = Instant::now();
                if now < until {
                    Admit::Defer(until - now)
                } else if state.probing {
                    Admit::Defer(PROBE_WAIT)
                } else {
                    state.probing = true;
                    Admit::Send { probe: true }
                }
            }
        }
    }

    /// Records how a send to `domain` ended.
    pub fn record(&self, domain: &str, reached: Reached, probe: bool) {
        let mut domains = self.lock();
        match reached {
            Reached::Answered => {
                domains.remove(domain);
            }
            Reached::NotSent => {
                if probe && let Some(state) = domains.get_mut(domain) {
                    state.probing = false;
                }
            }
            Reached::NoAnswer => {
                if !domains.contains_key(domain) && domains.len() >= MAX_DOMAINS {
                    return;
                }
                let state = domains.entry(domain.to_owned()).or_default();
                state.failures += 1;
                if probe {
                    state.probing = false;
                }
                if probe || state.failures >= self.failures {
                    state.open_until = Some(Instant::now() + self.cool_down);
                    state.failures = 0;
                    tracing::warn!(
                        cool_down_s = self.cool_down.as_secs(),
                        "a push domain keeps not answering; its messages wait"
                    );
                }
            }
        }
    }

    /// Whether `domain`'s messages are being deferred.
    pub fn is_open(&self, domain: &str) -> bool {
        self.lock()
            .get(domain)
            .is_some_and(|s| s.open_until.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_after_failures_in_a_row_and_an_answer_resets() {
        let b = Breakers::new(3, Duration::from_secs(60));
        b.record("example.com", Reached::NoAnswer, false);
        b.record("example.com", Reached::NoAnswer, false);
        b.record("example.com", Reached::Answered, false);
        b.record("example.com", Reached::NoAnswer, false);
        b.record("example.com", Reached::NoAnswer, false);
        assert_eq!(b.admit("example.com"), Admit::Send { probe: false });
        b.record("example.com", Reached::NoAnswer, false);
        assert!(matches!(b.admit("example.com"), Admit::Defer(d) if d > Duration::from_secs(59)));
        assert_eq!(b.admit("other.example"), Admit::Send { probe: false });
    }

    #[test]
    fn after_the_cool_down_one_probe_decides() {
        let b = Breakers::new(1, Duration::from_millis(10));
        b.record("example.com", Reached::NoAnswer, false);
        assert!(matches!(b.admit("example.com"), Admit::Defer(_)));
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(b.admit("example.com"), Admit::Send { probe: true });
        assert_eq!(b.admit("example.com"), Admit::Defer(PROBE_WAIT));
        b.record("example.com", Reached::NoAnswer, true);
        assert!(
            matches!(b.admit("example.com"), Admit::Defer(d) if d <= Duration::from_millis(10))
        );
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(b.admit("example.com"), Admit::Send { probe: true });
        b.record("example.com", Reached::Answered, true);
        assert_eq!(b.admit("example.com"), Admit::Send { probe: false });
        assert!(!b.is_open("example.com"));
    }
}
