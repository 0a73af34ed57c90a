//! Draining the outbox. Each message is claimed with `FOR UPDATE SKIP LOCKED` in its own
//! transaction, sent, and its outcome written before the commit: two processes never send the
//! same row, and a process killed mid-send leaves its row untouched for the next one (the
//! database drops the dead connection's lock at once). The claim is one statement, and the outcome
//! is committed without waiting for the WAL flush (see [`deliver_one`]).
//!
//! Outcomes: 2xx delivered; 404/410 the device is deleted; 429 waits `Retry-After`; 5xx and
//! time-outs retry with exponential backoff and jitter until the message's expiry; 400/401/403/413
//! are failures, logged as configuration errors (bad VAPID keys, a payload the service refuses).
//!
//! A message follows its device, not the user it was queued for: it is sent with the device's
//! current endpoint and keys, and cancelled when the device is gone or no longer that user's (the
//! browser was removed, replaced, or taken over by another user on a shared computer). The device
//! row is share-locked while the message is in flight, so removing the device waits for that one
//! send and no later one can start.
//!
//! Fairness: senders take the message that expires first, each user's first device before
//! anyone's second ([`Lanes`] and the `fair_rank` column), and one process never gives more than
//! [`PER_USER`] senders to one user or all of its senders to one push service.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, Int8, Integer, Nullable, Text, Timestamp, Timestamptz};
use nutrition_store::PgPool;
use push::{Options, Outcome, Sender, Topic};
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

/// Asked to stop: senders finish the message they hold and take no other.
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
/// occupy two senders, never all of them.
pub const PER_USER: usize = 2;

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

/// What this process has in flight, per user and per push-service origin.
#[derive(Debug)]
pub struct Lanes {
    per_origin: usize,
    counts: Mutex<LaneCounts>,
}

#[derive(Debug, Default)]
struct LaneCounts {
    users: HashMap<String, usize>,
    origins: HashMap<String, usize>,
    total: usize,
}

impl Lanes {
    /// Lanes for `workers` senders: one push service may take all but one of them, so a slow one
    /// always leaves a sender for everyone else.
    pub fn new(workers: usize) -> Self {
        Self {
            per_origin: workers.saturating_sub(1).max(1),
            counts: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LaneCounts> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn in_flight(&self) -> usize {
        self.lock().total
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

    /// Counts a claimed message in its lanes, or `None` when its user's or push service's share
    /// filled up since [`Self::full`] was read.
    fn take(&self, user: &str, origin: &str) -> Option<Held<'_>> {
        let mut counts = self.lock();
        let counts = &mut *counts;
        if counts.users.get(user).copied().unwrap_or(0) >= PER_USER
            || counts.origins.get(origin).copied().unwrap_or(0) >= self.per_origin
        {
            return None;
        }
        *counts.users.entry(user.to_owned()).or_default() += 1;
        *counts.origins.entry(origin.to_owned()).or_default() += 1;
        counts.total += 1;
        Some(Held {
            lanes: self,
            user: user.to_owned(),
            origin: origin.to_owned(),
        })
    }
}

/// A claimed message counted in its lanes until dropped.
struct Held<'a> {
    lanes: &'a Lanes,
    user: String,
    origin: String,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let mut c = self.lanes.lock();
        let c = &mut *c;
        for (map, key) in [(&mut c.users, &self.user), (&mut c.origins, &self.origin)] {
            if let Some(n) = map.get_mut(key) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    map.remove(key);
                }
            }
        }
        c.total = c.total.saturating_sub(1);
    }
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
    /// A message was settled (sent, retried, cancelled, expired, failed).
    Done,
    /// Nothing this sender may take now; `excluded` when full shares were left out of the search.
    Idle { excluded: bool },
    /// The claimed message's user or push service filled up meanwhile; it was left for later.
    Raced,
}

