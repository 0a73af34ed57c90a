//! What the sender needs from a service's database. Each service implements [`Store`] on its own
//! outbox table; every method is blocking and is run on the blocking thread pool.
//!
//! A claim gives the claimed rows a lease: a random token and an expiry. Until the expiry no other
//! sender claims them; every later change (renew, sent, reschedule, park, release) applies only
//! while the row still carries the caller's token, and reports whether it did. A sender that dies
//! leaves its rows to be claimed again when the lease runs out: delivery is at least once, and
//! never twice while leases are honoured (see [`crate::sender`]).

use chrono::{DateTime, Utc};

/// A queued message as the sender needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedMail {
    pub id: i64,
    pub to_address: String,
    pub to_name: Option<String>,
    pub subject: String,
    pub text_body: String,
    pub html_body: String,
    /// Attempts so far, including the one this claim starts.
    pub attempts: i32,
}

/// One claim of [`Store::claim`]: up to `limit` messages due at `now`, leased to `token` until
/// `until`.
#[derive(Debug, Clone)]
pub struct Claim {
    pub now: DateTime<Utc>,
    pub until: DateTime<Utc>,
    pub token: String,
    pub limit: i64,
}

pub trait Store: Send + Sync + 'static {
    /// Claims up to `limit` unsent, unparked messages due at `now` (oldest due first), giving them
    /// `token` until `until` and counting an attempt. Rows another sender is claiming at the same
    /// moment are skipped, not waited for.
    fn claim(&self, claim: &Claim) -> anyhow::Result<Vec<QueuedMail>>;

    /// Moves the lease of `id` to `until` if it is still `token`'s and the row unsent.
    fn renew(&self, id: i64, token: &str, until: DateTime<Utc>) -> anyhow::Result<bool>;

    /// Records delivery at `at` if the lease is still `token`'s.
    fn mark_sent(&self, id: i64, token: &str, at: DateTime<Utc>) -> anyhow::Result<bool>;

    /// A passing failure: due again at `at`, with `error` kept for the operator; ends the lease.
    fn reschedule(
        &self,
        id: i64,
        token: &str,
        at: DateTime<Utc>,
        error: &str,
    ) -> anyhow::Result<bool>;

    /// A lasting failure: set aside at `at` with `reason`, never tried again by itself.
    fn park(&self, id: i64, token: &str, at: DateTime<Utc>, reason: &str) -> anyhow::Result<bool>;

    /// Gives an untried claimed message back (at shutdown): due at once, the attempt uncounted.
    fn release(&self, id: i64, token: &str, now: DateTime<Utc>) -> anyhow::Result<bool>;

    /// Deletes messages delivered or parked before `before`; returns how many.
    fn purge(&self, before: DateTime<Utc>) -> anyhow::Result<usize>;
}

/// The longest error text kept in a row.
pub const MAX_ERROR_CHARS: usize = 1000;

/// `error` cut to [`MAX_ERROR_CHARS`] characters, for the stores' `last_error` columns.
pub fn truncate_error(error: &str) -> String {
    error.chars().take(MAX_ERROR_CHARS).collect()
}
