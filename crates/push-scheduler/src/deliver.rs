//! Draining the outbox. A sender claims a batch of due messages with one `FOR UPDATE SKIP
//! LOCKED` statement, sends them concurrently, writes their outcomes with one statement and
//! commits: two processes never send the same row, and a process killed mid-send leaves its rows
//! untouched for the next one (the database drops the dead connection's locks at once). The
//! outcomes are committed without waiting for the WAL flush (see [`deliver_batch`]).
//!
//! A batch is at most [`MAX_BATCH`] messages and at most a `1 / (2 × senders)` share of what is
//! due (counted at most every [`DUE_RECOUNT`] per process), so a handful of due messages still
//! goes one per sender and only a backlog is batched.
//! The price of a batch is the window of repeats after a crash: a process killed mid-batch has
//! its whole batch sent again by the other, including the messages that already reached their
//! push service. That is at most [`MAX_BATCH`] messages per sender (192 for the default six
//! senders), and only while the backlog is that large; every repeat carries the same `Topic`
//! ([`topic`]), so the push service replaces the copy it still holds instead of showing two.
//!
//! Outcomes: 2xx delivered; 404/410 the device is deleted; 429 waits `Retry-After`; 5xx and
//! time-outs retry with exponential backoff and jitter until the message's expiry; 400/401/403/413
//! are failures, logged as configuration errors (bad VAPID keys, a payload the service refuses).
//!
//! A message follows its device, not the user it was queued for: it is sent with the device's
//! current endpoint and keys, and cancelled when the device is gone or no longer that user's (the
//! browser was removed, replaced, or taken over by another user on a shared computer). The devices
//! of a batch are share-locked while it is in flight, so removing a device waits for the batch
//! sending to it and no later send can start.
//!
//! Fairness: senders take the messages that expire first, each user's first device before
//! anyone's second ([`Lanes`] and the `fair_rank` column), and one process never has more than
//! [`PER_USER`] messages of one user in flight or all of its senders on one push service.
//!
//! Slow sends: a batch may mix push services, and a push endpoint may accept connections and
//! never answer. A batch waits for its sends only while they keep ending; once none has ended for
//! [`HOLD`], the ones left are handed to the [`Keeper`]: their rows are leased (`attempts`
//! counted, `next_attempt_at` pushed [`LEASE`] ahead and renewed while they last), their devices stay
//! share-locked in the keeper's own transaction, and the batch commits the rest and its sender
//! goes on. Each kept message's outcome is committed as soon as its send ends. So one endpoint
//! that never answers delays neither the messages sent with it nor its sender's next batch; it
//! costs one connection of the keeper for one send time-out.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, Int8, Integer, Nullable, Text, Timestamp, Timestamptz};
use pg_store::PgPool;
use push::{Options, Outcome, Sender, Topic};

use crate::breaker::{Admit, Breakers};
use rand::Rng;
use tokio::sync::Notify;

/// What a drain did.
#[derive(Debug, Default)]
pub struct Counters {
    pub sent: AtomicU64,
    pub removed: AtomicU64,
    pub failed: AtomicU64,
    pub retried: AtomicU64,
}

impl Counters {
    pub fn snapshot(&self) -> (u64, u64, u64, u64) {
        (
            self.sent.load(Ordering::Relaxed),
            self.removed.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
            self.retried.load(Ordering::Relaxed),
        )
    }
}

/// Asked to stop: senders finish the batch they hold and take no other.
#[derive(Debug, Default)]
pub struct Shutdown {
    stopping: AtomicBool,
    notify: Notify,
}

