//! `email_outbox`: licence e-mails queued in the transaction that made the licence, delivered
//! afterwards by the shared sender (`mailer`), for which [`MysqlOutbox`] is the storage.
//!
//! Claiming works with any number of replicas: a sender locks due rows with
//! `FOR UPDATE SKIP LOCKED` (rows another sender is claiming are skipped, not waited for), and
//! gives them its lease token and a `next_attempt_at` a lease ahead before committing, so the rows
//! are its own while it talks to SMTP outside any transaction. Every later change applies only
//! while the row still carries that token.

use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::mysql::MysqlConnection;
use diesel::prelude::*;
use mailer::QueuedMail;
use mailer::store::{Store, truncate_error};

use crate::db::MyPool;
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

pub fn enqueue(conn: &mut MysqlConnection, mail: &NewEmail) -> QueryResult<()> {
    diesel::insert_into(email_outbox::table)
        .values(mail)
        .execute(conn)?;
    Ok(())
}

pub fn for_licence(conn: &mut MysqlConnection, licence_id: &str) -> QueryResult<Vec<OutboxRow>> {
    email_outbox::table
        .filter(email_outbox::licence_id.eq(licence_id))
        .order(email_outbox::id.asc())
        .select(OutboxRow::as_select())
        .load(conn)
}

/// The sender's view of `email_outbox`.
#[derive(Clone)]
pub struct MysqlOutbox {
    pub pool: MyPool,
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

impl MysqlOutbox {
    fn conn(&self) -> anyhow::Result<service_kit::db::PooledConnection<MysqlConnection>> {
        Ok(self.pool.get()?)
    }
}

fn naive(t: DateTime<Utc>) -> NaiveDateTime {
    t.naive_utc()
}

impl Store for MysqlOutbox {
    fn claim(
        &self,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
        token: &str,
        limit: i64,
    ) -> anyhow::Result<Vec<QueuedMail>> {
        let mut conn = self.conn()?;
        let rows = conn.transaction(|conn| {
            let rows: Vec<OutboxRow> = email_outbox::table
                .filter(email_outbox::sent_at.is_null())
                .filter(email_outbox::gave_up_at.is_null())
                .filter(email_outbox::next_attempt_at.le(naive(now)))
                .order((email_outbox::next_attempt_at.asc(), email_outbox::id.asc()))
                .limit(limit)
                .select(OutboxRow::as_select())
                .for_update()
                .skip_locked()
                .load(conn)?;
            if rows.is_empty() {
                return QueryResult::Ok(rows);
            }
            let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
            diesel::update(email_outbox::table.filter(email_outbox::id.eq_any(&ids)))
                .set((
                    email_outbox::next_attempt_at.eq(naive(until)),
                    email_outbox::lease_token.eq(token),
                    email_outbox::attempts.eq(email_outbox::attempts + 1),
                ))
                .execute(conn)?;
            Ok(rows)
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
        let n = diesel::update(leased!(id, token).filter(email_outbox::gave_up_at.is_null()))
            .set(email_outbox::next_attempt_at.eq(naive(until)))
            .execute(&mut self.conn()?)?;
        Ok(n == 1)
    }

    fn mark_sent(&self, id: i64, token: &str, at: DateTime<Utc>) -> anyhow::Result<bool> {
        let n = diesel::update(leased!(id, token))
            .set((
                email_outbox::sent_at.eq(naive(at)),
                email_outbox::lease_token.eq(None::<String>),
                email_outbox::last_error.eq(None::<String>),
            ))
            .execute(&mut self.conn()?)?;
        Ok(n == 1)
    }

    fn reschedule(
        &self,
        id: i64,
        token: &str,
        at: DateTime<Utc>,
        error: &str,
    ) -> anyhow::Result<bool> {
        let n = diesel::update(leased!(id, token))
            .set((
                email_outbox::next_attempt_at.eq(naive(at)),
                email_outbox::lease_token.eq(None::<String>),
                email_outbox::last_error.eq(truncate_error(error)),
            ))
            .execute(&mut self.conn()?)?;
        Ok(n == 1)
    }

    fn park(&self, id: i64, token: &str, at: DateTime<Utc>, reason: &str) -> anyhow::Result<bool> {
        let n = diesel::update(leased!(id, token))
            .set((
                email_outbox::gave_up_at.eq(naive(at)),
                email_outbox::lease_token.eq(None::<String>),
                email_outbox::last_error.eq(truncate_error(reason)),
            ))
            .execute(&mut self.conn()?)?;
        Ok(n == 1)
    }

    fn release(&self, id: i64, token: &str, now: DateTime<Utc>) -> anyhow::Result<bool> {
        let n = diesel::update(leased!(id, token))
            .set((
                email_outbox::next_attempt_at.eq(naive(now)),
                email_outbox::lease_token.eq(None::<String>),
                email_outbox::attempts.eq(email_outbox::attempts - 1),
            ))
            .execute(&mut self.conn()?)?;
        Ok(n == 1)
    }

    fn purge(&self, before: DateTime<Utc>) -> anyhow::Result<usize> {
        Ok(diesel::delete(
            email_outbox::table.filter(
                email_outbox::sent_at
                    .lt(naive(before))
                    .or(email_outbox::gave_up_at.lt(naive(before))),
            ),
        )
        .execute(&mut self.conn()?)?)
    }
}
