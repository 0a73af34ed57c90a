//! Per-client-address rate limits of activate, validate, deactivate and the webhook
//! (`LICENCE_RATE_LIMIT_PER_MINUTE`, `WEBHOOK_RATE_LIMIT_PER_MINUTE`), counted in MariaDB so
//! that replicas agree. The address is the peer's, or, behind a proxy listed in
//! `TRUSTED_PROXIES`, the first address of `X-Forwarded-For` from the right that is not a proxy;
//! an IPv6 address counts as its /64.
//!
//! Each replica takes an address's requests from the shared counter in blocks ([`Permits`]) and
//! spends them in memory: an address's first request in a window takes one, and each time the
//! replica comes back for the same address it asks for twice as many as before, up to
//! [`MAX_BLOCK`], while the database hands out at most an eighth of what is left of the limit
//! at a time. One request of an address asks for a block at a time; requests that find none in
//! hand meanwhile ask for one each, and one that the database refuses still goes through if a
//! block brought in a request of the window in the meantime. A client that asks once in a while
//! costs one statement per request, as with a plain counter; a busy client or a flood costs one
//! per block, and once the window is spent the replica refuses it without the database until
//! the window ends. The limit holds across
//! replicas exactly as an upper bound: no window hands out more than the limit. While the shared
//! table is full of live counters (clients of very many addresses filled it), a new address is
//! counted by the replica alone against the same limit, so it is served and still limited (per
//! replica, until a counter is free); only when the replica's own table of such addresses is
//! full too is it refused with 503. A client that
//! spreads its last requests of a window over several replicas can be refused by one while
//! another still holds a few of its requests (the blocks near the limit are single requests).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::HttpRequest;
use rand::Rng;

use super::AppState;
use crate::error::ApiError;
use crate::repo::Db;
use crate::repo::rate_limit::{self, Take};

/// The counting window of every limit.
pub const WINDOW_SECS: u32 = 60;

/// The most requests of one address a replica asks for at once.
pub const MAX_BLOCK: u32 = 64;

/// How many addresses a replica holds requests for; beyond, new addresses take single requests
/// and hold nothing, so that a flood from many addresses cannot grow the replica's memory.
const CAPACITY: usize = 16_384;

/// Held requests are given up this long before the database's window ends, so that none is
/// spent after the window it was counted in, whatever the round trip took.
const MARGIN: Duration = Duration::from_millis(100);

#[derive(Debug, Clone, Copy)]
pub enum Bucket {
    /// activate, validate, deactivate together: what a licence-key guesser would use. The seat
    /// page and its release button count here too.
    Licence,
    Webhook,
    /// Requests for seat links by e-mail: each may send a mail.
    SeatLink,
}

/// Requests for seat links per minute and client address.
pub const SEAT_LINK_PER_MINUTE: u32 = 10;

/// Counts the request; 429 `RATE_LIMITED` with `Retry-After` beyond the limit.
pub async fn check(
    state: &AppState,
    db: &Db,
    req: &HttpRequest,
    bucket: Bucket,
) -> Result<(), ApiError> {
    Limit::of(state, req, bucket).count(db).await
}

/// What this replica alone could say of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Local {
    /// One of the requests the replica held: counted already.
    Spent,
    /// The window is spent; it ends in this long.
    Refused(Duration),
    /// Ask the shared counter for this many; more than one only for the one request of an
    /// address that asks for a block at a time.
    Ask(u32),
}

/// How long a block's asker may take before another request may ask for a block in its place
/// (its statement failed, or it never came back).
const ASKING_FOR: Duration = Duration::from_secs(5);

#[derive(Debug)]
struct Held {
    /// Requests taken and not yet spent.
    left: u32,
    /// When they lapse (or the refusal ends).
    until: Instant,
    refused: bool,
    /// How many to ask for next time.
    want: u32,
    /// Since when a request of this address has been asking for a block. Only one asks at a
    /// time: requests that arrive meanwhile ask for one each, so that a burst that arrives all
    /// at once does not take a block per request and leave most of them unspent.
    asking: Option<Instant>,
}