impl Shutdown {
    pub fn trigger(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    pub fn is_triggered(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// Returns once [`Self::trigger`] was called.
    pub async fn wait(&self) {
        loop {
            let notified = self.notify.notified();
            if self.is_triggered() {
                return;
            }
            notified.await;
        }
    }
}

/// Sends one process lets one user have in flight: a user's twenty devices on a slow push service
/// occupy two sends, never all of them.
pub const PER_USER: usize = 2;

/// The most messages one sender claims and sends together, in one transaction. The claim, the
/// outcomes and the commit are one round trip each per batch instead of per message.
pub const MAX_BATCH: i64 = 32;
/// A sender claims at most a `1 / (BATCH_SHARE × senders)` share of what is due: a handful of due
/// messages is claimed one per sender (as many in flight as possible, a crash repeats nothing
/// already sent), only a backlog in batches.
const BATCH_SHARE: i64 = 2;
/// How old the count of due messages may be when a sender sizes its claim by it. The count walks
/// the due part of the outbox's index, all of it when Postgres plans it as a bitmap scan: during
/// a backlog of 100,000, counting in every claim cost the database more than the claims did.
/// Counted at most this often, a backlog that is gone may be claimed in batches for this long
/// more, which changes nothing but the size of the batches.
const DUE_RECOUNT: Duration = Duration::from_millis(250);

/// How long an idle sender waits before looking again while other senders are busy: what they
/// hold may free a user's or push service's share.
const IDLE_POLL: Duration = Duration::from_millis(100);

/// A search that left full shares out and found nothing is repeated only after this many times
/// as long as it took. With a large backlog on one push service (all of it FCM, say) that search
/// walks the whole backlog; this keeps it to a tenth of one sender's time.
const EXCLUDED_SEARCH_SPACING: u32 = 10;
/// The longest an idle sender waits, whatever its searches cost: messages for other users and
/// push services are never held up longer than this by a backlog.
const MAX_IDLE_POLL: Duration = Duration::from_millis(500);

/// What this process has in flight: messages per user, senders per push-service origin.
#[derive(Debug)]
pub struct Lanes {
    per_origin: usize,
    /// The push domains not answering, whose messages wait.
    breakers: Arc<Breakers>,
    counts: Mutex<LaneCounts>,
    /// The last count of due messages (capped) and when it was taken.
    due: Mutex<Option<(std::time::Instant, i64)>>,
}

#[derive(Debug, Default)]
struct LaneCounts {
    users: HashMap<String, usize>,
    origins: HashMap<String, usize>,
    /// Messages in flight in the senders.
    total: usize,
    /// Messages in flight handed to the keeper: a drain waits for them before it returns, but an
    /// idle sender does not poll for them.
    kept: usize,
}

impl Lanes {
    /// Lanes for `workers` senders: one push service may take all but one of them, so a slow one
    /// always leaves a sender for everyone else.
    pub fn new(workers: usize) -> Self {
        Self::with_breakers(workers, Breakers::default())
    }

    /// [`Self::new`] with breakers of other settings.
    pub fn with_breakers(workers: usize, breakers: Breakers) -> Self {
        Self {
            per_origin: workers.saturating_sub(1).max(1),
            breakers: Arc::new(breakers),
            counts: Mutex::default(),
            due: Mutex::default(),
        }
    }

    pub fn breakers(&self) -> &Breakers {
        &self.breakers
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LaneCounts> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn in_flight(&self) -> usize {
        self.lock().total
    }

    /// Messages this process has in flight now, kept ones included.
    pub fn in_flight_now(&self) -> usize {
        let counts = self.lock();
        counts.total + counts.kept
    }

    /// How many messages a sender of `workers` may claim: a `1 / (BATCH_SHARE × workers)` share of
    /// what is due, at least one and at most [`MAX_BATCH`], from a count at most [`DUE_RECOUNT`]
    /// old. Senders that find the count stale at once may each count; nothing waits on a lock.
    fn batch_size(&self, conn: &mut PgConnection, workers: usize) -> QueryResult<i64> {
        let share = BATCH_SHARE.saturating_mul(i64::try_from(workers).unwrap_or(i64::MAX));
        let known = *self.due.lock().unwrap_or_else(PoisonError::into_inner);
        let due = match known {
            Some((at, due)) if at.elapsed() < DUE_RECOUNT => due,
            _ => {
                let at = std::time::Instant::now();
                let due = diesel::sql_query(
                    "SELECT count(*) AS n FROM (SELECT 1 FROM scheduler.outbox
                                                 WHERE status = 'pending' AND next_attempt_at <= now()
                                                 LIMIT $1) due",
                )
                .bind::<Int8, _>(MAX_BATCH.saturating_mul(share))
                .get_result::<DueCount>(conn)?
                .n;
                *self.due.lock().unwrap_or_else(PoisonError::into_inner) = Some((at, due));
                due
            }
        };
        Ok((due / share).clamp(1, MAX_BATCH))
    }

    /// The users and push-service origins whose share is taken up.
    fn full(&self) -> (Vec<String>, Vec<String>) {
        let counts = self.lock();
        let full = |map: &HashMap<String, usize>, limit: usize| -> Vec<String> {
            map.iter()
                .filter(|(_, n)| **n >= limit)
                .map(|(k, _)| k.clone())
                .collect()
        };
        (
            full(&counts.users, PER_USER),
            full(&counts.origins, self.per_origin),
        )
    }

    /// Counts the claimed messages of one sender in their lanes (the sender once per origin among
    /// them) and returns which of them it may send: those whose user's or push service's share
    /// filled up since [`Self::full`] was read are left out, and left for later.
    fn take<'a>(&'a self, claimed: &[(&str, &str)]) -> (Held<'a>, Vec<bool>) {
        let mut counts = self.lock();
        let counts = &mut *counts;
        let mut held = Held {
            lanes: self,
            users: Vec::new(),
            origins: Vec::new(),
        };
        let mut refused: Vec<&str> = Vec::new();
        let mut accepted = Vec::with_capacity(claimed.len());
        for &(user, origin) in claimed {
            let has_origin = held.origins.iter().any(|o| o == origin);
            let origin_ok = has_origin
                || (!refused.contains(&origin)
                    && counts.origins.get(origin).copied().unwrap_or(0) < self.per_origin);
            if !origin_ok && !refused.contains(&origin) {
                refused.push(origin);
            }
            let ok = origin_ok && counts.users.get(user).copied().unwrap_or(0) < PER_USER;
            if ok {
                if !has_origin {
                    *counts.origins.entry(origin.to_owned()).or_default() += 1;
                    held.origins.push(origin.to_owned());
                }
                *counts.users.entry(user.to_owned()).or_default() += 1;
                held.users.push(user.to_owned());
                counts.total += 1;
            }
            accepted.push(ok);
        }
        (held, accepted)
    }
}

/// Messages in flight outside any sender (handed to the [`Keeper`]), counted in their users'
/// lanes and in what the process has in flight until dropped: a drain is not over while they
/// run.
struct HeldUsers {
    lanes: Arc<Lanes>,
    users: Vec<String>,
}

trait HoldUsers {
    fn hold(&self, users: Vec<String>) -> HeldUsers;
}

impl HoldUsers for Arc<Lanes> {
    fn hold(&self, users: Vec<String>) -> HeldUsers {
        let mut c = self.lock();
        for user in &users {
            *c.users.entry(user.clone()).or_default() += 1;
        }
        c.kept += users.len();
        drop(c);
        HeldUsers {
            lanes: Arc::clone(self),
            users,
        }
    }
}

impl Drop for HeldUsers {
    fn drop(&mut self) {
        let mut c = self.lanes.lock();
        for user in &self.users {
            if let Some(n) = c.users.get_mut(user) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    c.users.remove(user);
                }
            }
        }
        c.kept = c.kept.saturating_sub(self.users.len());
    }
}

/// One sender's claimed messages counted in their lanes until dropped.
struct Held<'a> {
    lanes: &'a Lanes,
    /// One entry per message.
    users: Vec<String>,
    /// One entry per origin.
    origins: Vec<String>,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let mut c = self.lanes.lock();
        let c = &mut *c;
        let release = |map: &mut HashMap<String, usize>, key: &String| {
            if let Some(n) = map.get_mut(key) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    map.remove(key);
                }
            }
        };
        for user in &self.users {
            release(&mut c.users, user);
        }
        for origin in &self.origins {
            release(&mut c.origins, origin);
        }
        c.total = c.total.saturating_sub(self.users.len());
    }
}

#[derive(QueryableByName)]
struct DueCount {
    #[diesel(sql_type = Int8)]
    n: i64,
}

#[derive(QueryableByName)]
struct Claimed {
    #[diesel(sql_type = Int8)]
    id: i64,
    #[diesel(sql_type = Text)]
    job: String,
    #[diesel(sql_type = Timestamp)]
    slot: NaiveDateTime,
    #[diesel(sql_type = Text)]
    user_id: String,
    #[diesel(sql_type = Text)]
    device_id: String,
    #[diesel(sql_type = Nullable<Text>)]
    origin: Option<String>,
    #[diesel(sql_type = diesel::sql_types::Jsonb)]
    payload: serde_json::Value,
    #[diesel(sql_type = Integer)]
    attempts: i32,
    #[diesel(sql_type = Timestamptz)]
    expires_at: DateTime<Utc>,
    /// The device as it is now; all three `None` when it is gone or no longer this user's.
    #[diesel(sql_type = Nullable<Text>)]
    endpoint: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    p256dh: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    auth: Option<String>,
}

