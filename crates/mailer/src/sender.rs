//! The background sender: claims due messages under a lease, delivers them over SMTP, retries
//! passing failures with a doubling pause, parks lasting ones, purges old rows, survives its own
//! panics and stops cleanly.
//!
//! Never twice: before each message the sender renews the message's lease, and the whole SMTP
//! conversation must end within half the lease, so no other sender can claim a message while it
//! is being sent, however slow the server or long the batch; recording the delivery applies only
//! while the lease is still ours. A sender that dies mid-delivery leaves the message to be claimed
//! again when its lease runs out: at least once, never lost.
//!
//! Stopping (SIGTERM, SIGINT or [`Mailer::stop`]): no new claim; the message being sent is
//! finished and recorded; the rest of the batch is released at once for another replica.
//!
//! Scheduling uses the system clock: retries are about real elapsed time.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use chrono::Utc;
use lettre::message::Mailbox;
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use rand::Rng;
use rand::distr::Alphanumeric;
use service_kit::http::{Readiness, ReadinessProbe};
use tokio::sync::{Notify, watch};

use crate::message;
use crate::settings::SmtpSettings;
use crate::store::{Claim, QueuedMail, Store};

/// Timings of the sender. Production uses [`Options::default`]; tests shorten them.
#[derive(Debug, Clone)]
pub struct Options {
    /// How often the outbox is looked at when nothing wakes the sender.
    pub poll_interval: Duration,
    /// Pause after the first failed attempt; doubled after each further one.
    pub retry_base: Duration,
    /// Longest pause between two attempts.
    pub retry_max: Duration,
    /// How long a claimed message belongs to the sender that claimed it. One SMTP conversation
    /// may last at most half of it.
    pub lease: Duration,
    /// Longest wait for any single SMTP exchange.
    pub smtp_timeout: Duration,
    /// Messages claimed at once.
    pub batch: i64,
    /// How often delivered and parked messages past `retention` are deleted.
    pub purge_every: Duration,
    /// How long delivered and parked messages are kept.
    pub retention: Duration,
}

/// Delivered and parked messages are kept this long, then deleted.
pub const RETENTION: Duration = Duration::from_secs(30 * 24 * 3600);

impl Default for Options {
    fn default() -> Self {
        Self {
            poll_interval: Duration::from_secs(5),
            retry_base: Duration::from_secs(30),
            retry_max: Duration::from_secs(3600),
            lease: Duration::from_secs(300),
            smtp_timeout: Duration::from_secs(30),
            batch: 20,
            purge_every: Duration::from_secs(3600),
            retention: RETENTION,
        }
    }
}

impl Options {
    /// The pause after `attempts` failed attempts.
    pub fn backoff(&self, attempts: i32) -> Duration {
        let doublings = u32::try_from(attempts.saturating_sub(1).clamp(0, 20)).unwrap_or(20);
        self.retry_base
            .saturating_mul(2u32.saturating_pow(doublings))
            .min(self.retry_max)
    }

    /// The longest one SMTP conversation may take: half the lease.
    pub fn send_deadline(&self) -> Duration {
        self.lease / 2
    }
}

/// What the sender has done, for `/ready` and the metrics.
#[derive(Debug, Default)]
pub struct Health {
    /// False from a panic of the sender until its restarted loop has read the outbox again.
    down: AtomicBool,
    panics: AtomicU64,
    sent: AtomicU64,
    retried: AtomicU64,
    parked: AtomicU64,
    purged: AtomicU64,
}

impl Health {
    /// The sender is running (not restarting after a panic).
    pub fn is_up(&self) -> bool {
        !self.down.load(Ordering::Relaxed)
    }
    /// Times the sender panicked and was restarted.
    pub fn panics(&self) -> u64 {
        self.panics.load(Ordering::Relaxed)
    }
    /// Messages delivered by this process.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }
    /// Attempts that failed for a passing reason and were rescheduled.
    pub fn retried(&self) -> u64 {
        self.retried.load(Ordering::Relaxed)
    }
    /// Messages set aside for good.
    pub fn parked(&self) -> u64 {
        self.parked.load(Ordering::Relaxed)
    }
    /// Old rows deleted.
    pub fn purged(&self) -> u64 {
        self.purged.load(Ordering::Relaxed)
    }
}

