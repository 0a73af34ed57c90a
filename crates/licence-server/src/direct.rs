//! The statements of validate and consume over asynchronous MariaDB connections owned by each
//! worker thread.
//!
//! diesel's client is synchronous: a statement run on the worker blocks the worker's thread until
//! MariaDB answers, and the kernel switches to another thread and back for every request, which
//! on a small machine costs about as much CPU as the statement. The two routes a desktop app
//! calls most instead send their one statement from the worker that parsed the request over a
//! connection whose socket that worker's own event loop drives: while MariaDB works, the worker
//! parses and answers other requests. Each worker has a small pool of its own (a MariaDB
//! connection runs one statement at a time), so no connection is ever shared between threads.
//!
//! This path only accelerates. Whenever it cannot send a statement (not configured, no
//! connection to be had, a recent failure), the request goes the usual way through the diesel
//! pool, which also owns every error answer. A read that fails after it was sent goes the usual
//! way too; a consumption that fails after it was sent does not, because the unit may have been
//! taken: it answers 503 like the pool would.
//!
//! It is used only where it connects exactly as libmariadb would for the same `DATABASE_URL`: a
//! TCP host and no options. libmariadb takes the host `localhost` to mean its Unix socket, and
//! reads options this client does not know (TLS among them); for such a URL [`Target::for_url`]
//! says why and both routes stay on the pool.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use chrono::{NaiveDate, NaiveDateTime};
use mysql_async::prelude::{FromValue, Queryable};
use mysql_async::{Conn, Opts, OptsBuilder, Params, Pool, PoolConstraints, PoolOpts, Row, Value};
use service_kit::metrics::prometheus::{IntCounter, IntCounterVec};

use domain::licensing::Plan;

use crate::repo::activations::{LicenceBy, TOUCH};
use crate::repo::activations::{
    SEAT_AND_TAKE, SEAT_BY_ID, SEAT_BY_KEY, SeatAndTake, SeatCols, SeatFound,
};
use crate::repo::usage::{MAX_TAKEN_AT_ONCE, TAKE_ON_PLAN, TAKE_ON_PLAN_MANY, take_on_plan_binds};

/// validate's and consume's statements by the way they went: over the worker's connections or
/// through the pool.
static STATEMENTS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    service_kit::metrics::counter_vec(
        "licence_statements_total",
        "validate and consume statements, by the way they went: direct (the worker's own \
         connections) or pool.",
        &["path"],
    )
});
pub static DIRECT: LazyLock<IntCounter> =
    LazyLock::new(|| STATEMENTS.with_label_values(&["direct"]));
pub static POOL: LazyLock<IntCounter> = LazyLock::new(|| STATEMENTS.with_label_values(&["pool"]));
/// Consumptions answered by a statement that took several at once.
pub static TOGETHER: LazyLock<IntCounter> = LazyLock::new(|| {
    service_kit::metrics::counter_vec(
        "licence_consumptions_together_total",
        "consumptions sent in one statement with others, by a worker whose connections were all \
         busy when they arrived.",
        &[],
    )
    .with_label_values::<&str>(&[])
});

/// Longest wait for a connection, opened or idle.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// After a failure, requests use the pool for this long before this path is tried again.
const RETRY_AFTER: Duration = Duration::from_secs(2);
/// Longest wait for a statement's answer.
const QUERY_TIMEOUT: Duration = Duration::from_secs(5);
/// An idle connection beyond the first is closed after this long, as the pool's are.
const IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// Where and how to connect: shared by every worker thread.
#[derive(Debug, Clone)]
pub struct Target {
    opts: Opts,
    per_worker: usize,
}

