//! Everything held about one buyer, found by e-mail address: export (GDPR arts. 15 and 20) and
//! erasure by tombstone (art. 17).
//!
//! A buyer is the address on their licences. Export reads every table of the database that has a
//! `licence_id` column, whichever service version added it, so that a new table is exported
//! without a change here. Erasure replaces the name and address with a tombstone on the licences
//! and in the mail outbox and empties the bodies of the mails, which greet the buyer by name;
//! licences, activations and usage stay, so that the installations already activated keep
//! working.

use diesel::prelude::*;
use diesel::sql_types::{Nullable, Text};
use diesel_async::RunQueryDsl;
use serde_json::{Map, Value};

use super::{Conn, Db, DbError};

#[derive(QueryableByName)]
struct Json {
    #[diesel(sql_type = Nullable<Text>)]
    j: Option<String>,
}

#[derive(QueryableByName)]
struct Name {
    #[diesel(sql_type = Text)]
    name: String,
}

/// The address with which erasure replaces a buyer's: unique per licence, never deliverable
/// (`.invalid` is reserved), and holding nothing about the person.
pub fn tombstone(licence_id: &str) -> String {
    format!("erased-{licence_id}@erased.invalid")
}

pub const TOMBSTONE_NAME: &str = "erased";

/// Ids of the buyer's licences; addresses compare without regard to case.
async fn licence_ids(conn: &mut Conn, email: &str) -> QueryResult<Vec<String>> {
    Ok(diesel::sql_query(
        "SELECT id AS name FROM licence WHERE LOWER(customer_email) = LOWER(?) ORDER BY created_at, id",
    )
    .bind::<Text, _>(email)
    .load::<Name>(conn)
    .await?
    .into_iter()
    .map(|n| n.name)
    .collect())
}