#[derive(Debug, Default)]
struct Book {
    held: HashMap<String, Held>,
    pruned: Option<Instant>,
}

/// How many addresses a replica counts by itself while the shared table is full.
const OVERFLOW_CAPACITY: usize = 65_536;

/// The requests this replica holds of each address's current window.
#[derive(Debug, Default)]
pub struct Permits {
    book: Mutex<Book>,
    /// Addresses counted here alone (window end, requests) because the shared table was full.
    overflow: Mutex<HashMap<String, (Instant, u32)>>,
}

impl Permits {
    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        // The book holds no invariant a panicking holder could break half-way.
        self.book
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts a request of `key` in this replica alone, at most `max` a window: the shared
    /// table is full of live counters. `Err` with the time left once the window is spent; `None`
    /// when this replica's own table is full of live windows too.
    fn count_alone(&self, key: &str, max: u32, now: Instant) -> Option<Result<(), Duration>> {
        let mut counts = self
            .overflow
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !counts.contains_key(key) && counts.len() >= OVERFLOW_CAPACITY {
            counts.retain(|_, (until, _)| now < *until);
            if counts.len() >= OVERFLOW_CAPACITY {
                return None;
            }
        }
        let window = Duration::from_secs(u64::from(WINDOW_SECS));
        let (until, hits) = counts.entry(key.to_owned()).or_insert((now + window, 0));
        if now >= *until {
            *until = now + window;
            *hits = 0;
        }
        if *hits >= max {
            return Some(Err(*until - now));
        }
        *hits += 1;
        Some(Ok(()))
    }

    fn spend(&self, key: &str, now: Instant) -> Local {
        let mut book = self.book();
        let Some(held) = book.held.get_mut(key) else {
            return Local::Ask(1);
        };
        let live = now < held.until;
        if live && held.left > 0 {
            held.left -= 1;
            return Local::Spent;
        }
        if live && held.refused {
            return Local::Refused(held.until - now);
        }
        let someone_asks = held
            .asking
            .is_some_and(|since| now.saturating_duration_since(since) < ASKING_FOR);
        if someone_asks {
            return Local::Ask(1);
        }
        held.asking = Some(now);
        Local::Ask(held.want)
    }

    /// Keeps what the shared counter answered to a request that asked for `asked`: the
    /// requests granted beyond the one the request spends, or the refusal. Whether the request
    /// is let through: a refused one still is when the replica holds a request of the window
    /// that another request's block brought in meanwhile.
    fn record(&self, key: &str, asked: u32, take: &Take, received: Instant) -> bool {
        let (left, until, refused) = match *take {
            Take::Granted { requests, left } => (
                requests.saturating_sub(1),
                received + left.saturating_sub(MARGIN),
                false,
            ),
            Take::Refused { left } => (0, received + left, true),
            Take::Full => return false,
        };
        let want = asked.saturating_mul(2).clamp(1, MAX_BLOCK);
        let mut book = self.book();
        if !book.held.contains_key(key) && book.held.len() >= CAPACITY {
            let recently = book
                .pruned
                .is_some_and(|at| received.saturating_duration_since(at) < Duration::from_secs(1));
            if recently {
                return !refused;
            }
            book.held.retain(|_, h| h.until > received);
            book.pruned = Some(received);
            if book.held.len() >= CAPACITY {
                return !refused;
            }
        }
        match book.held.get_mut(key) {
            Some(held) => {
                if asked > 1 {
                    held.asking = None;
                }
                let live = held.until > received && !held.refused;
                if refused && live && held.left > 0 {
                    held.left -= 1;
                    return true;
                }
                held.want = held.want.max(want);
                if live && !refused {
                    // Still live, so of the same window as the answer: what it holds adds up.
                    held.left = held.left.saturating_add(left);
                    held.until = held.until.min(until);
                } else {
                    held.left = left;
                    held.until = until;
                    held.refused = refused;
                }
            }
            None => {
                book.held.insert(
                    key.to_owned(),
                    Held {
                        left,
                        until,
                        refused,
                        want,
                        asking: None,
                    },
                );
            }
        }
        !refused
    }
}

