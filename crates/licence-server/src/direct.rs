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
//! A validate by token and a consumption on its token's plan do not each wait for a connection:
//! those that arrive while the worker has its statements of their kind in flight (one read, two
//! consumptions) queue up, and the next of those to come back sends them together, one statement
//! for up to sixteen licences ([`Together`]). On two cores, MariaDB's work per statement (the
//! round trip, the statement's preparation and plan, the commit) is most of what such a request
//! costs it, and a busy worker now pays it once for several requests; an idle one sends each at
//! once.
//!
//! This path only accelerates. Whenever it cannot send a statement (not configured, no
//! connection to be had, a recent failure), the request goes the usual way through the diesel
//! pool, which also owns every error answer. A read that fails after it was sent goes the usual
//! way too; a consumption that fails after it was sent does not, because the unit may have been
//! taken: it answers 503 like the pool would. A statement sent for several requests comes to the
//! same for each of them.
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
    SEAT_AND_TAKE, SEAT_BY_ID, SEAT_BY_KEY, SEATS_BY_ID, SeatAndTake, SeatCols, SeatFound,
};
use crate::repo::usage::{MAX_TAKEN_AT_ONCE, TAKE_ON_PLAN, TAKE_ON_PLAN_MANY, take_on_plan_binds};

/// validate's and consume's statements by the way they went: over the worker's connections or
/// through the pool.
static STATEMENTS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    service_kit::metrics::counter_vec(
        "licence_statements_total",
        "validate and consume statements, by the way they went: direct (the worker's own \
         connections) or pool; one that answered several requests at once counts once for each.",
        &["path"],
    )
});
pub static DIRECT: LazyLock<IntCounter> =
    LazyLock::new(|| STATEMENTS.with_label_values(&["direct"]));
pub static POOL: LazyLock<IntCounter> = LazyLock::new(|| STATEMENTS.with_label_values(&["pool"]));
/// Requests answered by a statement that answered several at once ([`Together`]), by route.
pub static TOGETHER: LazyLock<IntCounterVec> = LazyLock::new(|| {
    service_kit::metrics::counter_vec(
        "licence_requests_together_total",
        "validate and consume requests sent in one statement with others, by a worker that had \
         its most statements of their kind in flight when they arrived.",
        &["route"],
    )
});

/// Registers this path's series, so that `/metrics` shows them at zero before the first request.
pub fn register_metrics() {
    LazyLock::force(&DIRECT);
    LazyLock::force(&POOL);
    TOGETHER.with_label_values(&[TakeOnPlan::ROUTE]);
    TOGETHER.with_label_values(&[SeatById::ROUTE]);
}

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

/// A kind of request whose statement can answer several at once, one row per licence: while
/// the worker has [`Together::SENDERS`] statements of that kind in flight, the requests of that
/// kind that arrive wait, and the next of those statements to come back sends them together, up
/// to [`MAX_TAKEN_AT_ONCE`] of distinct licences in one statement. A busy worker then pays
/// MariaDB's cost per statement (round trip, parse, plan, commit; most of what such a request
/// costs it) once for many requests, and an idle one adds no wait.
trait Together: Sized + 'static {
    /// The route, for [`TOGETHER`].
    const ROUTE: &'static str;
    /// Most statements of this kind a worker has in flight at once (fewer if it has fewer
    /// connections). A statement for many requests costs MariaDB little more than one for a
    /// single request, so more of them at once only split the same requests into more, smaller
    /// statements, and wake more of MariaDB's threads on the same cores (bench/licence/README.md).
    const SENDERS: usize;
    /// What a request asks beside its licence.
    type Ask;
    /// What a row says, before it is fitted to its request.
    type Row;
    /// What a request is answered.
    type Answer;
    fn queue(direct: &Direct) -> &Queue<Self>;
    /// Whether two requests may share a statement, beside naming different licences.
    fn alike(a: &Self::Ask, b: &Self::Ask) -> bool;
    /// The statement for one request, and for several of distinct licences.
    fn statement(batch: &[Waiting<Self>]) -> (&'static str, Vec<Value>);
    /// A row of the statement: the licence it answers (`None` from the one-request statement,
    /// whose row is its request's), and what it says.
    fn decode(row: Row, single: bool) -> Result<(Option<String>, Self::Row), String>;
    fn answer(ask: &Self::Ask, row: Self::Row) -> Self::Answer;
}

