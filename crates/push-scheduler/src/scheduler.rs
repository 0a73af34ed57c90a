//! Running jobs: `fire` (one run, then delivery of what it queued) and the `serve` loop (every
//! job on its schedule, plus continuous delivery of the outbox).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use pg_store::PgPool;
use push::Sender;
use serde::Serialize;
use tokio::sync::Notify;

use crate::deliver::{self, Counters, Lanes, Shutdown};
use crate::jobs::{self, Job};
use crate::run;

/// The longest the scheduler sleeps before reading the wall clock again, so that a suspended
/// host or a changed clock is noticed within a minute.
const MAX_SLEEP: Duration = Duration::from_secs(60);
/// How often `serve` looks for outbox rows whose retry time has come.
const DELIVERY_TICK: Duration = Duration::from_secs(2);
/// How often `serve` purges settled messages and old claims.
const MAINTENANCE_EVERY: Duration = Duration::from_secs(3600);

#[derive(Clone)]
pub struct Scheduler {
    pool: PgPool,
    sender: Sender,
    workers: usize,
    lanes: Arc<Lanes>,
    shutdown: Arc<Shutdown>,
}

/// The JSON line `fire` prints.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub job: String,
    /// The Rome wall-clock slot, or `null` when `--at` is outside every window of the job.
    pub slot: Option<String>,
    pub already_ran: bool,
    pub queued: i64,
    pub sent: u64,
    pub skipped: i64,
    pub removed: u64,
    pub failed: u64,
    /// Messages waiting for a retry after the wait ended; `serve` or a later `fire` sends them.
    pub pending: bool,
}

impl Scheduler {
    /// `workers` senders; each holds one pooled connection while its batch is in flight.
    pub fn new(pool: PgPool, sender: Sender, workers: usize) -> Self {
        let workers = workers.max(1);
        Self {
            pool,
            sender,
            workers,
            lanes: Arc::new(Lanes::new(workers)),
            shutdown: Arc::new(Shutdown::default()),
        }
    }

    /// Asks `fire` and `serve` to stop: no new run starts, no new message is taken, and what is in
    /// flight is finished and recorded.
    pub fn shutdown(&self) -> Arc<Shutdown> {
        Arc::clone(&self.shutdown)
    }

    async fn drain(&self, counters: &Arc<Counters>) -> anyhow::Result<()> {
        deliver::drain_due(
            &self.pool,
            &self.sender,
            self.workers,
            &self.lanes,
            counters,
            &self.shutdown,
        )
        .await
    }