/// Exports `health` with `metrics` for the outbox `outbox`: `mail_sender_up` (0 while restarting
/// after a panic), `mail_sender_panics_total` and `mail_deliveries_total{outcome}` (`sent`,
/// `retried`, `parked`, `purged`), copied from the sender's counters on each scrape.
pub fn export_metrics(
    metrics: &service_kit::metrics::ServiceMetrics,
    outbox: &'static str,
    health: Arc<Health>,
) {
    let up = metrics.gauge_vec(
        "mail_sender_up",
        "1 while the e-mail sender runs, 0 while it restarts after a panic, by outbox.",
        &["outbox"],
    );
    let panics = metrics.int_counter_vec(
        "mail_sender_panics_total",
        "Times the e-mail sender panicked and was restarted, by outbox.",
        &["outbox"],
    );
    let outcomes = metrics.int_counter_vec(
        "mail_deliveries_total",
        "E-mail delivery attempts by outcome (sent, retried, parked) and rows purged, by outbox.",
        &["outbox", "outcome"],
    );
    metrics.on_scrape(move || {
        up.with_label_values(&[outbox])
            .set(if health.is_up() { 1.0 } else { 0.0 });
        for (counter, value) in [
            (panics.with_label_values(&[outbox]), health.panics()),
            (outcomes.with_label_values(&[outbox, "sent"]), health.sent()),
            (
                outcomes.with_label_values(&[outbox, "retried"]),
                health.retried(),
            ),
            (
                outcomes.with_label_values(&[outbox, "parked"]),
                health.parked(),
            ),
            (
                outcomes.with_label_values(&[outbox, "purged"]),
                health.purged(),
            ),
        ] {
            counter.inc_by(value.saturating_sub(counter.get()));
        }
    });
}

/// `/ready` of a service that sends mail: its database probe, and 503 while the sender is
/// restarting after a panic.
pub struct SenderReadiness {
    pub inner: ReadinessProbe,
    pub health: Arc<Health>,
}

impl Readiness for SenderReadiness {
    fn check(&self) -> Result<(), String> {
        self.inner.check()?;
        if self.health.is_up() {
            Ok(())
        } else {
            Err("the e-mail sender is restarting after a failure".to_owned())
        }
    }
}

/// Handle of a running sender: wake it, read its health, stop it.
#[derive(Clone)]
pub struct Mailer {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Mailer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mailer")
            .field("health", &self.shared.health)
            .finish_non_exhaustive()
    }
}

struct Shared {
    store: Arc<dyn Store>,
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    options: Options,
    wake: Notify,
    stop: watch::Sender<bool>,
    finished: watch::Sender<bool>,
    health: Arc<Health>,
    /// The message being sent and its lease token, parked if the sender panics on it.
    current: Mutex<Option<(i64, String)>>,
}

enum Outcome {
    Sent,
    Retry(String),
    Park(String),
}

impl Mailer {
    /// Starts the sender on the current Tokio runtime. SMTP is only contacted when there is mail,
    /// so an unreachable server delays mail, never the start.
    pub fn start<S: Store>(
        store: S,
        smtp: &SmtpSettings,
        options: Options,
    ) -> anyhow::Result<Self> {
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(smtp.url.expose())
            .map_err(|_| anyhow::anyhow!("SMTP_URL is not a usable SMTP address"))?
            .timeout(Some(options.smtp_timeout))
            .build();
        let shared = Arc::new(Shared {
            store: Arc::new(store),
            transport,
            from: smtp.from.clone(),
            options,
            wake: Notify::new(),
            stop: watch::Sender::new(false),
            finished: watch::Sender::new(false),
            health: Arc::default(),
            current: Mutex::new(None),
        });
        tokio::spawn(supervise(Arc::clone(&shared)));
        tokio::spawn(stop_on_signal(Arc::clone(&shared)));
        Ok(Self { shared })
    }

    /// Looks at the outbox at once (after queueing) instead of at the next poll.
    pub fn wake(&self) {
        self.shared.wake.notify_one();
    }

    pub fn health(&self) -> Arc<Health> {
        Arc::clone(&self.shared.health)
    }

    /// Stops claiming, lets the message in flight finish and releases the rest; returns when the
    /// sender has stopped.
    pub async fn stop(&self) {
        self.shared.stop.send_replace(true);
        let mut finished = self.shared.finished.subscribe();
        let _ = finished.wait_for(|done| *done).await;
    }
}

async fn stop_on_signal(shared: Arc<Shared>) {
    let mut stop = shared.stop.subscribe();
    tokio::select! {
        () = service_kit::cli::stop_signal() => {}
        _ = stop.wait_for(|s| *s) => return,
    }
    tracing::info!("stopping the e-mail sender");
    shared.stop.send_replace(true);
}

