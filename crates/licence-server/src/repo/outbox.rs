//! `email_outbox`: licence e-mails queued in the transaction that made the licence, delivered
//! afterwards by the shared sender (`mailer`), for which [`MysqlOutbox`] is the storage.
//!
//! Claiming works with any number of replicas: a sender locks due rows with
//! `FOR UPDATE SKIP LOCKED` (rows another sender is claiming are skipped, not waited for), and
//! gives them its lease token and a `next_attempt_at` a lease ahead before committing, so the rows
//! are its own while it talks to SMTP outside any transaction. Every later change applies only
//! while the row still carries that token.

use std::sync::Arc;

use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Double};
use diesel_async::RunQueryDsl;
use mailer::QueuedMail;
use mailer::store::{Claim, Store, truncate_error};
use service_kit::metrics::OutboxState;

use super::{Conn, Db, DbError, Pool};
use crate::repo::LicenceId;
use crate::schema::email_outbox;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = email_outbox, check_for_backend(diesel::mysql::Mysql))]
pub struct OutboxRow {
    pub id: i64,
    pub licence_id: Option<String>,
    pub to_address: String,
    pub to_name: Option<String>,
    pub subject: String,
    pub text_body: String,
    pub html_body: String,
    pub attempts: i32,
    pub next_attempt_at: NaiveDateTime,
    pub sent_at: Option<NaiveDateTime>,
    pub gave_up_at: Option<NaiveDateTime>,
    pub last_error: Option<String>,
    pub created_at: NaiveDateTime,
}

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = email_outbox)]
pub struct NewEmail {
    pub licence_id: Option<String>,
    pub to_address: String,
    pub to_name: Option<String>,
    pub subject: String,
    pub text_body: String,
    pub html_body: String,
    pub next_attempt_at: NaiveDateTime,
    pub created_at: NaiveDateTime,
}

pub(crate) async fn enqueue_on(conn: &mut Conn, mail: &NewEmail) -> QueryResult<()> {
    diesel::insert_into(email_outbox::table)
        .values(mail)
        .execute(conn)
        .await?;
    Ok(())
}

pub async fn enqueue(db: &Db, mail: &NewEmail) -> Result<(), DbError> {
    db.run(async |conn| enqueue_on(conn, mail).await).await
}

pub async fn for_licence(db: &Db, licence_id: &LicenceId) -> Result<Vec<OutboxRow>, DbError> {
    db.run(async |conn| {
        email_outbox::table
            .filter(email_outbox::licence_id.eq(licence_id))
            .order(email_outbox::id.asc())
            .select(OutboxRow::as_select())
            .load(conn)
            .await
    })
    .await
}

/// The sender's view of `email_outbox`, and the probes that read the database outside a request
/// (`/ready`, the outbox's figures in `/metrics`). The sender's [`Store`] is synchronous, run on
/// blocking threads: each call drives the repository's statements on a runtime of the outbox's
/// own, over a pool of its own, so that no worker's connections are used off their thread.
#[derive(Clone)]
pub struct MysqlOutbox {
    inner: Arc<Driven>,
}

struct Driven {
    runtime: Option<tokio::runtime::Runtime>,
    pool: Pool<Conn>,
}

impl Drop for Driven {
    fn drop(&mut self) {
        // Dropped from an async context (the server stopping): a runtime may not block there.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl MysqlOutbox {
    pub fn new(pool: Pool<Conn>) -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(Self {
            inner: Arc::new(Driven {
                runtime: Some(runtime),
                pool,
            }),
        })
    }