/// A request waiting for its statement.
struct Waiting<K: Together> {
    licence_id: String,
    ask: K::Ask,
    reply: tokio::sync::oneshot::Sender<Sent<Option<K::Answer>>>,
}

/// The requests of one kind waiting, and the tasks sending them: at most one per connection.
struct Queue<K: Together> {
    waiting: RefCell<VecDeque<Waiting<K>>>,
    senders: Cell<usize>,
}

impl<K: Together> Default for Queue<K> {
    fn default() -> Self {
        Self {
            waiting: RefCell::default(),
            senders: Cell::new(0),
        }
    }
}

/// Consumptions of one installation on the plan its token names: [`TAKE_ON_PLAN`].
struct TakeOnPlan;

struct TakeAsk {
    instance_id: String,
    plan: Plan,
    day: NaiveDate,
    now: NaiveDateTime,
}

impl Together for TakeOnPlan {
    const ROUTE: &'static str = "consume";
    /// Two, though one is faster while no lock is held long (held on two cores with one worker
    /// per core: 12,300–12,700 consumptions/s on one connection per worker, 11,200–11,800 with
    /// two statements in flight): a consumption locks its rows, and one that waits on another
    /// transaction's lock (a consumption with an `Idempotency-Key` holds its day's row a little
    /// longer) would otherwise hold up every consumption of its worker.
    const SENDERS: usize = 2;
    type Ask = TakeAsk;
    type Row = (bool, u32);
    type Answer = (bool, u32);

    fn queue(direct: &Direct) -> &Queue<Self> {
        &direct.takes
    }

    fn alike(a: &TakeAsk, b: &TakeAsk) -> bool {
        a.day == b.day
    }

    fn statement(batch: &[Waiting<Self>]) -> (&'static str, Vec<Value>) {
        if let [one] = batch {
            let a = &one.ask;
            let binds = take_on_plan_binds(&one.licence_id, &a.instance_id, a.plan, a.day, a.now);
            return (TAKE_ON_PLAN, binds.into_iter().map(value_of).collect());
        }
        let mut params = Vec::with_capacity(2 + 4 * batch.len());
        params.push(Value::from(batch[0].ask.day));
        params.extend(batch.iter().map(|w| Value::from(w.licence_id.as_str())));
        for w in batch {
            params.push(Value::from(w.licence_id.as_str()));
            params.push(Value::from(w.ask.plan.as_str()));
            params.push(Value::from(w.ask.instance_id.as_str()));
        }
        // The latest of their instants, so that no licence passes the expiry test for an
        // instant before its own request's.
        let latest = batch.iter().map(|w| w.ask.now).max();
        params.push(Value::from(latest.unwrap_or(batch[0].ask.now)));
        (TAKE_ON_PLAN_MANY[batch.len()].as_str(), params)
    }

    fn decode(mut row: Row, single: bool) -> Result<(Option<String>, (bool, u32)), String> {
        let (licence_id, first) = if single {
            (None, 0)
        } else {
            (Some(take(&mut row, 0)?), 1)
        };
        let used: i64 = take(&mut row, first)?;
        let taken: u64 = take(&mut row, first + 1)?;
        Ok((
            licence_id,
            (taken > 0, u32::try_from(used).unwrap_or(u32::MAX)),
        ))
    }

    fn answer(_: &TakeAsk, row: (bool, u32)) -> (bool, u32) {
        row
    }
}

/// Seats read by licence id and installation: [`SEAT_BY_ID`].
struct SeatById;

impl Together for SeatById {
    const ROUTE: &'static str = "validate";
    /// One: the seat is a consistent read, which waits on no lock, so a second statement in
    /// flight would only split the waiting requests in two. Held on two cores with one worker
    /// per core, one and two per worker answered 17,700–19,900 and 17,200–18,700 validates/s,
    /// the same build restarted with each setting in turn, five times each.
    const SENDERS: usize = 1;
    /// The installation.
    type Ask = String;
    type Row = (SeatCols, i32);
    type Answer = SeatFound;

    fn queue(direct: &Direct) -> &Queue<Self> {
        &direct.seats
    }

    fn alike(_: &String, _: &String) -> bool {
        true
    }

