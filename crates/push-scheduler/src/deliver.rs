//! Draining the outbox. Each message is claimed with `FOR UPDATE SKIP LOCKED` in its own
//! transaction, sent, and its outcome written before the commit: two processes never send the
//! same row, and a process killed mid-send leaves its row untouched for the next one (the
//! database drops the dead connection's lock at once).
//!
//! Outcomes: 2xx delivered; 404/410 the device is deleted; 429 waits `Retry-After`; 5xx and
//! time-outs retry with exponential backoff and jitter until the message's expiry; 400/401/403/413
//! are failures, logged as configuration errors (bad VAPID keys, a payload the service refuses).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Int8, Integer, Text, Timestamptz};
use nutrition_store::PgPool;
use push::{Outcome, Sender};
use rand::Rng;

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

#[derive(QueryableByName)]
struct Claimed {
    #[diesel(sql_type = Int8)]
    id: i64,
    #[diesel(sql_type = Text)]
    device_id: String,
    #[diesel(sql_type = Text)]
    endpoint: String,
    #[diesel(sql_type = Text)]
    p256dh: String,
    #[diesel(sql_type = Text)]
    auth: String,
    #[diesel(sql_type = diesel::sql_types::Jsonb)]
    payload: serde_json::Value,
    #[diesel(sql_type = Integer)]
    attempts: i32,
    #[diesel(sql_type = Timestamptz)]
    expires_at: DateTime<Utc>,
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

/// Sends one due message, if there is one. `Ok(false)`: nothing was due.
fn deliver_one(
    conn: &mut PgConnection,
    sender: &Sender,
    counters: &Counters,
    runtime: &tokio::runtime::Handle,
) -> QueryResult<bool> {
    conn.transaction(|conn| {
        let claimed: Option<Claimed> = diesel::sql_query(
            "SELECT id, device_id, endpoint, p256dh, auth, payload, attempts, expires_at
               FROM scheduler.outbox
              WHERE status = 'pending' AND next_attempt_at <= now()
              ORDER BY next_attempt_at, id
              LIMIT 1
              FOR UPDATE SKIP LOCKED",
        )
        .get_result(conn)
        .optional()?;
        let Some(row) = claimed else {
            return Ok(false);
        };
        let now = Utc::now();
        if row.expires_at <= now {
            finish(conn, row.id, "expired", Some("expired before delivery"))?;
            counters.failed.fetch_add(1, Ordering::Relaxed);
            return Ok(true);
        }
        let sub = push::Subscription {
            endpoint: row.endpoint.clone(),
            p256dh: row.p256dh.clone(),
            auth: row.auth.clone(),
        };
        let body = serde_json::to_vec(&row.payload).unwrap_or_default();
        let ttl = (row.expires_at - now).to_std().unwrap_or(Duration::from_secs(60));
        // The row stays locked while the push service is asked: no other process can take it.
        let outcome = runtime.block_on(sender.send(&sub, &body, ttl));
        match outcome {
            Outcome::Delivered => {
                finish(conn, row.id, "delivered", None)?;
                counters.sent.fetch_add(1, Ordering::Relaxed);
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
            }
            Outcome::RetryAfter(hint) => {
                let delay = backoff(row.attempts, hint);
                let next = now + chrono::Duration::from_std(delay).unwrap_or(chrono::Duration::seconds(60));
                if next >= row.expires_at {
                    finish(conn, row.id, "expired", Some("still refused when the message expired"))?;
                    counters.failed.fetch_add(1, Ordering::Relaxed);
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
            }
        }
        Ok(true)
    })
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
    .bind::<diesel::sql_types::Nullable<Text>, _>(error)
    .execute(conn)
}

/// Delivers every message that is due now, with up to `workers` sends in flight; returns when
/// none is due.
pub async fn drain_due(
    pool: &PgPool,
    sender: &Sender,
    workers: usize,
    counters: &Arc<Counters>,
) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Handle::current();
    let mut tasks = Vec::with_capacity(workers);
    for _ in 0..workers.max(1) {
        let pool = pool.clone();
        let sender = sender.clone();
        let counters = Arc::clone(counters);
        let runtime = runtime.clone();
        tasks.push(tokio::task::spawn_blocking(
            move || -> anyhow::Result<()> {
                let mut conn = pool.get()?;
                while deliver_one(&mut conn, &sender, &counters, &runtime)? {}
                Ok(())
            },
        ));
    }
    for task in tasks {
        task.await??;
    }
    Ok(())
}

#[derive(QueryableByName)]
struct Pending {
    #[diesel(sql_type = diesel::sql_types::Nullable<Timestamptz>)]
    next: Option<DateTime<Utc>>,
}

/// When the next pending message of `job`'s run for `slot` falls due.
pub fn next_pending(
    conn: &mut PgConnection,
    job: &str,
    slot: chrono::NaiveDateTime,
) -> QueryResult<Option<DateTime<Utc>>> {
    let row: Pending = diesel::sql_query(
        "SELECT min(next_attempt_at) AS next FROM scheduler.outbox
          WHERE status = 'pending' AND job = $1 AND slot = $2",
    )
    .bind::<Text, _>(job)
    .bind::<diesel::sql_types::Timestamp, _>(slot)
    .get_result(conn)?;
    Ok(row.next)
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
}