/// Runs the sender loop, restarting it after a panic. The message it panicked on is parked so
/// that it cannot take the sender down again.
async fn supervise(shared: Arc<Shared>) {
    loop {
        let worker = tokio::spawn(work(Arc::clone(&shared)));
        match worker.await {
            Ok(()) => break,
            Err(err) if err.is_panic() => {
                shared.health.down.store(true, Ordering::Relaxed);
                shared.health.panics.fetch_add(1, Ordering::Relaxed);
                let current = shared
                    .current
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take();
                tracing::error!(
                    outbox_id = current.as_ref().map(|c| c.0),
                    "the e-mail sender failed unexpectedly; restarting it"
                );
                if let Some((id, token)) = current {
                    let store = Arc::clone(&shared.store);
                    let parked = tokio::task::spawn_blocking(move || {
                        store.park(id, &token, Utc::now(), "the sender failed on this message")
                    })
                    .await;
                    if !matches!(parked, Ok(Ok(_))) {
                        tracing::warn!(outbox_id = id, "cannot park the message");
                    }
                }
                let mut stop = shared.stop.subscribe();
                tokio::select! {
                    () = tokio::time::sleep(shared.options.poll_interval.min(Duration::from_secs(1))) => {}
                    _ = stop.wait_for(|s| *s) => {}
                }
            }
            Err(_) => break,
        }
    }
    shared.finished.send_replace(true);
}

async fn blocking<T, F>(shared: &Shared, f: F) -> anyhow::Result<T>
where
    T: Send + 'static,
    F: FnOnce(&dyn Store) -> anyhow::Result<T> + Send + 'static,
{
    let store = Arc::clone(&shared.store);
    match tokio::task::spawn_blocking(move || f(store.as_ref())).await {
        Ok(result) => result,
        // A panic in the storage is a bug like one in the sender: the supervisor handles both.
        Err(err) if err.is_panic() => std::panic::resume_unwind(err.into_panic()),
        Err(_) => Err(anyhow::anyhow!("the outbox task was cancelled")),
    }
}

fn lease_token() -> String {
    rand::rng()
        .sample_iter(Alphanumeric)
        .take(32)
        .map(char::from)
        .collect()
}

fn after(d: Duration) -> chrono::DateTime<Utc> {
    Utc::now() + chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}

async fn work(shared: Arc<Shared>) {
    let stop = shared.stop.subscribe();
    let mut last_purge: Option<Instant> = None;
    loop {
        if *stop.borrow() {
            return;
        }
        if last_purge.is_none_or(|at| at.elapsed() >= shared.options.purge_every) {
            last_purge = Some(Instant::now());
            purge(&shared).await;
        }
        let token = lease_token();
        let claim = Claim {
            now: Utc::now(),
            until: after(shared.options.lease),
            token: token.clone(),
            limit: shared.options.batch,
        };
        // Due as of the moment the claim runs, after any wait for a blocking thread.
        let claimed = blocking(&shared, move |store| {
            store.claim(&Claim {
                now: Utc::now(),
                ..claim
            })
        })
        .await;
        let batch = match claimed {
            Ok(rows) => {
                shared.health.down.store(false, Ordering::Relaxed);
                rows
            }
            Err(err) => {
                tracing::warn!(error = %err, "cannot read the e-mail outbox");
                Vec::new()
            }
        };
        if batch.is_empty() {
            let mut stop = stop.clone();
            tokio::select! {
                () = shared.wake.notified() => {}
                () = tokio::time::sleep(shared.options.poll_interval) => {}
                _ = stop.wait_for(|s| *s) => {}
            }
            continue;
        }
        let mut rows = batch.into_iter();
        while let Some(mail) = rows.next() {
            if *stop.borrow() {
                release(&shared, std::iter::once(mail).chain(rows), &token).await;
                return;
            }
            send_one(&shared, mail, &token).await;
        }
    }
}

async fn send_one(shared: &Shared, mail: QueuedMail, token: &str) {
    let id = mail.id;
    // The lease was taken for the whole batch; renew it so that this message stays ours for
    // longer than its conversation may last.
    let owned = token.to_owned();
    let until = after(shared.options.lease);
    match blocking(shared, move |store| store.renew(id, &owned, until)).await {
        Ok(true) => {}
        Ok(false) => {
            tracing::info!(
                outbox_id = id,
                "lease taken over by another sender; skipped"
            );
            return;
        }
        Err(err) => {
            tracing::warn!(outbox_id = id, error = %err, "cannot renew the lease; skipped");
            return;
        }
    }
    *shared
        .current
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = Some((id, token.to_owned()));
    let outcome = deliver(shared, &mail).await;
    record(shared, &mail, token, outcome).await;
    *shared
        .current
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = None;
}