impl Target {
    /// The target for `url` with `per_worker` connections in each worker, when this client
    /// connects to it exactly as libmariadb would; otherwise the reason it would not.
    pub fn for_url(url: &str, per_worker: usize) -> Result<Self, String> {
        // The parser's messages may quote the URL, password included: they are not passed on.
        let parsed =
            url::Url::parse(url).map_err(|_| "DATABASE_URL is not a URL this client reads")?;
        if parsed.query().is_some() {
            return Err("DATABASE_URL has options only libmariadb understands".into());
        }
        match parsed.host_str() {
            None | Some("") => return Err("DATABASE_URL names no host".into()),
            Some(host) if host.eq_ignore_ascii_case("localhost") => {
                return Err("libmariadb reaches localhost over its Unix socket".into());
            }
            Some(_) => {}
        }
        if parsed.username().is_empty() {
            return Err("DATABASE_URL names no user: libmariadb would take the system's".into());
        }
        let opts =
            Opts::from_url(url).map_err(|_| "DATABASE_URL is not a URL this client reads")?;
        let pool = PoolOpts::new()
            .with_constraints(PoolConstraints::new(0, per_worker.max(1)).unwrap_or_default())
            .with_inactive_connection_ttl(IDLE_TIMEOUT)
            // A reset on every return to the pool would cost a round trip per request and drop
            // the prepared statements; the routes leave no session state behind.
            .with_reset_connection(false);
        let opts = OptsBuilder::from_opts(opts)
            .pool_opts(pool)
            // Over TCP as asked, like libmariadb, not over a socket found after connecting.
            .prefer_socket(false)
            .init(vec!["SET time_zone = '+00:00'"])
            .into();
        Ok(Self {
            opts,
            per_worker: per_worker.max(1),
        })
    }
}

/// What sending a statement came to.
pub enum Sent<T> {
    Answered(T),
    /// Never sent: the pool must do it.
    NotSent,
    /// Sent, and then the connection failed or the answer did not come: whether it took effect
    /// is unknown.
    Failed(String),
    /// Sent and refused by MariaDB with an error (a deadlock, a lock wait that timed out): one
    /// statement under autocommit that fails is undone as a whole, so it took no effect and the
    /// pool may run the request's statements.
    Refused(String),
}

/// Why a sent statement came to nothing.
enum Fault {
    /// MariaDB answered with an error: the statement took no effect, the connection is sound.
    Refused(String),
    /// The connection failed, or the answer was not what the statement answers: whether it
    /// took effect is unknown, and the connection may be half-way through an answer.
    Lost(String),
}

impl From<mysql_async::Error> for Fault {
    fn from(error: mysql_async::Error) -> Self {
        match error {
            mysql_async::Error::Server(_) => Fault::Refused(error.to_string()),
            _ => Fault::Lost(error.to_string()),
        }
    }
}

/// What a consumption's statement on the worker's connection came to: whether the unit was
/// taken and the day's count, or `None` when its guard did not hold.
pub type Taken = Sent<Option<(bool, u32)>>;

/// A consumption waiting for its statement.
struct Waiting {
    licence_id: String,
    instance_id: String,
    plan: Plan,
    day: NaiveDate,
    now: NaiveDateTime,
    reply: tokio::sync::oneshot::Sender<Taken>,
}

/// One worker thread's connections. Not `Send`: made in and used from one worker only.
pub struct Direct {
    pool: Option<Pool>,
    resting_until: Cell<Option<Instant>>,
    /// Consumptions that arrived while every connection was sending: the next statement takes
    /// them together.
    waiting: RefCell<VecDeque<Waiting>>,
    /// Tasks sending consumptions, at most one per connection.
    senders: Cell<usize>,
    max_senders: usize,
}

impl Direct {
    /// `None` keeps every request on the diesel pool.
    pub fn new(target: Option<&Target>) -> Self {
        Self {
            pool: target.map(|t| Pool::new(t.opts.clone())),
            resting_until: Cell::new(None),
            waiting: RefCell::default(),
            senders: Cell::new(0),
            max_senders: target.map_or(1, |t| t.per_worker),
        }
    }

    async fn conn(&self) -> Option<Conn> {
        let pool = self.pool.as_ref()?;
        if let Some(until) = self.resting_until.get() {
            if Instant::now() < until {
                return None;
            }
            self.resting_until.set(None);
        }
        match tokio::time::timeout(CONNECT_TIMEOUT, pool.get_conn()).await {
            Ok(Ok(conn)) => Some(conn),
            Ok(Err(error)) => {
                self.rest(&error.to_string());
                None
            }
            Err(_) => {
                self.rest("no connection within the timeout");
                None
            }
        }
    }