    fn statement(batch: &[Waiting<Self>]) -> (&'static str, Vec<Value>) {
        if let [one] = batch {
            let params = vec![
                Value::from(one.ask.as_str()),
                Value::from(one.licence_id.as_str()),
            ];
            return (SEAT_BY_ID, params);
        }
        let mut params = Vec::with_capacity(3 * batch.len());
        for w in batch {
            params.push(Value::from(w.licence_id.as_str()));
            params.push(Value::from(w.ask.as_str()));
        }
        params.extend(batch.iter().map(|w| Value::from(w.licence_id.as_str())));
        (SEATS_BY_ID[batch.len()].as_str(), params)
    }

    fn decode(mut row: Row, _: bool) -> Result<(Option<String>, (SeatCols, i32)), String> {
        let seat = seat_cols(&mut row)?;
        let seats: i32 = take(&mut row, SEAT_COLUMNS)?;
        Ok((Some(seat.id.clone()), (seat, seats)))
    }

    fn answer(instance_id: &String, row: (SeatCols, i32)) -> SeatFound {
        seat_found(instance_id, row)
    }
}

/// A seat's row as the route reads it, for `instance_id`.
fn seat_found(instance_id: &str, (seat, seats): (SeatCols, i32)) -> SeatFound {
    let (licence, activation) = seat.split(instance_id);
    (
        licence,
        activation,
        u32::try_from(seats).unwrap_or(u32::MAX),
    )
}

/// One worker thread's connections. Not `Send`: made in and used from one worker only.
pub struct Direct {
    pool: Option<Pool>,
    resting_until: Cell<Option<Instant>>,
    takes: Queue<TakeOnPlan>,
    seats: Queue<SeatById>,
    /// The worker's connections: no kind has more senders than these.
    connections: usize,
}