/// One request's count in its bucket, settled before the handler reads its request, so that a
/// refusal of the request comes after the count.
#[derive(Debug)]
pub struct Limit {
    name: &'static str,
    key: String,
    max: u32,
    prune: bool,
    local: Local,
    permits: Arc<Permits>,
}

impl Limit {
    pub fn of(state: &AppState, req: &HttpRequest, bucket: Bucket) -> Self {
        // An IPv6 client counts as its /64: one host holds billions of addresses.
        let ip = client_ip(req, &state.settings.trusted_proxies)
            .map_or_else(|| "unknown".to_owned(), service_kit::http::client_network);
        let (name, max) = match bucket {
            Bucket::Licence => ("licence", state.settings.licence_rate_limit),
            Bucket::Webhook => ("webhook", state.settings.webhook_rate_limit),
            Bucket::SeatLink => ("seat-link", SEAT_LINK_PER_MINUTE),
        };
        let key = format!("{name}:{ip}");
        let local = state.permits.spend(&key, Instant::now());
        Self {
            name,
            key,
            max,
            prune: rand::rng().random_ratio(1, 1000),
            local,
            permits: Arc::clone(&state.permits),
        }
    }

    /// The answer when this replica could give it alone, without the database.
    pub fn settled(&self) -> Option<Result<(), ApiError>> {
        match self.local {
            Local::Spent => Some(Ok(())),
            Local::Refused(left) => Some(Err(self.refused(left))),
            Local::Ask(_) => None,
        }
    }

    fn refused(&self, left: Duration) -> ApiError {
        tracing::warn!(bucket = self.name, "rate limit reached");
        // Rounded up: a client waiting the advertised time finds the window over.
        let retry_after_secs = left.as_millis().div_ceil(1000).max(1);
        ApiError::RateLimited {
            retry_after_secs: u64::try_from(retry_after_secs).unwrap_or(u64::MAX),
        }
    }

    /// Counts the request; 429 `RATE_LIMITED` with `Retry-After` beyond the limit.
    pub async fn count(self, db: &Db) -> Result<(), ApiError> {
        let Local::Ask(want) = self.local else {
            return self.settled().unwrap_or(Ok(()));
        };
        if self.prune {
            rate_limit::prune(db).await?;
        }
        let take = rate_limit::take(db, &self.key, self.max, WINDOW_SECS, want).await?;
        self.answer(want, take)
    }

    fn answer(&self, want: u32, take: Take) -> Result<(), ApiError> {
        let through = self.permits.record(&self.key, want, &take, Instant::now());
        match take {
            Take::Granted { .. } => Ok(()),
            Take::Refused { .. } if through => Ok(()),
            Take::Refused { left } => Err(self.refused(left)),
            // Never let through uncounted (counting is what stops a guesser), and never refuse
            // a new address only because others filled the table: this replica counts it alone
            // until a shared counter is free. The limit then holds per replica.
            Take::Full => match self
                .permits
                .count_alone(&self.key, self.max, Instant::now())
            {
                Some(Ok(())) => Ok(()),
                Some(Err(left)) => Err(self.refused(left)),
                None => Err(ApiError::DatabaseUnavailable(
                    "every rate-limit counter is in use".to_owned(),
                )),
            },
        }
    }
}

/// The client's address (see the module documentation), as every service reads it.
pub use service_kit::http::client_ip;

#[cfg(test)]
mod tests {
    use super::*;

    fn granted(requests: u32, secs: u64) -> Take {
        Take::Granted {
            requests,
            left: Duration::from_secs(secs),
        }
    }

    fn refused(secs: u64) -> Take {
        Take::Refused {
            left: Duration::from_secs(secs),
        }
    }