    fn rest(&self, error: &str) {
        tracing::warn!(%error, "direct MariaDB statement failed; using the pool");
        self.resting_until.set(Some(Instant::now() + RETRY_AFTER));
    }

    /// What a statement sent on `conn` came to. After any failure the path rests. A connection
    /// whose statement was lost or did not answer may be half-way through an answer: it is
    /// closed, not pooled again; one whose statement MariaDB refused goes back to the pool.
    fn settle<T>(
        &self,
        conn: Conn,
        answer: Result<Result<T, Fault>, tokio::time::error::Elapsed>,
    ) -> Sent<T> {
        let error = match answer {
            Ok(Ok(value)) => {
                DIRECT.inc();
                return Sent::Answered(value);
            }
            Ok(Err(Fault::Refused(error))) => {
                drop(conn);
                self.rest(&error);
                return Sent::Refused(error);
            }
            Ok(Err(Fault::Lost(error))) => error,
            Err(_) => format!("no answer within {QUERY_TIMEOUT:?}"),
        };
        actix_web::rt::spawn(async move {
            let _ = conn.disconnect().await;
        });
        self.rest(&error);
        Sent::Failed(error)
    }

    /// Runs `sql` with `params` and decodes its one row, if any, with `decode`.
    async fn first<T>(
        &self,
        sql: &'static str,
        params: Vec<Value>,
        decode: impl FnOnce(Row) -> Result<T, String>,
    ) -> Sent<Option<T>> {
        let Some(mut conn) = self.conn().await else {
            return Sent::NotSent;
        };
        let answer = tokio::time::timeout(
            QUERY_TIMEOUT,
            conn.exec_first::<Row, _, _>(sql, Params::Positional(params)),
        )
        .await
        .map(|sent| {
            sent.map_err(Fault::from)?
                .map(decode)
                .transpose()
                .map_err(|e| Fault::Lost(format!("unexpected row: {e}")))
        });
        self.settle(conn, answer)
    }

    /// [`crate::repo::activations::seat`] over this worker's connections.
    pub async fn seat(&self, by: LicenceBy<'_>, instance_id: &str) -> Sent<Option<SeatFound>> {
        let (sql, value) = match by {
            LicenceBy::Id(id) => (SEAT_BY_ID, id),
            LicenceBy::Key(key) => (SEAT_BY_KEY, key),
        };
        let params = vec![Value::from(instance_id), Value::from(value)];
        self.first(sql, params, |mut row| {
            let seat = seat_cols(&mut row)?;
            let seats: i32 = take(&mut row, SEAT_COLUMNS)?;
            let (licence, activation) = seat.split(instance_id);
            Ok((
                licence,
                activation,
                u32::try_from(seats).unwrap_or(u32::MAX),
            ))
        })
        .await
    }

    /// [`crate::repo::activations::seat_and_take`] over this worker's connections.
    pub async fn seat_and_take(
        &self,
        licence_id: &str,
        instance_id: &str,
        day: NaiveDate,
        now: NaiveDateTime,
    ) -> Sent<Option<SeatAndTake>> {
        let params =
            crate::repo::activations::seat_and_take_binds(licence_id, instance_id, day, now)
                .into_iter()
                .map(value_of)
                .collect();
        self.first(SEAT_AND_TAKE, params, |mut row| {
            let seat = seat_cols(&mut row)?;
            let taken: Option<i64> = take(&mut row, SEAT_COLUMNS)?;
            let (licence, activation) = seat.split(instance_id);
            Ok(SeatAndTake {
                licence,
                activation,
                taken: taken.map(crate::repo::usage::outcome),
            })
        })
        .await
    }