    /// Runs `work` with a door over the outbox's pool, to its end.
    fn block_on<T>(&self, work: impl AsyncFnOnce(&Db) -> Result<T, DbError>) -> anyhow::Result<T> {
        let runtime = self
            .inner
            .runtime
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("the outbox has stopped"))?;
        let db = Db::new(self.inner.pool.clone());
        Ok(runtime.block_on(work(&db))?)
    }

    /// Whether the database answers.
    pub fn ping(&self) -> anyhow::Result<()> {
        self.block_on(async |db| db.ping().await)
    }

    /// Depth and oldest age of the e-mails not yet sent nor given up, for `/metrics`.
    pub fn state(&self) -> anyhow::Result<OutboxState> {
        #[derive(QueryableByName)]
        struct Row {
            #[diesel(sql_type = BigInt)]
            pending: i64,
            #[diesel(sql_type = Double)]
            age: f64,
        }
        let row: Row = self.block_on(async |db| {
            db.run(async |conn| {
                diesel::sql_query(
                    "SELECT COUNT(*) AS pending,
                            CAST(COALESCE(TIMESTAMPDIFF(MICROSECOND, MIN(created_at), UTC_TIMESTAMP(6)), 0) / 1e6 AS DOUBLE) AS age
                       FROM email_outbox
                      WHERE sent_at IS NULL AND gave_up_at IS NULL",
                )
                .get_result(conn)
                .await
            })
            .await
        })?;
        Ok(OutboxState {
            pending: row.pending,
            oldest_age_seconds: row.age.max(0.0),
        })
    }

    /// One statement of the sender's, to its end.
    fn run<T>(&self, work: impl AsyncFnOnce(&mut Conn) -> QueryResult<T>) -> anyhow::Result<T> {
        self.block_on(async |db| db.run(work).await)
    }
}

/// The readiness of the database, as the outbox's connections see it.
impl service_kit::http::Readiness for MysqlOutbox {
    fn check(&self) -> Result<(), String> {
        self.ping().map_err(|e| e.to_string())
    }
}

/// Rows of `id` still leased to `token` and unsent.
macro_rules! leased {
    ($id:expr, $token:expr) => {
        email_outbox::table.filter(
            email_outbox::id
                .eq($id)
                .and(email_outbox::lease_token.eq($token))
                .and(email_outbox::sent_at.is_null()),
        )
    };
}

fn naive(t: DateTime<Utc>) -> NaiveDateTime {
    t.naive_utc()
}

/// How a sender lets go of a row it leased, and from when.
#[derive(Debug, Clone, Copy)]
enum Outcome {
    /// Sent at that moment.
    Sent(NaiveDateTime),
    /// To be tried again from that moment.
    Retry(NaiveDateTime),
    /// Given up at that moment.
    GaveUp(NaiveDateTime),
}

/// The columns the end of a lease sets: the token cleared, the outcome's moment in its own
/// column (the others are left as they are), and the last error, cleared once sent.
#[derive(AsChangeset)]
#[diesel(table_name = email_outbox)]
struct LeaseEnd {
    lease_token: Option<Option<String>>,
    sent_at: Option<NaiveDateTime>,
    next_attempt_at: Option<NaiveDateTime>,
    gave_up_at: Option<NaiveDateTime>,
    last_error: Option<Option<String>>,
}

impl MysqlOutbox {
    /// Ends the lease of row `id` with `outcome` and `error` if the row is still leased to
    /// `token` and unsent; whether it was.
    fn end_lease(
        &self,
        id: i64,
        token: &str,
        outcome: Outcome,
        error: Option<&str>,
    ) -> anyhow::Result<bool> {
        let (sent_at, next_attempt_at, gave_up_at) = match outcome {
            Outcome::Sent(at) => (Some(at), None, None),
            Outcome::Retry(at) => (None, Some(at), None),
            Outcome::GaveUp(at) => (None, None, Some(at)),
        };
        let end = LeaseEnd {
            lease_token: Some(None),
            sent_at,
            next_attempt_at,
            gave_up_at,
            last_error: Some(error.map(truncate_error)),
        };
        let n = self.run(async |conn| {
            diesel::update(leased!(id, token))
                .set(&end)
                .execute(conn)
                .await
        })?;
        Ok(n == 1)
    }
}