    #[test]
    fn a_replica_spends_what_it_took_and_asks_for_more_each_time() {
        let permits = Permits::default();
        let t = Instant::now();
        assert_eq!(permits.spend("a", t), Local::Ask(1));
        assert!(permits.record("a", 1, &granted(1, 60), t));
        assert_eq!(permits.spend("a", t), Local::Ask(2));
        assert!(permits.record("a", 2, &granted(2, 59), t));
        assert_eq!(permits.spend("a", t), Local::Spent);
        assert_eq!(permits.spend("a", t), Local::Ask(4));
        assert!(permits.record("a", 4, &granted(3, 59), t));
        assert_eq!(permits.spend("a", t), Local::Spent);
        assert_eq!(permits.spend("a", t), Local::Spent);
        assert_eq!(permits.spend("a", t), Local::Ask(8));
        assert_eq!(permits.spend("b", t), Local::Ask(1), "addresses apart");
    }

    #[test]
    fn one_request_at_a_time_asks_for_a_block() {
        let permits = Permits::default();
        let t = Instant::now();
        assert!(permits.record("a", 1, &granted(1, 60), t));
        assert_eq!(permits.spend("a", t), Local::Ask(2));
        assert_eq!(
            permits.spend("a", t),
            Local::Ask(1),
            "a block is on its way"
        );
        assert!(permits.record("a", 1, &granted(1, 60), t));
        assert!(permits.record("a", 2, &granted(2, 60), t));
        assert_eq!(permits.spend("a", t), Local::Spent);
        assert_eq!(permits.spend("a", t), Local::Ask(4), "the asker is back");
        assert_eq!(
            permits.spend("a", t + ASKING_FOR),
            Local::Ask(4),
            "an asker that never came back is replaced"
        );
    }

    #[test]
    fn a_refused_request_takes_what_another_block_brought_in() {
        let permits = Permits::default();
        let t = Instant::now();
        assert!(permits.record("a", 1, &granted(1, 60), t));
        assert_eq!(permits.spend("a", t), Local::Ask(2));
        assert_eq!(permits.spend("a", t), Local::Ask(1));
        assert!(permits.record("a", 2, &granted(2, 60), t));
        assert!(
            permits.record("a", 1, &refused(60), t),
            "the block's second request"
        );
        assert!(!permits.record("a", 1, &refused(60), t), "nothing left");
        assert_eq!(
            permits.spend("a", t),
            Local::Refused(Duration::from_secs(60))
        );
    }

    #[test]
    fn the_block_size_stops_at_the_maximum() {
        let permits = Permits::default();
        let t = Instant::now();
        permits.record("a", MAX_BLOCK, &granted(1, 60), t);
        assert_eq!(permits.spend("a", t), Local::Ask(MAX_BLOCK));
    }

    #[test]
    fn held_requests_lapse_before_the_window_ends() {
        let permits = Permits::default();
        let t = Instant::now();
        permits.record("a", 8, &granted(8, 10), t);
        assert_eq!(
            permits.spend("a", t + Duration::from_millis(9_800)),
            Local::Spent
        );
        assert_eq!(
            permits.spend("a", t + Duration::from_millis(9_950)),
            Local::Ask(16),
            "within the margin of the window's end"
        );
    }

    #[test]
    fn a_spent_window_is_refused_until_it_ends() {
        let permits = Permits::default();
        let t = Instant::now();
        assert!(!permits.record("a", 4, &refused(20), t));
        assert_eq!(
            permits.spend("a", t + Duration::from_secs(5)),
            Local::Refused(Duration::from_secs(15))
        );
        assert_eq!(
            permits.spend("a", t + Duration::from_secs(20)),
            Local::Ask(8)
        );
    }

    #[test]
    fn nothing_is_held_for_a_full_table_or_beyond_the_capacity() {
        let permits = Permits::default();
        let t = Instant::now();
        assert!(!permits.record("a", 1, &Take::Full, t));
        assert_eq!(permits.spend("a", t), Local::Ask(1));
        for i in 0..CAPACITY {
            permits.record(&format!("k{i}"), 1, &granted(2, 60), t);
        }
        assert!(permits.record("late", 1, &granted(2, 60), t));
        assert_eq!(permits.spend("late", t), Local::Ask(1), "no room");
        let later = t + Duration::from_secs(61);
        permits.record("late", 1, &granted(2, 60), later);
        assert_eq!(
            permits.spend("late", later),
            Local::Spent,
            "lapsed blocks made room"
        );
    }
}