    /// One unit of `day`'s quota by [`TAKE_ON_PLAN`], over this worker's connections: whether it
    /// was taken and the day's count, or `None` when the statement's guard did not hold (no such
    /// licence or seat, no plain access, or the licence is no longer on `plan`).
    ///
    /// A consumption is sent at once while one of the worker's connections is free. Those that
    /// arrive while all of them are sending wait, and the next connection to come free sends them
    /// together, up to [`MAX_TAKEN_AT_ONCE`] of distinct licences in one statement
    /// ([`TAKE_ON_PLAN_MANY`]): a busy worker pays MariaDB's cost per statement once for many
    /// consumptions, and an idle one adds no wait.
    pub async fn take_on_plan(
        self: Arc<Self>,
        licence_id: &str,
        instance_id: &str,
        plan: Plan,
        day: NaiveDate,
        now: NaiveDateTime,
    ) -> Taken {
        if self.pool.is_none() {
            return Sent::NotSent;
        }
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.waiting.borrow_mut().push_back(Waiting {
            licence_id: licence_id.to_owned(),
            instance_id: instance_id.to_owned(),
            plan,
            day,
            now,
            reply,
        });
        if self.senders.get() < self.max_senders {
            self.senders.set(self.senders.get() + 1);
            actix_web::rt::spawn(self.clone().send_waiting());
        }
        answer.await.unwrap_or_else(|_| {
            // Only a worker stopping drops a sender with consumptions in hand.
            Sent::Failed("the worker stopped before the statement answered".into())
        })
    }

    /// Sends the waiting consumptions until none is left. The count of senders drops in the same
    /// step as the queue is found empty, so a consumption queued after it always finds a sender
    /// or starts one.
    async fn send_waiting(self: Arc<Self>) {
        struct Leaving<'a>(&'a Cell<usize>);
        impl Drop for Leaving<'_> {
            fn drop(&mut self) {
                self.0.set(self.0.get().saturating_sub(1));
            }
        }
        let _leaving = Leaving(&self.senders);
        loop {
            let batch = self.next_batch();
            if batch.is_empty() {
                return;
            }
            self.send_batch(batch).await;
        }
    }

    /// The oldest waiting consumption and those after it on the same day for other licences,
    /// [`MAX_TAKEN_AT_ONCE`] at most. Two of one licence never share a statement: each must see
    /// the count the other left.
    fn next_batch(&self) -> Vec<Waiting> {
        let mut waiting = self.waiting.borrow_mut();
        let Some(first) = waiting.pop_front() else {
            return Vec::new();
        };
        let mut batch = vec![first];
        let mut i = 0;
        while i < waiting.len() && batch.len() < MAX_TAKEN_AT_ONCE {
            let w = &waiting[i];
            if w.day == batch[0].day && batch.iter().all(|b| b.licence_id != w.licence_id) {
                if let Some(w) = waiting.remove(i) {
                    batch.push(w);
                }
            } else {
                i += 1;
            }
        }
        batch
    }

    async fn send_batch(&self, batch: Vec<Waiting>) {
        let Some(mut conn) = self.conn().await else {
            for w in batch {
                let _ = w.reply.send(Sent::NotSent);
            }
            return;
        };
        let (sql, params) = if let [one] = batch.as_slice() {
            let binds = take_on_plan_binds(
                &one.licence_id,
                &one.instance_id,
                one.plan,
                one.day,
                one.now,
            );
            (TAKE_ON_PLAN, binds.into_iter().map(value_of).collect())
        } else {
            (TAKE_ON_PLAN_MANY[batch.len()].as_str(), many_params(&batch))
        };
        let single = batch.len() == 1;
        let answer = tokio::time::timeout(
            QUERY_TIMEOUT,
            conn.exec::<Row, _, _>(sql, Params::Positional(params)),
        )
        .await
        .map(|sent| {
            sent.map_err(Fault::from)?
                .into_iter()
                .map(|mut row| {
                    let licence_id: Option<String> = if single {
                        None
                    } else {
                        Some(take(&mut row, 0)?)
                    };
                    let base = usize::from(!single);
                    let used: i64 = take(&mut row, base)?;
                    let taken: u64 = take(&mut row, base + 1)?;
                    Ok((
                        licence_id,
                        (taken > 0, u32::try_from(used).unwrap_or(u32::MAX)),
                    ))
                })
                .collect::<Result<Vec<_>, String>>()
                .map_err(|e| Fault::Lost(format!("unexpected row: {e}")))
        });
        match self.settle(conn, answer) {
            Sent::Answered(rows) => {
                let n = batch.len() as u64;
                DIRECT.inc_by(n - 1);
                if n > 1 {
                    TOGETHER.inc_by(n);
                }
                for w in batch {
                    let row = rows
                        .iter()
                        .find(|(id, _)| id.as_deref().is_none_or(|id| id == w.licence_id))
                        .map(|(_, outcome)| *outcome);
                    let _ = w.reply.send(Sent::Answered(row));
                }
            }
            Sent::NotSent => {
                for w in batch {
                    let _ = w.reply.send(Sent::NotSent);
                }
            }
            Sent::Failed(error) => {
                for w in batch {
                    let _ = w.reply.send(Sent::Failed(error.clone()));
                }
            }
            Sent::Refused(error) => {
                for w in batch {
                    let _ = w.reply.send(Sent::Refused(error.clone()));
                }
            }
        }
    }

    /// [`crate::repo::activations::touch`] over this worker's connections; whether it was done.
    pub async fn touch(&self, id: &str, at: NaiveDateTime) -> bool {
        let Some(mut conn) = self.conn().await else {
            return false;
        };
        let params = Params::Positional(vec![Value::from(at), Value::from(id)]);
        let answer = tokio::time::timeout(QUERY_TIMEOUT, conn.exec_drop(TOUCH, params))
            .await
            .map(|sent| sent.map_err(Fault::from));
        matches!(self.settle(conn, answer), Sent::Answered(()))
    }
}