/// The claim: the next due message outside the full shares, locked, with its device as it is
/// now, share-locked until the commit so that deleting the device waits for this send. One
/// statement, so that a message costs one round trip before the send.
const CLAIM: &str = "
    SELECT o.id, o.job, o.slot, o.user_id, o.device_id, o.origin, o.payload, o.attempts,
           o.expires_at, d.endpoint, d.p256dh, d.auth
      FROM (SELECT id, job, slot, user_id, device_id, origin, payload, attempts, expires_at
              FROM scheduler.outbox
             WHERE status = 'pending' AND next_attempt_at <= now()
               AND NOT (user_id = ANY($1)) AND NOT (COALESCE(origin, '') = ANY($2))
             ORDER BY expires_at, fair_rank, id
             LIMIT 1
             FOR UPDATE SKIP LOCKED) o
      LEFT JOIN LATERAL (SELECT endpoint, p256dh, auth FROM nutrition.device_token
                          WHERE id = o.device_id AND user_id = o.user_id
                          FOR KEY SHARE) d ON true";

/// Claims the next message this process may take and settles it.
fn deliver_one(
    conn: &mut PgConnection,
    sender: &Sender,
    lanes: &Lanes,
    counters: &Counters,
    runtime: &tokio::runtime::Handle,
    on_claim: &dyn Fn(),
) -> QueryResult<Step> {
    conn.transaction(|conn| {
        // The full shares are read, the claim made without holding the lanes (so that senders
        // claim in parallel), and the share taken afterwards: a sender that lost the race for
        // the last place of a user or push service puts the message back.
        let (full_users, full_origins) = lanes.full();
        let excluded = !(full_users.is_empty() && full_origins.is_empty());
        let claimed: Option<Claimed> = diesel::sql_query(CLAIM)
            .bind::<Array<Text>, _>(&full_users)
            .bind::<Array<Text>, _>(&full_origins)
            .get_result(conn)
            .optional()?;
        let Some(row) = claimed else {
            return Ok(Step::Idle { excluded });
        };
        let Some(_held) = lanes.take(&row.user_id, row.origin.as_deref().unwrap_or_default())
        else {
            return Ok(Step::Raced);
        };
        on_claim();
        let now = Utc::now();
        if row.expires_at <= now {
            finish(conn, row.id, "expired", Some("expired before delivery"))?;
            counters.failed.fetch_add(1, Ordering::Relaxed);
            return Ok(Step::Done);
        }
        let (Some(endpoint), Some(p256dh), Some(auth)) = (row.endpoint, row.p256dh, row.auth)
        else {
            finish(conn, row.id, "cancelled", Some("the device left its user"))?;
            return Ok(Step::Done);
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
        // The row stays locked while the push service is asked: no other process can take it.
        let outcome = runtime.block_on(sender.send_with(&sub, &body, &options));
        // The outcome is committed without waiting for the WAL flush: only a crash of Postgres
        // itself in the next fraction of a second can lose it, and then the message is sent
        // again, which its Topic collapses at the push service: the same window as a sender
        // that dies before its commit. Waiting for the flush would cost a disk sync per message.
        diesel::sql_query("SET LOCAL synchronous_commit = off").execute(conn)?;
        match outcome {
            Outcome::Delivered => {
                finish(conn, row.id, "delivered", None)?;
                counters.sent.fetch_add(1, Ordering::Relaxed);
                PUSH_OUTCOMES.with_label_values(&["delivered"]).inc();
            }
            Outcome::Gone => {
                diesel::sql_query("DELETE FROM nutrition.device_token WHERE id = $1")
                    .bind::<Text, _>(&row.device_id)
                    .execute(conn)?;
                // Nothing else queued for that device can be delivered either.
                diesel::sql_query(
                    "UPDATE scheduler.outbox SET status = 'gone', finished_at = now(), last_error = 'subscription gone'
                      WHERE device_id = $1 AND status = 'pending'",
                )
                .bind::<Text, _>(&row.device_id)
                .execute(conn)?;
                counters.removed.fetch_add(1, Ordering::Relaxed);
                PUSH_OUTCOMES.with_label_values(&["gone"]).inc();
            }
            Outcome::RetryAfter(hint) => {
                let delay = backoff(row.attempts, hint);
                let next = now + chrono::Duration::from_std(delay).unwrap_or(chrono::Duration::seconds(60));
                if next >= row.expires_at {
                    finish(conn, row.id, "expired", Some("still refused when the message expired"))?;
                    counters.failed.fetch_add(1, Ordering::Relaxed);
                    PUSH_OUTCOMES.with_label_values(&["expired"]).inc();
                } else {
                    diesel::sql_query(
                        "UPDATE scheduler.outbox
                            SET attempts = attempts + 1, next_attempt_at = $2, last_error = $3
                          WHERE id = $1",
                    )
                    .bind::<Int8, _>(row.id)
                    .bind::<Timestamptz, _>(next)
                    .bind::<Text, _>(format!("retry in {} s", delay.as_secs()))
                    .execute(conn)?;
                    counters.retried.fetch_add(1, Ordering::Relaxed);
                    PUSH_OUTCOMES.with_label_values(&["retry"]).inc();
                }
            }
            Outcome::Failed { status, reason } => {
                tracing::error!(
                    outbox_id = row.id,
                    ?status,
                    %reason,
                    "push refused: check the VAPID keys and the payload (configuration error)"
                );
                finish(conn, row.id, "failed", Some(&format!("{status:?}: {reason}")))?;
                counters.failed.fetch_add(1, Ordering::Relaxed);
                PUSH_OUTCOMES.with_label_values(&["failed"]).inc();
            }
        }
        Ok(Step::Done)
    })
}

/// Push deliveries by outcome class: delivered, gone (device removed), retry (429 or 5xx, tried
/// again later), expired (still refused at the message's TTL), failed (refused for good).
static PUSH_OUTCOMES: std::sync::LazyLock<service_kit::metrics::prometheus::IntCounterVec> =
    std::sync::LazyLock::new(|| {
        service_kit::metrics::counter_vec(
            "push_deliveries_total",
            "Push messages handed to push services, by outcome.",
            &["outcome"],
        )
    });

/// Exports every outcome from the start, so that rates exist before the first push.
pub fn register_metrics() {
    for outcome in ["delivered", "gone", "retry", "expired", "failed"] {
        PUSH_OUTCOMES.with_label_values(&[outcome]);
    }
}

fn finish(
    conn: &mut PgConnection,
    id: i64,
    status: &str,
    error: Option<&str>,
) -> QueryResult<usize> {
    diesel::sql_query(
        "UPDATE scheduler.outbox
            SET status = $2, attempts = attempts + 1, finished_at = now(), last_error = $3
          WHERE id = $1",
    )
    .bind::<Int8, _>(id)
    .bind::<Text, _>(status)
    .bind::<Nullable<Text>, _>(error)
    .execute(conn)
}

/// Delivers every message that is due now, with up to `workers` sends in flight; returns when
/// none is due and nothing is in flight, or once `shutdown` is triggered and what was in flight
/// is settled.
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
    let (claimed_tx, mut claimed_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let spawn = |tasks: &mut tokio::task::JoinSet<anyhow::Result<()>>| {
        let pool = pool.clone();
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
                match deliver_one(&mut conn, &sender, &lanes, &counters, &runtime, &on_claim)? {
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
    first_error.map_or(Ok(()), Err)
}

#[derive(QueryableByName)]
struct Pending {
    #[diesel(sql_type = Nullable<Timestamptz>)]
    next: Option<DateTime<Utc>>,
}

/// When the next pending message of `job`'s run for `slot` falls due.
pub fn next_pending(
    conn: &mut PgConnection,
    job: &str,
    slot: NaiveDateTime,
) -> QueryResult<Option<DateTime<Utc>>> {
    let row: Pending = diesel::sql_query(
        "SELECT min(next_attempt_at) AS next FROM scheduler.outbox
          WHERE status = 'pending' AND job = $1 AND slot = $2",
    )
    .bind::<Text, _>(job)
    .bind::<Timestamp, _>(slot)
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