async fn deliver(shared: &Shared, mail: &QueuedMail) -> Outcome {
    let message = match message::build(&shared.from, mail) {
        Ok(m) => m,
        Err(reason) => return Outcome::Park(reason),
    };
    let deadline = shared.options.send_deadline();
    match tokio::time::timeout(deadline, shared.transport.send(message)).await {
        Ok(Ok(_)) => Outcome::Sent,
        Ok(Err(err)) if err.is_permanent() => Outcome::Park(err.to_string()),
        Ok(Err(err)) => Outcome::Retry(err.to_string()),
        Err(_) => Outcome::Retry(format!(
            "the SMTP server did not finish within {} s",
            deadline.as_secs_f32()
        )),
    }
}

async fn record(shared: &Shared, mail: &QueuedMail, token: &str, outcome: Outcome) {
    let id = mail.id;
    let attempts = mail.attempts;
    let owned = token.to_owned();
    let result = match outcome {
        Outcome::Sent => {
            shared.health.sent.fetch_add(1, Ordering::Relaxed);
            tracing::info!(outbox_id = id, attempts, "e-mail sent");
            blocking(shared, move |store| store.mark_sent(id, &owned, Utc::now())).await
        }
        Outcome::Retry(error) => {
            shared.health.retried.fetch_add(1, Ordering::Relaxed);
            let pause = shared.options.backoff(attempts);
            tracing::warn!(outbox_id = id, attempts, ?pause, %error,
                "e-mail not delivered; will retry");
            let at = after(pause);
            blocking(shared, move |store| {
                store.reschedule(id, &owned, at, &error)
            })
            .await
        }
        Outcome::Park(reason) => {
            shared.health.parked.fetch_add(1, Ordering::Relaxed);
            tracing::error!(outbox_id = id, %reason, "e-mail set aside for good");
            blocking(shared, move |store| {
                store.park(id, &owned, Utc::now(), &reason)
            })
            .await
        }
    };
    match result {
        Ok(true) => {}
        Ok(false) => tracing::warn!(
            outbox_id = id,
            "the lease ran out before the outcome was recorded"
        ),
        // The lease runs out and the message is tried again: at least once, never lost.
        Err(err) => {
            tracing::warn!(outbox_id = id, error = %err, "cannot record the delivery outcome")
        }
    }
}

async fn release(shared: &Shared, rows: impl Iterator<Item = QueuedMail>, token: &str) {
    let ids: Vec<i64> = rows.map(|m| m.id).collect();
    let count = ids.len();
    let owned = token.to_owned();
    let released = blocking(shared, move |store| {
        let now = Utc::now();
        for id in ids {
            store.release(id, &owned, now)?;
        }
        Ok(())
    })
    .await;
    match released {
        Ok(()) => tracing::info!(count, "released unsent e-mails for another sender"),
        // Their leases run out instead.
        Err(err) => tracing::warn!(error = %err, "cannot release claimed e-mails"),
    }
}

async fn purge(shared: &Shared) {
    let Ok(retention) = chrono::Duration::from_std(shared.options.retention) else {
        return;
    };
    let before = Utc::now() - retention;
    match blocking(shared, move |store| store.purge(before)).await {
        Ok(0) => {}
        Ok(n) => {
            shared.health.purged.fetch_add(n as u64, Ordering::Relaxed);
            tracing::info!(
                count = n,
                "deleted delivered and parked e-mails past retention"
            );
        }
        Err(err) => tracing::warn!(error = %err, "cannot purge the e-mail outbox"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_maximum() {
        let o = Options::default();
        assert_eq!(o.backoff(1), Duration::from_secs(30));
        assert_eq!(o.backoff(2), Duration::from_secs(60));
        assert_eq!(o.backoff(4), Duration::from_secs(240));
        assert_eq!(o.backoff(50), Duration::from_secs(3600));
        assert_eq!(o.backoff(0), Duration::from_secs(30));
    }

    #[test]
    fn a_conversation_fits_twice_in_a_lease() {
        let o = Options::default();
        assert!(o.send_deadline() * 2 <= o.lease);
        assert!(o.smtp_timeout <= o.send_deadline());
    }
}