fn quote_ident(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// Rows of `table` matching `filter` (SQL over the table's own columns, with `binds` `?`
/// placeholders, each bound to the address), each as a JSON object.
async fn rows_as_json(
    conn: &mut Conn,
    table: &str,
    filter: &str,
    email: &str,
    binds: usize,
) -> QueryResult<Vec<Value>> {
    let columns: Vec<String> = diesel::sql_query(
        "SELECT column_name AS name FROM information_schema.columns
          WHERE table_schema = DATABASE() AND table_name = ? ORDER BY ordinal_position",
    )
    .bind::<Text, _>(table)
    .load::<Name>(conn)
    .await?
    .into_iter()
    .map(|n| n.name)
    .collect();
    if columns.is_empty() {
        return Ok(Vec::new());
    }
    let pairs: Vec<String> = columns
        .iter()
        .map(|c| format!("'{}', {}", c.replace('\'', "''"), quote_ident(c)))
        .collect();
    let sql = format!(
        "SELECT CAST(JSON_OBJECT({}) AS CHAR) AS j FROM {} WHERE {filter}",
        pairs.join(", "),
        quote_ident(table)
    );
    let mut query = diesel::sql_query(sql).into_boxed();
    for _ in 0..binds {
        query = query.bind::<Text, _>(email.to_owned());
    }
    Ok(query
        .load::<Json>(conn)
        .await?
        .into_iter()
        .filter_map(|r| r.j.and_then(|j| serde_json::from_str(&j).ok()))
        .collect())
}

/// Every row about the buyer with this address, by table; `None` when no licence has it and no
/// mail was addressed to it.
/// The licences bought with `email` (compared without regard to case), oldest first.
pub async fn licences_of(
    db: &Db,
    email: &str,
) -> Result<Vec<super::licences::LicenceRow>, DbError> {
    use crate::schema::licence;
    let email = email.trim();
    db.run(async |conn| {
        licence::table
            .filter(
                diesel::dsl::sql::<diesel::sql_types::Bool>("LOWER(customer_email) = LOWER(")
                    .bind::<Text, _>(email)
                    .sql(")"),
            )
            .order((licence::created_at.asc(), licence::id.asc()))
            .select(super::licences::LicenceRow::as_select())
            .load(conn)
            .await
    })
    .await
}

pub async fn export(db: &Db, email: &str) -> Result<Option<Value>, DbError> {
    db.transaction(async |conn| {
        let in_ids =
            "`licence_id` IN (SELECT id FROM licence WHERE LOWER(customer_email) = LOWER(?))";
        let mut tables = Map::new();
        tables.insert(
            "licence".into(),
            Value::Array(
                rows_as_json(
                    conn,
                    "licence",
                    "LOWER(`customer_email`) = LOWER(?)",
                    email,
                    1,
                )
                .await?,
            ),
        );
        let linked: Vec<String> = diesel::sql_query(
            "SELECT table_name AS name FROM information_schema.columns
              WHERE table_schema = DATABASE() AND column_name = 'licence_id' ORDER BY table_name",
        )
        .load::<Name>(conn)
        .await?
        .into_iter()
        .map(|n| n.name)
        .collect();
        for table in linked {
            let rows = if table == "email_outbox" {
                let filter = format!("{in_ids} OR LOWER(`to_address`) = LOWER(?)");
                rows_as_json(conn, &table, &filter, email, 2).await?
            } else {
                rows_as_json(conn, &table, in_ids, email, 1).await?
            };
            tables.insert(table, Value::Array(rows));
        }
        let found = tables
            .values()
            .any(|rows| rows.as_array().is_some_and(|r| !r.is_empty()));
        Ok(found.then(|| {
            serde_json::json!({
                "email": email,
                "exportedAt": crate::clock::rfc3339(chrono::Utc::now()),
                "tables": tables,
            })
        }))
    })
    .await
}

/// What erasure changed.
#[derive(Debug, Default)]
pub struct Erased {
    pub licences: usize,
    pub emails: usize,
}

/// Replaces the buyer's name and address with a tombstone on each of their licences and on every
/// mail to them, empties those mails' bodies and gives up the ones not yet sent. Nothing is
/// deactivated: keys, activations and usage stay as they are.
pub async fn erase(db: &Db, email: &str) -> Result<Erased, DbError> {
    db.transaction(async |conn| {
        let ids = licence_ids(conn, email).await?;
        let mut erased = Erased::default();
        for id in &ids {
            let tomb = tombstone(id);
            erased.licences += diesel::sql_query(
                "UPDATE licence SET customer_email = ?, customer_name = NULL WHERE id = ?",
            )
            .bind::<Text, _>(&tomb)
            .bind::<Text, _>(id)
            .execute(conn)
            .await?;
            erased.emails += diesel::sql_query(
                "UPDATE email_outbox SET to_address = ?, to_name = NULL, text_body = '',
                        html_body = '', last_error = NULL,
                        gave_up_at = CASE WHEN sent_at IS NULL THEN COALESCE(gave_up_at, NOW(6))
                                          ELSE gave_up_at END
                  WHERE licence_id = ? OR LOWER(to_address) = LOWER(?)",
            )
            .bind::<Text, _>(&tomb)
            .bind::<Text, _>(id)
            .bind::<Text, _>(email)
            .execute(conn)
            .await?;
        }
        // Mail to the address without a licence of theirs (one sent by hand, say).
        erased.emails += diesel::sql_query(
            "UPDATE email_outbox SET to_address = ?, to_name = NULL, text_body = '', html_body = '',
                    last_error = NULL,
                    gave_up_at = CASE WHEN sent_at IS NULL THEN COALESCE(gave_up_at, NOW(6))
                                      ELSE gave_up_at END
              WHERE LOWER(to_address) = LOWER(?)",
        )
        .bind::<Text, _>(tombstone("unlinked"))
        .bind::<Text, _>(email)
        .execute(conn)
        .await?;
        Ok(erased)
    })
    .await
}
