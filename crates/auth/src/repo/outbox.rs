//! `auth.mail_outbox`: mail queued inside the transaction that causes it ([`enqueue`]) and
//! delivered afterwards by the shared sender ([`PgOutbox`] is its storage).
//!
//! Claiming works with any number of replicas: `FOR UPDATE SKIP LOCKED` lets a sender skip rows
//! another sender is claiming, and the claim's lease (token and `next_attempt_at`) keeps them its
//! own while it talks to SMTP outside any transaction. Bodies of delivered mail are emptied, since
//! they hold single-use links that nobody needs to read again; the rows go after 30 days.

use chrono::{DateTime, Utc};
use diesel::pg::PgConnection;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer, Nullable, Text, Timestamptz};
use mailer::QueuedMail;
use mailer::store::{Claim, Store, truncate_error};
use pg_store::PgPool;
use pg_store::schema::auth::mail_outbox;

/// What the mail is for.
pub const KIND_PASSWORD_RESET: &str = "password_reset";
pub const KIND_EMAIL_VERIFICATION: &str = "email_verification";
pub const KIND_SIGN_IN_CODE: &str = "sign_in_code";
pub const KIND_VERIFICATION_CODE: &str = "verification_code";
pub const KIND_RESET_CODE: &str = "reset_code";
pub const KIND_CHANGE_EMAIL: &str = "change_email";
pub const KIND_CHANGE_EMAIL_CODE: &str = "change_email_code";
pub const KIND_TWO_FACTOR_CODE: &str = "two_factor_code";
pub const KIND_NEW_DEVICE: &str = "new_device";

/// A mail to queue. The templates of [`crate::mail`] fill everything but the address:
/// `mail::password_reset(&link, &name).to(&email)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMail {
    pub to: String,
    /// The recipient's name for the `To` header (control characters are removed when sent).
    pub to_name: Option<String>,
    pub subject: String,
    pub text: String,
    pub html: String,
    pub kind: &'static str,
}

impl NewMail {
    /// The same mail addressed to `address`.
    #[must_use]
    pub fn to(mut self, address: &str) -> Self {
        address.clone_into(&mut self.to);
        self
    }
}

#[derive(Insertable)]
#[diesel(table_name = mail_outbox)]
struct Row<'a> {
    kind: &'a str,
    to_address: &'a str,
    to_name: Option<&'a str>,
    subject: &'a str,
    text_body: &'a str,
    html_body: &'a str,
}

/// Queues `mail` on `conn`; call it inside the transaction of the change that causes the mail, so
/// that both happen or neither. Wake the sender after the commit (`AppState::wake_mailer`).
pub fn enqueue(conn: &mut PgConnection, mail: &NewMail) -> QueryResult<i64> {
    diesel::insert_into(mail_outbox::table)
        .values(Row {
            kind: mail.kind,
            to_address: mail.to.trim(),
            to_name: mail.to_name.as_deref(),
            subject: &mail.subject,
            text_body: &mail.text,
            html_body: &mail.html,
        })
        .returning(mail_outbox::id)
        .get_result(conn)
}

/// The sender's view of `auth.mail_outbox`.
#[derive(Clone)]
pub struct PgOutbox {
    pub pool: PgPool,
}

#[derive(QueryableByName)]
struct Claimed {
    #[diesel(sql_type = BigInt)]
    id: i64,
    #[diesel(sql_type = Text)]
    to_address: String,
    #[diesel(sql_type = Nullable<Text>)]
    to_name: Option<String>,
    #[diesel(sql_type = Text)]
    subject: String,
    #[diesel(sql_type = Text)]
    text_body: String,
    #[diesel(sql_type = Text)]
    html_body: String,
    #[diesel(sql_type = Integer)]
    attempts: i32,
}

impl PgOutbox {
    fn conn(&self) -> anyhow::Result<service_kit::db::PooledConnection<PgConnection>> {
        Ok(self.pool.get()?)
    }
}

