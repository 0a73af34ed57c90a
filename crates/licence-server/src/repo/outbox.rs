//! `email_outbox`: licence e-mails queued in the transaction that made the licence, delivered
//! afterwards by the background sender.
//!
//! Claiming works with any number of replicas: a sender locks due rows with
//! `FOR UPDATE SKIP LOCKED` (rows another sender is claiming are skipped, not waited for) and
//! pushes their `next_attempt_at` a lease ahead before committing, so the rows are its own while
//! it talks to SMTP outside any transaction. A sender that dies mid-delivery leaves the row to be
//! picked up again when the lease runs out: delivery is at least once, never lost.

use chrono::NaiveDateTime;
use diesel::mysql::MysqlConnection;
use diesel::prelude::*;

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

/// Claims up to `batch` due messages for `lease`, counting the attempt.
pub fn claim(
    conn: &mut MysqlConnection,
    now: NaiveDateTime,
    lease: chrono::Duration,
    batch: i64,
) -> QueryResult<Vec<OutboxRow>> {
    conn.transaction(|conn| {
        let rows: Vec<OutboxRow> = email_outbox::table
            .filter(email_outbox::sent_at.is_null())
            .filter(email_outbox::gave_up_at.is_null())
            .filter(email_outbox::next_attempt_at.le(now))
            .order(email_outbox::next_attempt_at.asc())
            .limit(batch)
            .select(OutboxRow::as_select())
            .for_update()
            .skip_locked()
            .load(conn)?;
        if rows.is_empty() {
            return Ok(rows);
        }
        let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
        diesel::update(email_outbox::table.filter(email_outbox::id.eq_any(&ids)))
            .set((
                email_outbox::next_attempt_at.eq(now + lease),
                email_outbox::attempts.eq(email_outbox::attempts + 1),
            ))
            .execute(conn)?;
        Ok(rows
            .into_iter()
            .map(|mut r| {
                r.attempts += 1;
                r
            })
            .collect())
    })
}

pub fn mark_sent(conn: &mut MysqlConnection, id: i64, at: NaiveDateTime) -> QueryResult<()> {
    diesel::update(email_outbox::table.find(id))
        .set((
            email_outbox::sent_at.eq(at),
            email_outbox::last_error.eq(None::<String>),
        ))
        .execute(conn)?;
    Ok(())
}

pub fn retry_later(
    conn: &mut MysqlConnection,
    id: i64,
    at: NaiveDateTime,
    error: &str,
) -> QueryResult<()> {
    diesel::update(email_outbox::table.find(id))
        .set((
            email_outbox::next_attempt_at.eq(at),
            email_outbox::last_error.eq(truncate(error)),
        ))
        .execute(conn)?;
    Ok(())
}

pub fn give_up(
    conn: &mut MysqlConnection,
    id: i64,
    at: NaiveDateTime,
    error: &str,
) -> QueryResult<()> {
    diesel::update(email_outbox::table.find(id))
        .set((
            email_outbox::gave_up_at.eq(at),
            email_outbox::last_error.eq(truncate(error)),
        ))
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

fn truncate(error: &str) -> String {
    error.chars().take(1000).collect()
}