/// First retry delay after a 5xx or time-out; doubled per attempt up to [`MAX_BACKOFF`].
const BASE_BACKOFF: Duration = Duration::from_secs(5);
const MAX_BACKOFF: Duration = Duration::from_secs(15 * 60);

/// The delay before attempt `attempts + 1`: exponential, capped, with ±25 % jitter so that many
/// messages refused together do not come back together, and never shorter than `hint`.
pub fn backoff(attempts: i32, hint: Duration) -> Duration {
    let exp = BASE_BACKOFF
        .saturating_mul(2u32.saturating_pow(u32::try_from(attempts.max(0)).unwrap_or(0).min(16)));
    let jitter = rand::rng().random_range(0.75..1.25);
    // The push service's own Retry-After is a floor, never shortened by the jitter.
    exp.min(MAX_BACKOFF).mul_f64(jitter).max(hint)
}

/// The `Topic` of a message: one per job, slot and kind, so that every copy of it (a repeat after
/// a crash) collapses at the push service.
pub fn topic(job: &str, slot: NaiveDateTime, kind: &str) -> Topic {
    Topic::derive(&format!("{job}|{}|{kind}", slot.format("%Y-%m-%dT%H:%M")))
}

/// What one sender found to do.
enum Step {
    /// A batch of messages was settled (sent, retried, cancelled, expired, failed).
    Done,
    /// Nothing this sender may take now; `excluded` when full shares were left out of the search.
    Idle { excluded: bool },
    /// Every claimed message's user or push service filled up meanwhile; they were left for later.
    Raced,
}

/// The claim: the next due messages outside the full shares, locked, with their devices as they
/// are now, share-locked until the commit so that deleting a device waits for the send to it.
/// One statement. The batch is `$3` messages at most ([`Lanes::batch_size`]). The lanes are taken
/// in the claim's order.
const CLAIM: &str = "
    SELECT o.id, o.job, o.slot, o.user_id, o.device_id, o.origin, o.payload, o.attempts,
           o.expires_at, d.endpoint, d.p256dh, d.auth
      FROM (SELECT id, job, slot, user_id, device_id, origin, payload, attempts, expires_at,
                   fair_rank
              FROM scheduler.outbox
             WHERE status = 'pending' AND next_attempt_at <= now()
               AND NOT (user_id = ANY($1)) AND NOT (COALESCE(origin, '') = ANY($2))
             ORDER BY expires_at, fair_rank, id
             LIMIT $3
             FOR UPDATE SKIP LOCKED) o
      LEFT JOIN LATERAL (SELECT endpoint, p256dh, auth FROM nutrition.device_token
                          WHERE id = o.device_id AND user_id = o.user_id
                          FOR KEY SHARE) d ON true
     ORDER BY o.expires_at, o.fair_rank, o.id";

/// How one message of a batch is settled.
struct Settled {
    id: i64,
    /// `pending` for a retry.
    status: &'static str,
    /// Whether this was an attempt: a message deferred without being sent is not.
    counted: bool,
    error: Option<String>,
    /// The next attempt of a retry.
    next: Option<DateTime<Utc>>,
}

/// The longest a batch waits for its next send to end before it hands the ones still in flight
/// to the [`Keeper`] and commits the rest: as long as its sends have taken so far, at least
/// [`MIN_HOLD`] and at most this. Push services answer in tens of milliseconds; a send that takes
/// twice as long as all the others of its batch together is slow or never answers, and must not
/// keep them unsettled.
pub const HOLD: Duration = Duration::from_millis(250);
/// The shortest a batch waits for its next send to end.
pub const MIN_HOLD: Duration = Duration::from_millis(25);
/// How long the row of a message kept by the [`Keeper`] is leased; renewed every
/// [`LEASE_RENEW`] while its send lasts.
pub const LEASE: Duration = Duration::from_secs(3);
const LEASE_RENEW: Duration = Duration::from_secs(1);
/// `last_error` of a row leased by the keeper: `fire` waits for such rows too, so that a message
/// left by a process that died mid-send goes out with the next run.
pub const IN_FLIGHT: &str = "in flight";

/// Transactions the [`Keeper`] has at most: one taking new messages, one waiting for its last
/// ones. Each takes new messages for one send time-out, so the older one has always ended when
/// the newer one stops taking them.
const EPOCHS: usize = 2;

/// Keeps the devices of messages still in flight after their batch committed share-locked, in
/// an open transaction on a pooled connection of its own, and writes each one's outcome there as
/// its send ends: removing a device still waits for a send to it, as it waits for a batch. Such
/// a transaction (an epoch) commits as soon as none of its messages is in flight, and takes new
/// ones for one send time-out only, so it ends at most two time-outs after it began. When no
/// epoch can take them (no connection free), a batch keeps its slow messages itself, as before.
pub struct Keeper {
    pool: PgPool,
    /// How long an epoch takes new messages: the send time-out.
    open_for: Duration,
    epochs: Mutex<Vec<Epoch>>,
    generation: AtomicU64,
    /// The rows of the messages kept, whose leases [`Self::renew`] extends.
    leased: Mutex<Vec<i64>>,
}

struct Epoch {
    generation: u64,
    conn: service_kit::db::PooledConnection<PgConnection>,
    opened: std::time::Instant,
    outstanding: usize,
    gone: Vec<String>,
}

/// Which epoch holds a message's device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochId(u64);

/// The outcome of a message handed to the keeper: the row as settled and the `attempts` its
/// lease gave it (a row leased again since, by another sender, is not overwritten).
type KeptOutcome = (Settled, i32);

impl Keeper {
    /// A keeper for sends that give up after `send_timeout`.
    pub fn new(pool: PgPool, send_timeout: Duration) -> Self {
        Self {
            pool,
            open_for: send_timeout,
            epochs: Mutex::new(Vec::new()),
            generation: AtomicU64::new(0),
            leased: Mutex::new(Vec::new()),
        }
    }