    /// Purges messages and claims settled more than 30 days ago.
    pub async fn maintain(&self) -> anyhow::Result<()> {
        let pool = self.pool.clone();
        let (messages, runs) = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
            let mut conn = pool.get()?;
            Ok(deliver::purge(&mut conn)?)
        })
        .await??;
        if messages + runs > 0 {
            tracing::info!(messages, runs, "purged settled messages and old job claims");
        }
        Ok(())
    }

    async fn run_slot(
        &self,
        job: Job,
        slot: jobs::Slot,
        at: DateTime<Utc>,
    ) -> anyhow::Result<run::Queued> {
        let pool = self.pool.clone();
        let shutdown = Arc::clone(&self.shutdown);
        let queued = tokio::task::spawn_blocking(move || -> anyhow::Result<run::Queued> {
            let mut conn = pool.get()?;
            Ok(run::run(&mut conn, job, slot, at, &shutdown)?)
        })
        .await??;
        if !queued.already_ran {
            tracing::info!(job = job.name(), slot = %slot.local, queued = queued.queued, skipped = queued.skipped, "job ran");
        }
        Ok(queued)
    }

    /// One run of `job` as if the time were `at`, then delivery of what it queued, waiting at most
    /// `wait` for retries.
    pub async fn fire(
        &self,
        job: Job,
        at: DateTime<Utc>,
        wait: Duration,
    ) -> anyhow::Result<Report> {
        let Some(slot) = jobs::due_slot(job, at) else {
            return Ok(Report {
                job: job.name().to_owned(),
                slot: None,
                already_ran: false,
                queued: 0,
                sent: 0,
                skipped: 0,
                removed: 0,
                failed: 0,
                pending: false,
            });
        };
        let queued = self.run_slot(job, slot, at).await?;
        let counters = Arc::new(Counters::default());
        let deadline = tokio::time::Instant::now() + wait;
        // Deliver, then wait for the retries of this run's messages until the deadline.
        let pending = loop {
            self.drain(&counters).await?;
            if self.shutdown.is_triggered() {
                break true;
            }
            let pool = self.pool.clone();
            let next = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
                let mut conn = pool.get()?;
                Ok(deliver::next_pending(&mut conn, job.name(), slot.local)?)
            })
            .await??;
            let Some(next) = next else { break false };
            let until = (next - Utc::now())
                .to_std()
                .unwrap_or(Duration::ZERO)
                .max(Duration::from_millis(50));
            if tokio::time::Instant::now() + until > deadline {
                break true;
            }
            tokio::select! {
                () = tokio::time::sleep(until) => {}
                () = self.shutdown.wait() => {}
            }
        };
        if let Err(e) = self.maintain().await {
            tracing::warn!(error = %e, "purging settled messages failed");
        }
        let (sent, removed, failed, _) = counters.snapshot();
        Ok(Report {
            job: job.name().to_owned(),
            slot: Some(slot.local.format("%Y-%m-%dT%H:%M:%S").to_string()),
            already_ran: queued.already_ran,
            queued: queued.queued,
            sent,
            skipped: queued.skipped,
            removed,
            failed,
            pending,
        })
    }

    /// Runs every job on its schedule and keeps delivering, until [`Self::shutdown`] is
    /// triggered; then lets the senders finish what they hold and returns. A slot missed while the
    /// process was down runs at start-up if it is still inside its window.
    pub async fn serve(self) {
        let wake = Arc::new(Notify::new());
        let delivery = {
            let this = self.clone();
            let wake = Arc::clone(&wake);
            tokio::spawn(async move { this.deliver_forever(wake).await })
        };
        let maintenance = {
            let this = self.clone();
            tokio::spawn(async move { this.maintain_forever().await })
        };
        let mut last: HashMap<Job, chrono::NaiveDateTime> = HashMap::new();
        while !self.shutdown.is_triggered() {
            let now = Utc::now();
            for job in Job::ALL {
                if self.shutdown.is_triggered() {
                    break;
                }
                let Some(slot) = jobs::due_slot(job, now) else {
                    continue;
                };
                if last.get(&job) == Some(&slot.local) {
                    continue;
                }
                match self.run_slot(job, slot, now).await {
                    Ok(_) => {
                        last.insert(job, slot.local);
                        wake.notify_one();
                    }
                    Err(e) => {
                        tracing::warn!(job = job.name(), error = %e, "job run failed; retrying shortly")
                    }
                }
            }
            let next = Job::ALL
                .into_iter()
                .filter_map(|j| jobs::next_slot(j, now))
                .map(|s| s.at)
                .min();
            let sleep = next
                .and_then(|t| (t - Utc::now()).to_std().ok())
                .unwrap_or(Duration::ZERO)
                .min(MAX_SLEEP)
                .max(Duration::from_millis(200));
            tokio::select! {
                () = tokio::time::sleep(sleep) => {}
                () = self.shutdown.wait() => {}
            }
            if delivery.is_finished() && !self.shutdown.is_triggered() {
                tracing::error!("the delivery loop stopped");
                return;
            }
        }
        maintenance.abort();
        if delivery.await.is_err() {
            tracing::error!("the delivery loop failed while stopping");
        }
        tracing::info!("push delivery stopped");
    }

    async fn maintain_forever(self) {
        loop {
            if let Err(e) = self.maintain().await {
                tracing::warn!(error = %e, "purging settled messages failed; retrying later");
            }
            tokio::time::sleep(MAINTENANCE_EVERY).await;
        }
    }

    async fn deliver_forever(self, wake: Arc<Notify>) {
        let counters = Arc::new(Counters::default());
        while !self.shutdown.is_triggered() {
            if let Err(e) = self.drain(&counters).await {
                tracing::warn!(error = %e, "delivery failed; retrying shortly");
            }
            tokio::select! {
                () = wake.notified() => {}
                () = tokio::time::sleep(DELIVERY_TICK) => {}
                () = self.shutdown.wait() => {}
            }
        }
    }
}