impl Store for MysqlOutbox {
    fn claim(&self, claim: &Claim) -> anyhow::Result<Vec<QueuedMail>> {
        let rows = self.block_on(async |db| {
            db.transaction(async |conn| {
                claim_on(conn, claim.now, claim.until, &claim.token, claim.limit).await
            })
            .await
        })?;
        Ok(rows
            .into_iter()
            .map(|r| QueuedMail {
                id: r.id,
                to_address: r.to_address,
                to_name: r.to_name,
                subject: r.subject,
                text_body: r.text_body,
                html_body: r.html_body,
                attempts: r.attempts + 1,
            })
            .collect())
    }

    fn renew(&self, id: i64, token: &str, until: DateTime<Utc>) -> anyhow::Result<bool> {
        let n = self.run(async |conn| {
            diesel::update(leased!(id, token).filter(email_outbox::gave_up_at.is_null()))
                .set(email_outbox::next_attempt_at.eq(naive(until)))
                .execute(conn)
                .await
        })?;
        Ok(n == 1)
    }

    fn mark_sent(&self, id: i64, token: &str, at: DateTime<Utc>) -> anyhow::Result<bool> {
        self.end_lease(id, token, Outcome::Sent(naive(at)), None)
    }

    fn reschedule(
        &self,
        id: i64,
        token: &str,
        at: DateTime<Utc>,
        error: &str,
    ) -> anyhow::Result<bool> {
        self.end_lease(id, token, Outcome::Retry(naive(at)), Some(error))
    }

    fn park(&self, id: i64, token: &str, at: DateTime<Utc>, reason: &str) -> anyhow::Result<bool> {
        self.end_lease(id, token, Outcome::GaveUp(naive(at)), Some(reason))
    }

    fn release(&self, id: i64, token: &str, now: DateTime<Utc>) -> anyhow::Result<bool> {
        let n = self.run(async |conn| {
            diesel::update(leased!(id, token))
                .set((
                    email_outbox::next_attempt_at.eq(naive(now)),
                    email_outbox::lease_token.eq(None::<String>),
                    email_outbox::attempts.eq(email_outbox::attempts - 1),
                ))
                .execute(conn)
                .await
        })?;
        Ok(n == 1)
    }

    fn purge(&self, before: DateTime<Utc>) -> anyhow::Result<usize> {
        self.run(async |conn| {
            diesel::delete(
                email_outbox::table.filter(
                    email_outbox::sent_at
                        .lt(naive(before))
                        .or(email_outbox::gave_up_at.lt(naive(before))),
                ),
            )
            .execute(conn)
            .await
        })
    }
}

/// Claims due rows for the sender (see [`Store::claim`]), in the caller's transaction.
async fn claim_on(
    conn: &mut Conn,
    now: DateTime<Utc>,
    until: DateTime<Utc>,
    token: &str,
    limit: i64,
) -> QueryResult<Vec<OutboxRow>> {
    let rows: Vec<OutboxRow> = email_outbox::table
        .filter(email_outbox::sent_at.is_null())
        .filter(email_outbox::gave_up_at.is_null())
        .filter(email_outbox::next_attempt_at.le(naive(now)))
        .order((email_outbox::next_attempt_at.asc(), email_outbox::id.asc()))
        .limit(limit)
        .select(OutboxRow::as_select())
        .for_update()
        .skip_locked()
        .load(conn)
        .await?;
    if rows.is_empty() {
        return Ok(rows);
    }
    let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
    diesel::update(email_outbox::table.filter(email_outbox::id.eq_any(&ids)))
        .set((
            email_outbox::next_attempt_at.eq(naive(until)),
            email_outbox::lease_token.eq(token),
            email_outbox::attempts.eq(email_outbox::attempts + 1),
        ))
        .execute(conn)
        .await?;
    Ok(rows)
}
