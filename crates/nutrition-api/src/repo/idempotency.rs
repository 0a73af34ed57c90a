//! `nutrition.idempotency`: the first answer of a write sent with an `Idempotency-Key`, per user,
//! for [`KEPT_FOR`].
//!
//! The key's row is inserted in the same transaction as the write it guards, before the write:
//! a parallel retry with the same key waits on the row's unique index until the first commits,
//! then finds the stored answer; if the first rolls back (a refusal, a lost connection), the
//! retry takes the key and is judged afresh. Only successes are remembered: a refused write
//! changed nothing, and judging it again is what the person retrying expects.

use chrono::{DateTime, Duration, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl, TransactionManager};
use pg_store::schema::nutrition::idempotency;
use session::UserId;

use crate::input::IdempotencyKey;
use crate::repo::{Conn, Repo};
use service_kit::db::DbError;

/// How long a key's answer is kept.
pub const KEPT_FOR: Duration = Duration::hours(24);

/// An answer as it went out: status and JSON body.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub body: serde_json::Value,
}

impl Answer {
    pub fn json(status: u16, body: &impl serde::Serialize) -> Self {
        Self {
            status,
            body: serde_json::to_value(body).unwrap_or(serde_json::Value::Null),
        }
    }
}

/// What a guarded write came to.
pub enum Guarded<T> {
    /// Done now (or refused now: the key is not kept then).
    Fresh(T),
    /// Done before under this key: its answer.
    Replayed(Answer),
    /// The key was first used for another method or path.
    KeyReused,
}

/// [`guard`] on a connection of the worker's pool: how every guarded write of the repository runs.
pub(crate) async fn run<T>(
    repo: &Repo,
    user_id: &UserId,
    key: Option<&IdempotencyKey>,
    now: DateTime<Utc>,
    write: impl AsyncFnOnce(&mut Conn) -> QueryResult<T>,
    answer: impl FnOnce(&T) -> Option<Answer>,
) -> Result<Guarded<T>, DbError> {
    repo.with(async |conn| guard(conn, user_id, key, now, write, answer).await)
        .await
}

/// Runs `write` in a transaction guarded by `key` (unguarded without one). `answer` says what
/// the outcome answered when it is a success to remember, `None` for a refusal.
pub(crate) async fn guard<T>(
    conn: &mut Conn,
    user_id: &UserId,
    key: Option<&IdempotencyKey>,
    now: DateTime<Utc>,
    write: impl AsyncFnOnce(&mut Conn) -> QueryResult<T>,
    answer: impl FnOnce(&T) -> Option<Answer>,
) -> QueryResult<Guarded<T>> {
    let Some(key) = key else {
        return write(conn).await.map(Guarded::Fresh);
    };
    // By hand rather than `conn.transaction`, which asks the guarded write's future to be
    // `Send`: it runs on the worker thread that holds the connection and never moves.
    type Manager = <Conn as AsyncConnection>::TransactionManager;
    Manager::begin_transaction(conn).await?;
    let outcome = guarded(conn, user_id, key, now, write, answer).await;
    match outcome {
        Ok(done) => {
            Manager::commit_transaction(conn).await?;
            Ok(done)
        }
        Err(e) => {
            Manager::rollback_transaction(conn).await?;
            Err(e)
        }
    }
}

async fn guarded<T>(
    conn: &mut Conn,
    user_id: &UserId,
    key: &IdempotencyKey,
    now: DateTime<Utc>,
    write: impl AsyncFnOnce(&mut Conn) -> QueryResult<T>,
    answer: impl FnOnce(&T) -> Option<Answer>,
) -> QueryResult<Guarded<T>> {
    // Expired keys of this user go first, so that a key may be used again a day later and
    // the table holds no more than a day of each person's writes.
    diesel::delete(
        idempotency::table
            .filter(idempotency::user_id.eq(user_id))
            .filter(idempotency::created_at.lt(now - KEPT_FOR)),
    )
    .execute(conn)
    .await?;
    let taken = diesel::insert_into(idempotency::table)
        .values((
            idempotency::user_id.eq(user_id),
            idempotency::key.eq(&key.key),
            idempotency::request.eq(&key.request),
            idempotency::status.eq(0_i16),
            idempotency::body.eq(serde_json::Value::Null),
            idempotency::created_at.eq(now),
        ))
        .on_conflict_do_nothing()
        .execute(conn)
        .await?;
    if taken == 0 {
        let (request, status, body): (String, i16, serde_json::Value) = idempotency::table
            .find((user_id, &key.key))
            .select((idempotency::request, idempotency::status, idempotency::body))
            .first(conn)
            .await?;
        if request != key.request {
            return Ok(Guarded::KeyReused);
        }
        return Ok(Guarded::Replayed(Answer {
            status: u16::try_from(status).unwrap_or(200),
            body,
        }));
    }
    let outcome = write(conn).await?;
    let stored = diesel::update(idempotency::table.find((user_id, &key.key)));
    match answer(&outcome) {
        Some(a) => {
            stored
                .set((
                    idempotency::status.eq(i16::try_from(a.status).unwrap_or(200)),
                    idempotency::body.eq(a.body),
                ))
                .execute(conn)
                .await?;
        }
        None => {
            diesel::delete(idempotency::table.find((user_id, &key.key)))
                .execute(conn)
                .await?;
        }
    }
    Ok(Guarded::Fresh(outcome))
}