/// Rows of `id` still leased to `token` and unsent.
macro_rules! leased {
    ($id:expr, $token:expr) => {
        mail_outbox::table.filter(
            mail_outbox::id
                .eq($id)
                .and(mail_outbox::lease_token.eq($token))
                .and(mail_outbox::sent_at.is_null()),
        )
    };
}

impl Store for PgOutbox {
    fn claim(&self, claim: &Claim) -> anyhow::Result<Vec<QueuedMail>> {
        let rows: Vec<Claimed> = diesel::sql_query(
            "UPDATE auth.mail_outbox SET lease_token = $1, next_attempt_at = $2, \
                 attempts = attempts + 1 \
             WHERE id IN (SELECT id FROM auth.mail_outbox \
                 WHERE sent_at IS NULL AND parked_at IS NULL AND next_attempt_at <= $3 \
                 ORDER BY next_attempt_at, id LIMIT $4 FOR UPDATE SKIP LOCKED) \
             RETURNING id, to_address, to_name, subject, text_body, html_body, attempts",
        )
        .bind::<Text, _>(&claim.token)
        .bind::<Timestamptz, _>(claim.until)
        .bind::<Timestamptz, _>(claim.now)
        .bind::<BigInt, _>(claim.limit)
        .load(&mut self.conn()?)?;
        let mut mails: Vec<QueuedMail> = rows
            .into_iter()
            .map(|r| QueuedMail {
                id: r.id,
                to_address: r.to_address,
                to_name: r.to_name,
                subject: r.subject,
                text_body: r.text_body,
                html_body: r.html_body,
                attempts: r.attempts,
            })
            .collect();
        // RETURNING keeps no order; send the oldest first.
        mails.sort_by_key(|m| m.id);
        Ok(mails)
    }

    fn renew(&self, id: i64, token: &str, until: DateTime<Utc>) -> anyhow::Result<bool> {
        let n = diesel::update(leased!(id, token).filter(mail_outbox::parked_at.is_null()))
            .set(mail_outbox::next_attempt_at.eq(until))
            .execute(&mut self.conn()?)?;
        Ok(n == 1)
    }

    fn mark_sent(&self, id: i64, token: &str, at: DateTime<Utc>) -> anyhow::Result<bool> {
        let n = diesel::update(leased!(id, token))
            .set((
                mail_outbox::sent_at.eq(at),
                mail_outbox::lease_token.eq(None::<String>),
                mail_outbox::last_error.eq(None::<String>),
                mail_outbox::text_body.eq(""),
                mail_outbox::html_body.eq(""),
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
                mail_outbox::next_attempt_at.eq(at),
                mail_outbox::lease_token.eq(None::<String>),
                mail_outbox::last_error.eq(truncate_error(error)),
            ))
            .execute(&mut self.conn()?)?;
        Ok(n == 1)
    }

    fn park(&self, id: i64, token: &str, at: DateTime<Utc>, reason: &str) -> anyhow::Result<bool> {
        let n = diesel::update(leased!(id, token))
            .set((
                mail_outbox::parked_at.eq(at),
                mail_outbox::lease_token.eq(None::<String>),
                mail_outbox::last_error.eq(truncate_error(reason)),
            ))
            .execute(&mut self.conn()?)?;
        Ok(n == 1)
    }

    fn release(&self, id: i64, token: &str, now: DateTime<Utc>) -> anyhow::Result<bool> {
        let n = diesel::update(leased!(id, token))
            .set((
                mail_outbox::next_attempt_at.eq(now),
                mail_outbox::lease_token.eq(None::<String>),
                mail_outbox::attempts.eq(mail_outbox::attempts - 1),
            ))
            .execute(&mut self.conn()?)?;
        Ok(n == 1)
    }

    fn purge(&self, before: DateTime<Utc>) -> anyhow::Result<usize> {
        Ok(diesel::delete(
            mail_outbox::table.filter(
                mail_outbox::sent_at
                    .lt(before)
                    .or(mail_outbox::parked_at.lt(before)),
            ),
        )
        .execute(&mut self.conn()?)?)
    }
}