/// How many columns [`SeatCols`] reads, the first of the row.
const SEAT_COLUMNS: usize = 10;

fn take<T: FromValue>(row: &mut Row, index: usize) -> Result<T, String> {
    match row.take_opt::<T, usize>(index) {
        Some(Ok(value)) => Ok(value),
        Some(Err(error)) => Err(format!("column {index}: {error}")),
        None => Err(format!("column {index} is missing")),
    }
}

/// The seat's columns, in the order of the statements' select list.
fn seat_cols(row: &mut Row) -> Result<SeatCols, String> {
    Ok(SeatCols {
        id: take(row, 0)?,
        license_key: take(row, 1)?,
        status: take(row, 2)?,
        plan: take(row, 3)?,
        expires_at: take(row, 4)?,
        disabled_at: take(row, 5)?,
        a_id: take(row, 6)?,
        a_instance_name: take(row, 7)?,
        a_created_at: take(row, 8)?,
        a_last_validated_at: take(row, 9)?,
    })
}

/// The values of [`TAKE_ON_PLAN_MANY`]'s placeholders for `batch`, all of one day: the latest of
/// their instants, so that no licence passes the expiry test for an instant before its own.
fn many_params(batch: &[Waiting]) -> Vec<Value> {
    let mut params = Vec::with_capacity(2 + 4 * batch.len());
    params.push(Value::from(batch[0].day));
    params.extend(batch.iter().map(|w| Value::from(w.licence_id.as_str())));
    for w in batch {
        params.push(Value::from(w.licence_id.as_str()));
        params.push(Value::from(w.plan.as_str()));
        params.push(Value::from(w.instance_id.as_str()));
    }
    let latest = batch.iter().map(|w| w.now).max().unwrap_or(batch[0].now);
    params.push(Value::from(latest));
    params
}

fn value_of(bind: crate::repo::fixed::Bind) -> Value {
    use crate::repo::fixed::Bind;
    match bind {
        Bind::Text(v) => Value::from(v),
        Bind::Int(v) => Value::from(v),
        Bind::Datetime(v) => Value::from(v),
        Bind::Date(v) => Value::from(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_urls_libmariadb_reads_the_same_way() {
        assert!(Target::for_url("mysql://app:pw@127.0.0.1:3306/licensing", 4).is_ok());
        assert!(Target::for_url("mysql://app:p%40ss@db.internal/licensing", 4).is_ok());
        for (url, why) in [
            ("mysql://app:pw@localhost/licensing", "Unix socket"),
            (
                "mysql://app:pw@127.0.0.1/licensing?ssl_mode=required",
                "options",
            ),
            ("mysql://127.0.0.1/licensing", "no user"),
        ] {
            let err = Target::for_url(url, 4).expect_err(url);
            assert!(err.contains(why), "{url}: {err}");
            assert!(
                !err.contains("pw"),
                "{url}: the message quotes the password"
            );
        }
    }
}