    /// Extends the leases of the messages kept by another [`LEASE`], on a connection borrowed
    /// for it: a process that dies leaves them to be sent again within one lease.
    pub fn renew(&self) {
        let Ok(mut conn) = self.pool.get_timeout(Duration::from_millis(500)) else {
            return;
        };
        let leased = self.leased.lock().unwrap_or_else(PoisonError::into_inner);
        if leased.is_empty() {
            return;
        }
        let renewed = diesel::sql_query(
            "UPDATE scheduler.outbox SET next_attempt_at = now() + make_interval(secs => $2)
              WHERE id IN (SELECT id FROM scheduler.outbox
                            WHERE id = ANY($1) AND status = 'pending'
                            FOR UPDATE SKIP LOCKED)",
        )
        .bind::<Array<Int8>, _>(&*leased)
        .bind::<diesel::sql_types::Double, _>(LEASE.as_secs_f64())
        .execute(&mut conn);
        if let Err(e) = renewed {
            tracing::warn!(error = %e, "could not renew the leases of slow pushes");
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Epoch>> {
        self.epochs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Share-locks `devices` in the epoch taking messages (opening one if there is room); `None`
    /// when no epoch can take them now.
    fn take(&self, devices: &[String]) -> Option<EpochId> {
        let mut epochs = self.lock();
        let open = epochs
            .iter()
            .position(|e| e.opened.elapsed() < self.open_for);
        let index = match open {
            Some(index) => index,
            None if epochs.len() < EPOCHS => {
                let mut conn = self.pool.get_timeout(Duration::from_millis(250)).ok()?;
                begin(&mut conn).ok()?;
                epochs.push(Epoch {
                    generation: self.generation.fetch_add(1, Ordering::Relaxed),
                    conn,
                    opened: std::time::Instant::now(),
                    outstanding: 0,
                    gone: Vec::new(),
                });
                epochs.len() - 1
            }
            None => return None,
        };
        let epoch = &mut epochs[index];
        // Compatible with the batch's own share locks, so it never waits for them.
        let locked = diesel::sql_query(
            "SELECT 1 FROM nutrition.device_token WHERE id = ANY($1) FOR KEY SHARE",
        )
        .bind::<Array<Text>, _>(devices)
        .execute(&mut epoch.conn);
        match locked {
            Ok(_) => {
                epoch.outstanding += devices.len();
                Some(EpochId(epoch.generation))
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not keep slow pushes; their leases bring them back");
                let mut epoch = epochs.swap_remove(index);
                rollback(&mut epoch.conn);
                None
            }
        }
    }

    /// Records the outcomes of messages of `epoch` (`None`: nothing to write) and commits the
    /// epoch when they were the last ones in flight.
    ///
    /// The outcomes are committed at once on a connection borrowed for it, not with the epoch,
    /// which may wait for a send that never answers; only when no connection is free are they
    /// written in the epoch's transaction.
    fn settle(&self, epoch: EpochId, ended: Vec<(i64, Option<KeptOutcome>, Option<String>)>) {
        // No longer renewed from here on, so that a renewal never overwrites an outcome.
        self.leased
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|leased| !ended.iter().any(|(id, _, _)| id == leased));
        let count = ended.len();
        let mut gone: Vec<String> = Vec::new();
        let mut kept: Vec<KeptOutcome> = Vec::new();
        for (_, outcome, device) in ended {
            kept.extend(outcome);
            gone.extend(device);
        }
        if !kept.is_empty()
            && let Ok(mut conn) = self.pool.get_timeout(Duration::from_millis(100))
        {
            match write_kept(&mut conn, &kept) {
                Ok(_) => kept.clear(),
                Err(e) => tracing::warn!(error = %e, "could not record slow pushes; trying again"),
            }
        }
        let mut epochs = self.lock();
        let Some(index) = epochs.iter().position(|e| e.generation == epoch.0) else {
            return;
        };
        let current = &mut epochs[index];
        if !kept.is_empty()
            && let Err(e) = write_kept(&mut current.conn, &kept)
        {
            tracing::warn!(error = %e, "could not record slow pushes; their leases bring them back");
            let mut epoch = epochs.swap_remove(index);
            rollback(&mut epoch.conn);
            return;
        }
        current.gone.extend(gone);
        current.outstanding = current.outstanding.saturating_sub(count);
        if current.outstanding > 0 {
            return;
        }
        let mut done = epochs.swap_remove(index);
        drop(epochs);
        if let Err(e) = commit(&mut done.conn) {
            tracing::warn!(error = %e, "could not record slow pushes; their leases bring them back");
            return;
        }
        // Outside the lock: deleting a device waits for the batches sending to it.
        if !done.gone.is_empty()
            && let Err(e) = remove_gone(&mut done.conn, &done.gone)
        {
            tracing::warn!(error = %e, "could not remove gone devices");
        }
    }
}

/// Writes the outcomes of messages handed to the keeper, in one statement. Skips a row someone
/// else holds (a deletion, another sender's cancellation): waiting for it could deadlock with a
/// deletion that waits for the keeper.
fn write_kept(conn: &mut PgConnection, kept: &[KeptOutcome]) -> QueryResult<usize> {
    let ids: Vec<i64> = kept.iter().map(|(s, _)| s.id).collect();
    let statuses: Vec<&str> = kept.iter().map(|(s, _)| s.status).collect();
    let errors: Vec<Option<&str>> = kept.iter().map(|(s, _)| s.error.as_deref()).collect();
    let next: Vec<Option<DateTime<Utc>>> = kept.iter().map(|(s, _)| s.next).collect();
    let attempts: Vec<i32> = kept.iter().map(|(_, a)| *a).collect();
    diesel::sql_query(
        "UPDATE scheduler.outbox o
            SET status = u.status, last_error = u.error,
                finished_at = CASE WHEN u.status = 'pending' THEN NULL ELSE now() END,
                next_attempt_at = COALESCE(u.next, o.next_attempt_at)
           FROM unnest($1::int8[], $2::text[], $3::text[], $4::timestamptz[], $5::int4[])
                AS u (id, status, error, next, attempts)
          WHERE o.id = u.id
            AND o.id IN (SELECT id FROM scheduler.outbox
                          WHERE id = ANY($1) AND status = 'pending'
                          FOR UPDATE SKIP LOCKED)
            AND o.attempts = u.attempts",
    )
    .bind::<Array<Int8>, _>(&ids)
    .bind::<Array<Text>, _>(&statuses)
    .bind::<Array<Nullable<Text>>, _>(&errors)
    .bind::<Array<Nullable<Timestamptz>>, _>(&next)
    .bind::<Array<Integer>, _>(&attempts)
    .execute(conn)
}

fn begin(conn: &mut PgConnection) -> QueryResult<()> {
    use diesel::connection::{AnsiTransactionManager, TransactionManager};
    AnsiTransactionManager::begin_transaction(conn)?;
    // A keeper waits for no lock for long: it holds others' deletions while it waits.
    diesel::sql_query("SET LOCAL lock_timeout = '5s'").execute(conn)?;
    Ok(())
}

fn commit(conn: &mut PgConnection) -> QueryResult<()> {
    use diesel::connection::{AnsiTransactionManager, TransactionManager};
    diesel::sql_query("SET LOCAL synchronous_commit = off").execute(conn)?;
    AnsiTransactionManager::commit_transaction(conn)
}

fn rollback(conn: &mut PgConnection) {
    use diesel::connection::{AnsiTransactionManager, TransactionManager};
    // A connection left inside a transaction is discarded by the pool, not reused.
    let _ = AnsiTransactionManager::rollback_transaction(conn);
}

/// Claims the next messages this process may take, sends them concurrently and settles them
/// with one statement, all in one transaction; then deletes the devices found gone.
///
/// The batch waits for its sends at most [`HOLD`]: the messages still in flight then are handed
/// to the [`Keeper`] (their rows leased, their devices share-locked in the keeper's transaction)
/// and the rest is committed, so that one push endpoint that never answers holds up neither the
/// messages sent with it nor this sender's next batch. When the keeper cannot take them, the
/// batch waits for them as it always did.
#[allow(clippy::too_many_arguments)]
fn deliver_batch(
    conn: &mut PgConnection,
    sender: &Sender,
    lanes: &Arc<Lanes>,
    keeper: &Arc<Keeper>,
    workers: usize,
    counters: &Arc<Counters>,
    runtime: &tokio::runtime::Handle,
    on_claim: &dyn Fn(),
) -> QueryResult<Step> {
    let result = conn.transaction::<_, diesel::result::Error, _>(|conn| {
        // The full shares are read, the claim made without holding the lanes (so that senders
        // claim in parallel), and the shares taken afterwards: a message whose user or push
        // service filled up meanwhile is left untouched, for later.
        let (full_users, full_origins) = lanes.full();
        let excluded = !(full_users.is_empty() && full_origins.is_empty());
        let batch = lanes.batch_size(conn, workers)?;
        let claimed: Vec<Claimed> = diesel::sql_query(CLAIM)
            .bind::<Array<Text>, _>(&full_users)
            .bind::<Array<Text>, _>(&full_origins)
            .bind::<Int8, _>(batch)
            .load(conn)?;
        if claimed.is_empty() {
            return Ok((Step::Idle { excluded }, Vec::new(), None));
        }
        let keys: Vec<(&str, &str)> = claimed
            .iter()
            .map(|r| (r.user_id.as_str(), r.origin.as_deref().unwrap_or_default()))
            .collect();
        let (_held, accepted) = lanes.take(&keys);
        if !accepted.contains(&true) {
            return Ok((Step::Raced, Vec::new(), None));
        }
        on_claim();
        PUSH_BATCHES.inc();
        let now = Utc::now();
        let mut settled = Vec::with_capacity(claimed.len());
        let mut gone: Vec<String> = Vec::new();
        let mut sends = tokio::task::JoinSet::new();
        let mut in_flight: HashMap<i64, Message> = HashMap::new();
        for (row, _) in claimed.into_iter().zip(accepted).filter(|(_, ok)| *ok) {
            if row.expires_at <= now {
                settled.push(Settled {
                    id: row.id,
                    status: "expired",
                    counted: true,
                    error: Some("expired before delivery".into()),
                    next: None,
                });
                counters.failed.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let (Some(endpoint), Some(p256dh), Some(auth)) = (row.endpoint, row.p256dh, row.auth)
            else {
                settled.push(Settled {
                    id: row.id,
                    status: "cancelled",
                    counted: true,
                    error: Some("the device left its user".into()),
                    next: None,
                });
                continue;
            };
            let Ok(url) = sender.policy().check(&endpoint) else {
                // Registered under a wider host rule than the one in force: never sent to, and
                // removed like a subscription its push service reports gone.
                settled.push(Settled {
                    id: row.id,
                    status: "gone",
                    counted: true,
                    error: Some("endpoint host not allowed".into()),
                    next: None,
                });
                gone.push(row.device_id);
                counters.removed.fetch_add(1, Ordering::Relaxed);
                PUSH_OUTCOMES.with_label_values(&["gone"]).inc();
                continue;
            };
            let domain = push::registrable_domain(&url).unwrap_or_default();
            let probe = match lanes.breakers.admit(&domain) {
                Admit::Send { probe } => probe,
                Admit::Defer(wait) => {
                    // The device is not at fault: no attempt is counted, and the message keeps
                    // its place for when its push service answers again.
                    let next = now
                        + chrono::Duration::from_std(wait).unwrap_or(chrono::Duration::minutes(5));
                    if next >= row.expires_at {
                        settled.push(Settled {
                            id: row.id,
                            status: "expired",
                            counted: false,
                            error: Some(
                                "push service not answering until the message expired".into(),
                            ),
                            next: None,
                        });
                        counters.failed.fetch_add(1, Ordering::Relaxed);
                        PUSH_OUTCOMES.with_label_values(&["expired"]).inc();
                    } else {
                        settled.push(Settled {
                            id: row.id,
                            status: "pending",
                            counted: false,
                            error: Some(format!(
                                "push service not answering; deferred {} s",
                                wait.as_secs()
                            )),
                            next: Some(next),
                        });
                        counters.retried.fetch_add(1, Ordering::Relaxed);
                        PUSH_OUTCOMES.with_label_values(&["deferred"]).inc();
                    }
                    continue;
                }
            };
            let sub = push::Subscription {
                endpoint,
                p256dh,
                auth,
            };
            let body = serde_json::to_vec(&row.payload).unwrap_or_default();
            let kind = row.payload["kind"].as_str().unwrap_or_default();
            let options = Options {
                ttl: (row.expires_at - now)
                    .to_std()
                    .unwrap_or(Duration::from_secs(60)),
                urgency: None,
                topic: Some(topic(&row.job, row.slot, kind)),
            };
            let sender = sender.clone();
            in_flight.insert(
                row.id,
                Message {
                    id: row.id,
                    user_id: row.user_id,
                    device_id: row.device_id,
                    attempts: row.attempts,
                    expires_at: row.expires_at,
                },
            );
            let id = row.id;
            // The rows stay locked while the push services are asked: no other process can take
            // them.
            let breakers = Arc::clone(&lanes.breakers);
            sends.spawn_on(
                async move {
                    let (outcome, reached) = sender.try_send(&sub, &body, &options).await;
                    breakers.record(&domain, reached, probe);
                    (id, outcome)
                },
                runtime,
            );
        }
        let mut outcomes = Vec::with_capacity(in_flight.len());
        runtime.block_on(async {
            // While sends keep ending the batch waits (they are merely slow, all alike); once none
            // has ended for as long again as they took (MIN_HOLD to HOLD), those left are slower
            // than the rest by that much.
            let started = tokio::time::Instant::now();
            let mut hold_until = started + HOLD;
            loop {
                tokio::select! {
                    done = sends.join_next() => match done {
                        Some(Ok(outcome)) => {
                            outcomes.push(outcome);
                            let now = tokio::time::Instant::now();
                            hold_until = now + (now - started).clamp(MIN_HOLD, HOLD);
                        }
                        Some(Err(e)) => tracing::error!(error = %e, "a push send task failed"),
                        None => break,
                    },
                    () = tokio::time::sleep_until(hold_until) => break,
                }
            }
        });
        let settle_done = |outcomes: Vec<(i64, Outcome)>,
                           in_flight: &mut HashMap<i64, Message>,
                           settled: &mut Vec<Settled>,
                           gone: &mut Vec<String>| {
            for (id, outcome) in outcomes {
                if let Some(message) = in_flight.remove(&id) {
                    settled.push(settle_outcome(&message, outcome, now, counters, gone));
                }
            }
        };
        settle_done(outcomes, &mut in_flight, &mut settled, &mut gone);
        let mut committed = None;
        if !in_flight.is_empty() {
            let stragglers: Vec<Message> = in_flight.drain().map(|(_, m)| m).collect();
            let devices: Vec<String> = stragglers.iter().map(|m| m.device_id.clone()).collect();
            match keeper.take(&devices) {
                Some(epoch) => {
                    let ids: Vec<i64> = stragglers.iter().map(|m| m.id).collect();
                    // Leased, and renewed while they are in flight: no other sender takes them,
                    // and a process that dies with them leaves them to be sent again within one
                    // lease, never lost.
                    diesel::sql_query(
                        "UPDATE scheduler.outbox
                            SET attempts = attempts + 1, last_error = $3,
                                next_attempt_at = now() + make_interval(secs => $2)
                          WHERE id = ANY($1)",
                    )
                    .bind::<Array<Int8>, _>(&ids)
                    .bind::<diesel::sql_types::Double, _>(LEASE.as_secs_f64())
                    .bind::<Text, _>(IN_FLIGHT)
                    .execute(conn)?;
                    keeper
                        .leased
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .extend(&ids);
                    let (tx, rx) = tokio::sync::oneshot::channel::<bool>();
                    committed = Some(tx);
                    let users: Vec<String> = stragglers.iter().map(|m| m.user_id.clone()).collect();
                    let held = lanes.hold(users);
                    let keeper = Arc::clone(keeper);
                    let counters = Arc::clone(counters);
                    runtime.spawn(async move {
                        // Written in the keeper's transaction only once the batch that leased
                        // them has committed: until then the batch holds their rows.
                        let batch_committed = rx.await.unwrap_or(false);
                        let mut stragglers: HashMap<i64, Message> =
                            stragglers.into_iter().map(|m| (m.id, m)).collect();
                        while let Some(done) = sends.join_next().await {
                            // Sends that ended meanwhile are written together.
                            let mut ended = vec![done];
                            while let Some(more) = sends.try_join_next() {
                                ended.push(more);
                            }
                            let mut batch = Vec::with_capacity(ended.len());
                            for (id, outcome) in ended.into_iter().flatten() {
                                let Some(message) = stragglers.remove(&id) else {
                                    continue;
                                };
                                let mut gone = Vec::new();
                                let settled = settle_outcome(
                                    &message,
                                    outcome,
                                    Utc::now(),
                                    &counters,
                                    &mut gone,
                                );
                                let write =
                                    batch_committed.then_some((settled, message.attempts + 1));
                                batch.push((id, write, gone.pop()));
                            }
                            let keeper = Arc::clone(&keeper);
                            let _ =
                                tokio::task::spawn_blocking(move || keeper.settle(epoch, batch))
                                    .await;
                        }
                        // A send that ended without an outcome (its task panicked) is left to
                        // its lease.
                        if !stragglers.is_empty() {
                            let batch = stragglers.into_keys().map(|id| (id, None, None)).collect();
                            let keeper = Arc::clone(&keeper);
                            let _ =
                                tokio::task::spawn_blocking(move || keeper.settle(epoch, batch))
                                    .await;
                        }
                        drop(held);
                    });
                }
                None => {
                    let mut rest = Vec::new();
                    runtime.block_on(async {
                        while let Some(done) = sends.join_next().await {
                            match done {
                                Ok(outcome) => rest.push(outcome),
                                Err(e) => {
                                    tracing::error!(error = %e, "a push send task failed");
                                }
                            }
                        }
                    });
                    let mut in_flight: HashMap<i64, Message> =
                        stragglers.into_iter().map(|m| (m.id, m)).collect();
                    settle_done(rest, &mut in_flight, &mut settled, &mut gone);
                }
            }
        }
        // The outcomes are committed without waiting for the WAL flush: only a crash of Postgres
        // itself in the next fraction of a second can lose them, and then the messages are sent
        // again, which their Topic collapses at the push service: the same window as a sender
        // that dies before its commit. Waiting for the flush would cost a disk sync per batch.
        diesel::sql_query("SET LOCAL synchronous_commit = off").execute(conn)?;
        settle(conn, &settled)?;
        Ok((Step::Done, gone, committed))
    });
    // On an error the sender is dropped, which tells the stragglers that their batch did not
    // commit.
    let (step, gone, committed) = result?;
    if let Some(committed) = committed {
        let _ = committed.send(true);
    }
    if !gone.is_empty() {
        remove_gone(conn, &gone)?;
    }
    Ok(step)
}

/// Deletes devices whose push service answered 404 or 410 and cancels what is still queued for
/// them, in a transaction of its own, after the batch that found them has committed. Inside the
/// batch it could deadlock: another sender's batch may hold the same device share-locked and find
/// it gone too, each then waiting for the other's lock. Here it holds nothing while the delete
/// waits for the batches still sending to the device, and skips queued messages another sender
/// holds (their claim finds the device gone and cancels them). A crash between the two
/// transactions leaves the device in place; the next message to it is answered 410 again.
fn remove_gone(conn: &mut PgConnection, gone: &[String]) -> QueryResult<()> {
    conn.transaction(|conn| {
        diesel::sql_query("DELETE FROM nutrition.device_token WHERE id = ANY($1)")
            .bind::<Array<Text>, _>(gone)
            .execute(conn)?;
        diesel::sql_query(
            "UPDATE scheduler.outbox SET status = 'gone', finished_at = now(), last_error = 'subscription gone'
              WHERE id IN (SELECT id FROM scheduler.outbox
                            WHERE device_id = ANY($1) AND status = 'pending'
                            FOR UPDATE SKIP LOCKED)",
        )
        .bind::<Array<Text>, _>(gone)
        .execute(conn)?;
        Ok(())
    })
}

/// What is kept of a message while it is sent.
struct Message {
    id: i64,
    user_id: String,
    device_id: String,
    attempts: i32,
    expires_at: DateTime<Utc>,
}

/// How the outcome of one send is recorded; counted as it is decided. A gone device is added to
/// `gone`.
fn settle_outcome(
    message: &Message,
    outcome: Outcome,
    now: DateTime<Utc>,
    counters: &Counters,
    gone: &mut Vec<String>,
) -> Settled {
    match outcome {
        Outcome::Delivered => {
            counters.sent.fetch_add(1, Ordering::Relaxed);
            PUSH_OUTCOMES.with_label_values(&["delivered"]).inc();
            Settled {
                id: message.id,
                status: "delivered",
                counted: true,
                error: None,
                next: None,
            }
        }
        Outcome::Gone => {
            gone.push(message.device_id.clone());
            counters.removed.fetch_add(1, Ordering::Relaxed);
            PUSH_OUTCOMES.with_label_values(&["gone"]).inc();
            Settled {
                id: message.id,
                status: "gone",
                counted: true,
                error: Some("subscription gone".into()),
                next: None,
            }
        }
        Outcome::RetryAfter(hint) => {
            let delay = backoff(message.attempts, hint);
            let next =
                now + chrono::Duration::from_std(delay).unwrap_or(chrono::Duration::seconds(60));
            if next >= message.expires_at {
                counters.failed.fetch_add(1, Ordering::Relaxed);
                PUSH_OUTCOMES.with_label_values(&["expired"]).inc();
                Settled {
                    id: message.id,
                    status: "expired",
                    counted: true,
                    error: Some("still refused when the message expired".into()),
                    next: None,
                }
            } else {
                counters.retried.fetch_add(1, Ordering::Relaxed);
                PUSH_OUTCOMES.with_label_values(&["retry"]).inc();
                Settled {
                    id: message.id,
                    status: "pending",
                    counted: true,
                    error: Some(format!("retry in {} s", delay.as_secs())),
                    next: Some(next),
                }
            }
        }
        Outcome::Failed { status, reason } => {
            tracing::error!(
                outbox_id = message.id,
                ?status,
                %reason,
                "push refused: check the VAPID keys and the payload (configuration error)"
            );
            counters.failed.fetch_add(1, Ordering::Relaxed);
            PUSH_OUTCOMES.with_label_values(&["failed"]).inc();
            Settled {
                id: message.id,
                status: "failed",
                counted: true,
                error: Some(format!("{status:?}: {reason}")),
                next: None,
            }
        }
    }
}

/// Writes a batch's outcomes in one statement: a retry stays pending with its next attempt, every
/// other outcome is final.
fn settle(conn: &mut PgConnection, settled: &[Settled]) -> QueryResult<usize> {
    if settled.is_empty() {
        return Ok(0);
    }
    let ids: Vec<i64> = settled.iter().map(|s| s.id).collect();
    let statuses: Vec<&str> = settled.iter().map(|s| s.status).collect();
    let errors: Vec<Option<&str>> = settled.iter().map(|s| s.error.as_deref()).collect();
    let next: Vec<Option<DateTime<Utc>>> = settled.iter().map(|s| s.next).collect();
    let counted: Vec<bool> = settled.iter().map(|s| s.counted).collect();
    diesel::sql_query(
        "UPDATE scheduler.outbox o
            SET status = u.status, attempts = o.attempts + CASE WHEN u.counted THEN 1 ELSE 0 END,
                last_error = u.error,
                finished_at = CASE WHEN u.status = 'pending' THEN NULL ELSE now() END,
                next_attempt_at = COALESCE(u.next, o.next_attempt_at)
           FROM unnest($1::int8[], $2::text[], $3::text[], $4::timestamptz[], $5::bool[])
                AS u (id, status, error, next, counted)
          WHERE o.id = u.id",
    )
    .bind::<Array<Int8>, _>(&ids)
    .bind::<Array<Text>, _>(&statuses)
    .bind::<Array<Nullable<Text>>, _>(&errors)
    .bind::<Array<Nullable<Timestamptz>>, _>(&next)
    .bind::<Array<diesel::sql_types::Bool>, _>(&counted)
    .execute(conn)
}

/// Push deliveries by outcome class: delivered, gone (device removed), retry (429 or 5xx, tried
/// again later), deferred (not sent: its push domain is not answering, see `breaker`), expired
/// (still refused at the message's TTL), failed (refused for good).
static PUSH_OUTCOMES: std::sync::LazyLock<service_kit::metrics::prometheus::IntCounterVec> =
    std::sync::LazyLock::new(|| {
        service_kit::metrics::counter_vec(
            "push_deliveries_total",
            "Push messages handed to push services, by outcome.",
            &["outcome"],
        )
    });

/// Batches claimed and sent, one claiming statement each: `push_deliveries_total` over this is
/// the mean batch size, which falls towards one as the backlog drains.
static PUSH_BATCHES: std::sync::LazyLock<service_kit::metrics::prometheus::IntCounter> =
    std::sync::LazyLock::new(|| {
        service_kit::metrics::counter(
            "push_batches_total",
            "Batches of due push messages claimed and sent, one statement each.",
        )
    });

/// Exports every outcome from the start, so that rates exist before the first push.
pub fn register_metrics() {
    std::sync::LazyLock::force(&PUSH_BATCHES);
    for outcome in [
        "delivered",
        "gone",
        "retry",
        "deferred",
        "expired",
        "failed",
    ] {
        PUSH_OUTCOMES.with_label_values(&[outcome]);
    }
}

/// Delivers every message that is due now, with up to `workers` senders each sending a batch;
/// returns when none is due and nothing is in flight, or once `shutdown` is triggered and what
/// was in flight is settled.
///
/// One sender starts, and each sender that claims its first message starts another, up to
/// `workers`: a full outbox has every sender busy within a few messages, while the idle tick
/// every few seconds costs one query on one connection instead of `workers` of each.
pub async fn drain_due(
    pool: &PgPool,
    sender: &Sender,
    workers: usize,
    lanes: &Arc<Lanes>,
    counters: &Arc<Counters>,
    shutdown: &Arc<Shutdown>,
) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Handle::current();
    let keeper = Arc::new(Keeper::new(pool.clone(), sender.timeout()));
    let renewing = {
        let keeper = Arc::clone(&keeper);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(LEASE_RENEW).await;
                let keeper = Arc::clone(&keeper);
                let _ = tokio::task::spawn_blocking(move || keeper.renew()).await;
            }
        })
    };
    let (claimed_tx, mut claimed_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let spawn = |tasks: &mut tokio::task::JoinSet<anyhow::Result<()>>| {
        let pool = pool.clone();
        let keeper = Arc::clone(&keeper);
        let sender = sender.clone();
        let lanes = Arc::clone(lanes);
        let counters = Arc::clone(counters);
        let shutdown = Arc::clone(shutdown);
        let runtime = runtime.clone();
        let claimed_tx = claimed_tx.clone();
        tasks.spawn_blocking(move || -> anyhow::Result<()> {
            let mut conn = pool.get()?;
            let first_claim = std::cell::Cell::new(true);
            let on_claim = || {
                if first_claim.replace(false) {
                    // The receiver is gone only when the drain is over.
                    let _ = claimed_tx.send(());
                }
            };
            while !shutdown.is_triggered() {
                let started = std::time::Instant::now();
                match deliver_batch(
                    &mut conn, &sender, &lanes, &keeper, workers, &counters, &runtime, &on_claim,
                )? {
                    Step::Done | Step::Raced => {}
                    // Others' sends may free a share this sender can use; with none in
                    // flight, nothing more is due.
                    Step::Idle { excluded } if lanes.in_flight() > 0 => {
                        let wait = if excluded {
                            (started.elapsed() * EXCLUDED_SEARCH_SPACING)
                                .clamp(IDLE_POLL, MAX_IDLE_POLL)
                        } else {
                            IDLE_POLL
                        };
                        std::thread::sleep(wait);
                    }
                    Step::Idle { .. } => break,
                }
            }
            Ok(())
        });
    };
    let mut tasks = tokio::task::JoinSet::new();
    spawn(&mut tasks);
    let mut started = 1;
    let mut first_error = None;
    loop {
        tokio::select! {
            Some(()) = claimed_rx.recv(), if started < workers => {
                spawn(&mut tasks);
                started += 1;
            }
            done = tasks.join_next() => match done {
                None => break,
                Some(result) => {
                    if let Err(e) = result? {
                        first_error.get_or_insert(e);
                    }
                }
            },
        }
    }
    // Messages handed to the keeper are still being sent; what was in flight is settled before
    // the drain returns (within one send time-out).
    while lanes.in_flight_now() > 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    renewing.abort();
    first_error.map_or(Ok(()), Err)
}