impl Direct {
    /// `None` keeps every request on the diesel pool.
    pub fn new(target: Option<&Target>) -> Self {
        Self {
            pool: target.map(|t| Pool::new(t.opts.clone())),
            resting_until: Cell::new(None),
            takes: Queue::default(),
            seats: Queue::default(),
            connections: target.map_or(1, |t| t.per_worker),
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

    /// [`crate::repo::activations::seat`] over this worker's connections; by licence id, with
    /// the other such reads waiting on this worker ([`Together`]).
    pub async fn seat(
        self: Arc<Self>,
        by: LicenceBy<'_>,
        instance_id: &str,
    ) -> Sent<Option<SeatFound>> {
        let key = match by {
            LicenceBy::Id(id) => {
                return self.together::<SeatById>(id, instance_id.to_owned()).await;
            }
            LicenceBy::Key(key) => key,
        };
        let params = vec![Value::from(instance_id), Value::from(key)];
        self.first(SEAT_BY_KEY, params, |row| {
            let (_, row) = SeatById::decode(row, true)?;
            Ok(seat_found(instance_id, row))
        })
        .await
    }

    /// [`crate::repo::rate_limit::take`] over this worker's connections: the function's answer.
    pub async fn rate_take(
        &self,
        bucket: &str,
        max: u32,
        window_secs: u32,
        want: u32,
    ) -> Sent<Option<i64>> {
        let params = crate::repo::rate_limit::take_binds(bucket, max, window_secs, want)
            .into_iter()
            .map(value_of)
            .collect();
        self.first(crate::repo::rate_limit::TAKE, params, |mut row| {
            take(&mut row, 0)
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
    /// licence or seat, no plain access, or the licence is no longer on `plan`). With the other
    /// consumptions waiting on this worker ([`Together`]).
    pub async fn take_on_plan(
        self: Arc<Self>,
        licence_id: &str,
        instance_id: &str,
        plan: Plan,
        day: NaiveDate,
        now: NaiveDateTime,
    ) -> Taken {
        let ask = TakeAsk {
            instance_id: instance_id.to_owned(),
            plan,
            day,
            now,
        };
        self.together::<TakeOnPlan>(licence_id, ask).await
    }

    /// Queues one request of kind `K` and waits for its statement's answer.
    async fn together<K: Together>(
        self: Arc<Self>,
        licence_id: &str,
        ask: K::Ask,
    ) -> Sent<Option<K::Answer>> {
        if self.pool.is_none() {
            return Sent::NotSent;
        }
        let (reply, answer) = tokio::sync::oneshot::channel();
        let queue = K::queue(&self);
        queue.waiting.borrow_mut().push_back(Waiting {
            licence_id: licence_id.to_owned(),
            ask,
            reply,
        });
        if queue.senders.get() < K::SENDERS.min(self.connections) {
            queue.senders.set(queue.senders.get() + 1);
            actix_web::rt::spawn(self.clone().send_waiting::<K>());
        }
        answer.await.unwrap_or_else(|_| {
            // Only a worker stopping drops a sender with requests in hand.
            Sent::Failed("the worker stopped before the statement answered".into())
        })
    }

    /// Sends the waiting requests of kind `K` until none is left. The count of senders drops in
    /// the same step as the queue is found empty, so a request queued after it always finds a
    /// sender or starts one.
    async fn send_waiting<K: Together>(self: Arc<Self>) {
        struct Leaving<'a>(&'a Cell<usize>);
        impl Drop for Leaving<'_> {
            fn drop(&mut self) {
                self.0.set(self.0.get().saturating_sub(1));
            }
        }
        let _leaving = Leaving(&K::queue(&self).senders);
        loop {
            let batch = next_batch(K::queue(&self));
            if batch.is_empty() {
                return;
            }
            self.send_batch(batch).await;
        }
    }

    async fn send_batch<K: Together>(&self, batch: Vec<Waiting<K>>) {
        let Some(mut conn) = self.conn().await else {
            return reply_all(batch, || Sent::NotSent);
        };
        let single = batch.len() == 1;
        let (sql, params) = K::statement(&batch);
        let answer = tokio::time::timeout(
            QUERY_TIMEOUT,
            conn.exec::<Row, _, _>(sql, Params::Positional(params)),
        )
        .await
        .map(|sent| {
            sent.map_err(Fault::from)?
                .into_iter()
                .map(|row| K::decode(row, single))
                .collect::<Result<Vec<_>, String>>()
                .map_err(|e| Fault::Lost(format!("unexpected row: {e}")))
        });
        let mut rows = match self.settle(conn, answer) {
            Sent::Answered(rows) => rows,
            Sent::NotSent => return reply_all(batch, || Sent::NotSent),
            Sent::Failed(error) => return reply_all(batch, || Sent::Failed(error.clone())),
            Sent::Refused(error) => return reply_all(batch, || Sent::Refused(error.clone())),
        };
        let n = batch.len() as u64;
        DIRECT.inc_by(n - 1);
        if n > 1 {
            TOGETHER.with_label_values(&[K::ROUTE]).inc_by(n);
        }
        for w in batch {
            let row = rows
                .iter()
                .position(|(id, _)| id.as_deref().is_none_or(|id| id == w.licence_id))
                .map(|i| rows.swap_remove(i).1);
            let _ = w
                .reply
                .send(Sent::Answered(row.map(|r| K::answer(&w.ask, r))));
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

/// The oldest waiting request and those after it that may share its statement, for other
/// licences, [`MAX_TAKEN_AT_ONCE`] at most (a statement's work is bounded as a request's is).
/// Two of one licence never share a statement: a consumption must see the count the other left.
fn next_batch<K: Together>(queue: &Queue<K>) -> Vec<Waiting<K>> {
    let mut waiting = queue.waiting.borrow_mut();
    // A request whose client went away while it waited is not sent, as it would not have been
    // without the wait.
    waiting.retain(|w| !w.reply.is_closed());
    let Some(first) = waiting.pop_front() else {
        return Vec::new();
    };
    let mut batch = vec![first];
    let mut i = 0;
    while i < waiting.len() && batch.len() < MAX_TAKEN_AT_ONCE {
        let w = &waiting[i];
        if K::alike(&w.ask, &batch[0].ask) && batch.iter().all(|b| b.licence_id != w.licence_id) {
            if let Some(w) = waiting.remove(i) {
                batch.push(w);
            }
        } else {
            i += 1;
        }
    }
    batch
}

fn reply_all<K: Together>(batch: Vec<Waiting<K>>, sent: impl Fn() -> Sent<Option<K::Answer>>) {
    for w in batch {
        let _ = w.reply.send(sent());
    }
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