#[derive(QueryableByName)]
struct Pending {
    #[diesel(sql_type = Nullable<Timestamptz>)]
    next: Option<DateTime<Utc>>,
}

/// When the next pending message of `job`'s run for `slot`, or one that a sender was sending
/// when it stopped ([`IN_FLIGHT`]), falls due.
pub fn next_pending(
    conn: &mut PgConnection,
    job: &str,
    slot: NaiveDateTime,
) -> QueryResult<Option<DateTime<Utc>>> {
    let row: Pending = diesel::sql_query(
        "SELECT min(next_attempt_at) AS next FROM scheduler.outbox
          WHERE status = 'pending' AND ((job = $1 AND slot = $2) OR last_error = $3)",
    )
    .bind::<Text, _>(job)
    .bind::<Timestamp, _>(slot)
    .bind::<Text, _>(IN_FLIGHT)
    .get_result(conn)?;
    Ok(row.next)
}

/// How long settled messages and job claims are kept.
pub const RETENTION_DAYS: i32 = 30;
/// Rows deleted per statement, so that a large purge never holds long locks.
const PURGE_BATCH: i64 = 5000;

/// Deletes messages settled more than [`RETENTION_DAYS`] ago (delivered, gone, failed, expired,
/// cancelled) and job claims as old; returns how many of each.
pub fn purge(conn: &mut PgConnection) -> QueryResult<(usize, usize)> {
    let mut messages = 0;
    loop {
        let n = diesel::sql_query(
            "DELETE FROM scheduler.outbox WHERE id IN (
                SELECT id FROM scheduler.outbox
                 WHERE status <> 'pending' AND finished_at < now() - make_interval(days => $1)
                 LIMIT $2)",
        )
        .bind::<Integer, _>(RETENTION_DAYS)
        .bind::<Int8, _>(PURGE_BATCH)
        .execute(conn)?;
        messages += n;
        if i64::try_from(n).unwrap_or(i64::MAX) < PURGE_BATCH {
            break;
        }
    }
    // A claim only matters inside its job's window (hours), so a month is ample.
    let runs = diesel::sql_query(
        "DELETE FROM scheduler.job_run WHERE claimed_at < now() - make_interval(days => $1)",
    )
    .bind::<Integer, _>(RETENTION_DAYS)
    .execute(conn)?;
    Ok((messages, runs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_is_capped_and_respects_hints() {
        let first = backoff(0, Duration::ZERO);
        assert!(
            first >= Duration::from_millis(3750) && first <= Duration::from_millis(6250),
            "{first:?}"
        );
        let later = backoff(3, Duration::ZERO);
        assert!(later >= Duration::from_secs(30), "{later:?}");
        let capped = backoff(30, Duration::ZERO);
        assert!(capped <= MAX_BACKOFF.mul_f64(1.25));
        let hinted = backoff(0, Duration::from_secs(120));
        assert!(
            hinted >= Duration::from_secs(120),
            "Retry-After is honoured: {hinted:?}"
        );
    }

    #[test]
    fn one_topic_per_job_slot_and_kind() {
        let slot = chrono::NaiveDate::from_ymd_opt(2026, 11, 23)
            .and_then(|d| d.and_hms_opt(13, 0, 0))
            .expect("slot");
        let lunch = topic("meal-lunch", slot, "meal_lunch");
        assert_eq!(lunch, topic("meal-lunch", slot, "meal_lunch"));
        assert_eq!(lunch.as_str().len(), 32);
        assert_ne!(lunch, topic("meal-snack", slot, "meal_snack"));
        assert_ne!(
            lunch,
            topic("meal-lunch", slot + chrono::Duration::days(1), "meal_lunch")
        );
    }

    #[test]
    fn a_push_service_leaves_one_sender_for_the_others() {
        assert_eq!(Lanes::new(8).per_origin, 7);
        assert_eq!(Lanes::new(1).per_origin, 1);
    }
}
