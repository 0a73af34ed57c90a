//! The one door to Postgres: diesel's query builder on asynchronous connections
//! (`diesel-async`'s `AsyncPgConnection`, over tokio-postgres), in a small pool per worker thread.
//!
//! Statements are sent from the worker thread that parsed the request, on connections whose
//! drivers run on that same thread: no hand-off to a blocking thread and back, which on a small
//! machine cost more CPU than a one-statement request's statement. Statements that run alone
//! (outside a transaction) share one connection and are pipelined on it ([`Repo::shared`]); a
//! transaction has a connection to itself ([`Repo::exclusive`]). Statements open a connection
//! only when the worker has none they may share.
//!
//! A connection that fails because it can no longer serve (closed socket, restarted server, a
//! prepared statement that no longer fits the schema) is discarded when its users are done; the
//! request that met the failure is answered 503 like one that waited [`CHECKOUT_TIMEOUT`] for a
//! connection. There is no second way to the database.

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use diesel::connection::{Instrumentation, InstrumentationEvent};
use diesel_async::pooled_connection::PoolableConnection;
use diesel_async::{AsyncConnection, AsyncPgConnection};
use service_kit::db::{CHECKOUT_TIMEOUT, DbError, is_connection_lost};
use service_kit::http::Readiness;
use service_kit::metrics::PoolState;
use tokio::sync::Notify;
use tokio_postgres::Config;
use tokio_postgres::config::{Host, SslMode};

use super::tls::Tls;

/// Longest wait for a new connection to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Where and how to connect: shared by every worker thread.
#[derive(Clone)]
pub struct Target {
    config: Arc<Config>,
    tls: Tls,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target").finish_non_exhaustive()
    }
}

impl Target {
    /// The target for `url`, or why this driver would not connect to it as libpq (which applies
    /// the migrations at start-up) does, given the process's environment and home directory.
    pub fn for_url(url: &str) -> Result<Self, String> {
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        let config = equivalent_config(url, std::env::vars_os().map(|(k, _)| k), home.as_deref())?;
        let tls = Tls::new().map_err(|e| format!("TLS set-up failed: {e}"))?;
        Ok(Self {
            config: Arc::new(config),
            tls,
        })
    }

    async fn open(
        &self,
        lost: Arc<AtomicBool>,
        losses: Arc<AtomicU64>,
    ) -> Result<AsyncPgConnection, DbError> {
        let connect = async {
            let (client, connection) = self
                .config
                .connect(self.tls.clone())
                .await
                .map_err(|e| DbError::Unavailable(e.to_string()))?;
            // The driver runs on the calling thread's local task set, beside the requests that
            // use it: a response from Postgres wakes the connection's requests in the same turn
            // of the worker, not one turn of the runtime later. It ends when the client is
            // dropped or the socket closes; a closed connection then fails its statements.
            tokio::task::spawn_local(async move {
                if let Err(error) = connection.await {
                    tracing::warn!(%error, "Postgres connection ended");
                }
            });
            let mut conn = AsyncPgConnection::try_from(client)
                .await
                .map_err(|e| DbError::Unavailable(e.to_string()))?;
            conn.set_instrumentation(Watch { lost, losses });
            Ok(conn)
        };
        tokio::time::timeout(CONNECT_TIMEOUT, connect)
            .await
            .unwrap_or_else(|_| Err(DbError::Unavailable("connecting timed out".into())))
    }
}

/// The configuration for `url`, or why libpq would connect differently from it: `env_keys` are
/// the names of the process's environment variables and `home` its home directory.
pub fn equivalent_config(
    url: &str,
    env_keys: impl IntoIterator<Item = std::ffi::OsString>,
    home: Option<&Path>,
) -> Result<Config, String> {
    if let Some(key) = env_keys
        .into_iter()
        .find(|k| k.to_string_lossy().starts_with("PG"))
    {
        return Err(format!(
            "libpq also reads the environment variable {}",
            key.to_string_lossy()
        ));
    }
    // The parser's message may quote the URL, password included: it is not passed on.
    let config = Config::from_str(url)
        .map_err(|_| "DATABASE_URL has options only libpq understands".to_string())?;
    let encrypted = match config.get_ssl_mode() {
        SslMode::Disable => false,
        SslMode::Prefer | SslMode::Require => true,
        _ => return Err("sslmode is one only libpq checks".into()),
    };
    if config.get_user().is_none() {
        return Err("DATABASE_URL names no user: libpq would take the system's".into());
    }
    if config.get_hosts().is_empty()
        || config
            .get_hosts()
            .iter()
            .any(|h| !matches!(h, Host::Tcp(_)))
    {
        return Err("DATABASE_URL names no TCP host".into());
    }
    if let Some(home) = home {
        if config.get_password().is_none() && home.join(".pgpass").exists() {
            return Err("libpq would read the password from ~/.pgpass".into());
        }
        // With a root certificate there libpq verifies the server even under `require`, and it
        // presents a client certificate found there.
        if encrypted
            && ["root.crt", "postgresql.crt"]
                .iter()
                .any(|f| home.join(".postgresql").join(f).exists())
        {
            return Err("libpq would use the certificates in ~/.postgresql".into());
        }
    }
    Ok(config)
}

/// Marks its connection lost when a statement fails because the connection can no longer serve,
/// and counts the loss for the whole process.
struct Watch {
    lost: Arc<AtomicBool>,
    losses: Arc<AtomicU64>,
}

impl Instrumentation for Watch {
    fn on_connection_event(&mut self, event: InstrumentationEvent<'_>) {
        if let InstrumentationEvent::FinishQuery {
            error: Some(error), ..
        } = event
            && is_connection_lost(error)
            && !self.lost.swap(true, Ordering::Relaxed)
        {
            self.losses.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// What the workers' pools share: their figures for `/metrics`, and the count of connections
/// found lost. A loss usually means that every connection opened before it is gone too (the
/// server restarted, or a migration changed a column under their prepared statements), so each
/// pool drops, as soon as they are unused, its connections older than the latest loss.
#[derive(Clone, Default)]
pub struct Gauges {
    workers: Arc<Mutex<Vec<Arc<WorkerGauges>>>>,
    losses: Arc<AtomicU64>,
}

#[derive(Default)]
struct WorkerGauges {
    idle: AtomicI64,
    in_use: AtomicI64,
    max: AtomicI64,
}

impl Gauges {
    /// The sum over the workers' pools.
    pub fn state(&self) -> PoolState {
        let mut sum = PoolState::default();
        if let Ok(workers) = self.workers.lock() {
            for w in workers.iter() {
                let n = |g: &AtomicI64| usize::try_from(g.load(Ordering::Relaxed)).unwrap_or(0);
                sum.idle += n(&w.idle);
                sum.in_use += n(&w.in_use);
                sum.max += n(&w.max);
            }
        }
        sum
    }

    fn worker(&self, max: usize) -> Arc<WorkerGauges> {
        let gauges = Arc::new(WorkerGauges::default());
        gauges
            .max
            .store(i64::try_from(max).unwrap_or(i64::MAX), Ordering::Relaxed);
        if let Ok(mut workers) = self.workers.lock() {
            workers.push(Arc::clone(&gauges));
        }
        gauges
    }
}

/// One worker thread's door to the database. Not `Send`: made in and used from one worker only
/// (the actix App factory runs once per worker).
#[derive(Clone)]
pub struct Repo(Rc<Pool>);

struct Pool {
    target: Target,
    max: usize,
    state: RefCell<State>,
    changed: Notify,
    gauges: Arc<WorkerGauges>,
    losses: Arc<AtomicU64>,
}

#[derive(Default)]
struct State {
    /// Connections not checked out by a transaction: idle ones and those that statements share.
    open: Vec<Entry>,
    /// Every connection: open, checked out by a transaction, or being opened.
    total: usize,
    /// Transactions waiting for a connection: while there are, shared statements take no new
    /// place on a full pool's connections, so that those drain.
    exclusive_waiting: usize,
}

struct Entry {
    conn: Rc<AsyncPgConnection>,
    lost: Arc<AtomicBool>,
    users: usize,
    /// The process's losses when it was opened.
    born: u64,
}

impl Entry {
    /// Whether it takes no more statements: a statement found it lost, or it is older than the
    /// latest loss.
    fn is_stale(&self, losses: u64) -> bool {
        self.lost.load(Ordering::Relaxed) || self.born < losses
    }

    /// Whether an unused connection must go: stale, its socket closed, or left inside a
    /// transaction.
    fn is_dead(&mut self, losses: u64) -> bool {
        self.is_stale(losses) || Rc::get_mut(&mut self.conn).is_some_and(|c| c.is_broken())
    }
}

impl Repo {
    /// A pool of at most `max` connections, opened when first needed.
    pub fn new(target: Target, max: usize, gauges: &Gauges) -> Self {
        let max = max.max(1);
        Self(Rc::new(Pool {
            target,
            max,
            state: RefCell::new(State::default()),
            changed: Notify::new(),
            gauges: gauges.worker(max),
            losses: Arc::clone(&gauges.losses),
        }))
    }

    /// Runs `f` with a connection that the worker's other statements outside transactions may
    /// use at the same time: their statements are pipelined. Only for statements that run alone:
    /// a transaction goes through [`Self::exclusive`].
    pub async fn shared<T, E>(
        &self,
        f: impl AsyncFnOnce(&AsyncPgConnection) -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<DbError>,
    {
        let used = self.0.checkout_shared().await?;
        f(&used.conn).await
    }

    /// [`Self::exclusive`] for the statements of a repository function.
    pub(crate) async fn with<T>(
        &self,
        f: impl AsyncFnOnce(&mut AsyncPgConnection) -> diesel::QueryResult<T>,
    ) -> Result<T, DbError> {
        self.exclusive(async |conn| f(conn).await.map_err(DbError::from))
            .await
    }

    /// Runs `f` with a connection of its own, for a transaction or statements that must not
    /// interleave with others.
    pub async fn exclusive<T, E>(
        &self,
        f: impl AsyncFnOnce(&mut AsyncPgConnection) -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<DbError>,
    {
        let mut held = self.0.checkout_exclusive().await?;
        let conn = held.conn.as_mut().ok_or(DbError::Task)?;
        f(conn).await
    }
}

/// A connection shared by statements under way; returned when dropped.
struct Shared {
    conn: Rc<AsyncPgConnection>,
    pool: Rc<Pool>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        let mut state = self.pool.state.borrow_mut();
        if let Some(entry) = state
            .open
            .iter_mut()
            .find(|e| Rc::ptr_eq(&e.conn, &self.conn))
        {
            entry.users = entry.users.saturating_sub(1);
        }
        drop(state);
        self.pool.changed();
    }
}

/// A connection held by one transaction; returned when dropped, unless it can no longer serve.
struct Exclusive {
    conn: Option<AsyncPgConnection>,
    lost: Arc<AtomicBool>,
    born: u64,
    pool: Rc<Pool>,
}

impl Drop for Exclusive {
    fn drop(&mut self) {
        let mut state = self.pool.state.borrow_mut();
        // A future dropped mid-transaction leaves it open: `is_broken` says so.
        let healthy = self
            .conn
            .take()
            .filter(|_| {
                !self.lost.load(Ordering::Relaxed)
                    && self.born >= self.pool.losses.load(Ordering::Relaxed)
            })
            .and_then(|mut conn| (!conn.is_broken()).then_some(conn));
        match healthy {
            Some(conn) => state.open.push(Entry {
                conn: Rc::new(conn),
                lost: Arc::clone(&self.lost),
                users: 0,
                born: self.born,
            }),
            None => state.total = state.total.saturating_sub(1),
        }
        drop(state);
        self.pool.changed();
    }
}

/// A place in `total` taken for a connection being opened, given back unless it opened.
struct Opening<'a> {
    pool: &'a Pool,
    done: bool,
}

impl Drop for Opening<'_> {
    fn drop(&mut self) {
        if !self.done {
            let mut state = self.pool.state.borrow_mut();
            state.total = state.total.saturating_sub(1);
            drop(state);
            self.pool.changed();
        }
    }
}

/// What a checkout does next.
enum Place<T> {
    Taken(T),
    /// Open a new connection: its place is counted.
    Open,
    Wait,
}

/// Counts a transaction waiting for a connection, until dropped (also when its request goes).
struct Waiting<'a>(&'a Pool);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut state = self.0.state.borrow_mut();
        state.exclusive_waiting = state.exclusive_waiting.saturating_sub(1);
    }
}

impl Pool {
    /// Wakes the waiters and publishes the pool's figures.
    fn changed(&self) {
        let state = self.state.borrow();
        let idle = state.open.iter().filter(|e| e.users == 0).count();
        let to_i64 = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        self.gauges.idle.store(to_i64(idle), Ordering::Relaxed);
        self.gauges
            .in_use
            .store(to_i64(state.total.saturating_sub(idle)), Ordering::Relaxed);
        drop(state);
        self.changed.notify_waiters();
    }

    /// Drops the unused connections that can no longer serve.
    fn prune(&self, state: &mut State) {
        let before = state.open.len();
        let losses = self.losses.load(Ordering::Relaxed);
        state.open.retain_mut(|e| e.users > 0 || !e.is_dead(losses));
        state.total -= before - state.open.len();
    }

    async fn checkout_shared(self: &Rc<Self>) -> Result<Shared, DbError> {
        let deadline = tokio::time::Instant::now() + CHECKOUT_TIMEOUT;
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            match self.place_shared() {
                Place::Taken(conn) => {
                    self.changed();
                    return Ok(Shared {
                        conn,
                        pool: Rc::clone(self),
                    });
                }
                Place::Open => {
                    let lost = Arc::new(AtomicBool::new(false));
                    let born = self.losses.load(Ordering::Relaxed);
                    let conn = Rc::new(self.opened(lost.clone()).await?);
                    self.state.borrow_mut().open.push(Entry {
                        conn: Rc::clone(&conn),
                        lost,
                        users: 1,
                        born,
                    });
                    self.changed();
                    return Ok(Shared {
                        conn,
                        pool: Rc::clone(self),
                    });
                }
                Place::Wait => self.wait(changed, deadline).await?,
            }
        }
    }

    /// Where a shared statement goes now; an opening is counted in `total` already.
    fn place_shared(&self) -> Place<Rc<AsyncPgConnection>> {
        let mut state = self.state.borrow_mut();
        self.prune(&mut state);
        let full = state.total >= self.max;
        let blocked = full && state.exclusive_waiting > 0;
        let losses = self.losses.load(Ordering::Relaxed);
        // The busiest connection: statements outside transactions pipeline on one connection,
        // whose backend then answers them in batches, and the others stay free for transactions.
        // Spread over the pool, they woke more backends for fewer statements each: on two cores
        // shared with Postgres, one worker with two connections answered GET /me at about the
        // same rate either way, but with a p99 of up to 40 ms spread against 4-7 ms on one.
        let busiest = state
            .open
            .iter_mut()
            .filter(|e| !e.is_stale(losses))
            .max_by_key(|e| e.users);
        match busiest {
            Some(entry) if !blocked => {
                entry.users += 1;
                Place::Taken(Rc::clone(&entry.conn))
            }
            _ if !full => {
                state.total += 1;
                Place::Open
            }
            _ => Place::Wait,
        }
    }

    async fn checkout_exclusive(self: &Rc<Self>) -> Result<Exclusive, DbError> {
        let deadline = tokio::time::Instant::now() + CHECKOUT_TIMEOUT;
        let mut waiting = None;
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            match self.place_exclusive(&mut waiting) {
                Place::Taken(entry) => {
                    drop(waiting);
                    self.changed();
                    // Unused, so the pool held the only reference.
                    let conn = Rc::into_inner(entry.conn).ok_or(DbError::Task)?;
                    return Ok(Exclusive {
                        conn: Some(conn),
                        lost: entry.lost,
                        born: entry.born,
                        pool: Rc::clone(self),
                    });
                }
                Place::Open => {
                    drop(waiting);
                    let lost = Arc::new(AtomicBool::new(false));
                    let born = self.losses.load(Ordering::Relaxed);
                    let conn = self.opened(lost.clone()).await?;
                    self.changed();
                    return Ok(Exclusive {
                        conn: Some(conn),
                        lost,
                        born,
                        pool: Rc::clone(self),
                    });
                }
                Place::Wait => self.wait(changed, deadline).await?,
            }
        }
    }

    /// Where a transaction goes now: an unused connection, a new one (counted in `total`
    /// already), or the wait, counted in `exclusive_waiting` once.
    fn place_exclusive<'a>(&'a self, waiting: &mut Option<Waiting<'a>>) -> Place<Entry> {
        let mut state = self.state.borrow_mut();
        self.prune(&mut state);
        if let Some(i) = state.open.iter().position(|e| e.users == 0) {
            return Place::Taken(state.open.swap_remove(i));
        }
        if state.total < self.max {
            state.total += 1;
            return Place::Open;
        }
        if waiting.is_none() {
            state.exclusive_waiting += 1;
            *waiting = Some(Waiting(self));
        }
        Place::Wait
    }

    /// A new connection, its place already counted in `total`; the place is given back when
    /// opening fails or the request goes away meanwhile (an extractor of the same request failing
    /// first drops the guard's lookup mid-connect).
    async fn opened(&self, lost: Arc<AtomicBool>) -> Result<AsyncPgConnection, DbError> {
        let mut opening = Opening {
            pool: self,
            done: false,
        };
        let opened = self.target.open(lost, Arc::clone(&self.losses)).await;
        match &opened {
            Ok(_) => opening.done = true,
            Err(error) => tracing::warn!(%error, "database connection failed"),
        }
        opened
    }

    async fn wait(
        &self,
        changed: std::pin::Pin<&mut tokio::sync::futures::Notified<'_>>,
        deadline: tokio::time::Instant,
    ) -> Result<(), DbError> {
        service_kit::metrics::POOL_WAITING.inc();
        let woken = tokio::time::timeout_at(deadline, changed).await;
        service_kit::metrics::POOL_WAITING.dec();
        woken.map_err(|_| {
            service_kit::metrics::POOL_TIMEOUTS.inc();
            tracing::warn!(timeout = ?CHECKOUT_TIMEOUT, "no database connection came free");
            DbError::Unavailable(format!("no connection within {CHECKOUT_TIMEOUT:?}"))
        })
    }
}

/// Readiness: a new connection to the target opens and answers, within 2 s. The probe runs on a
/// blocking thread, away from the workers' pools, so it opens a connection of its own.
pub struct TargetReadiness(pub Target);

impl Readiness for TargetReadiness {
    fn check(&self) -> Result<(), String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        tokio::task::LocalSet::new().block_on(&runtime, async {
            let probe = async {
                let mut conn = self.0.open(Arc::default(), Arc::default()).await?;
                diesel_async::SimpleAsyncConnection::batch_execute(&mut conn, "SELECT 1")
                    .await
                    .map_err(DbError::from)
            };
            match tokio::time::timeout(Duration::from_secs(2), probe).await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(e.to_string()),
                Err(_) => Err("the database did not answer within 2 s".into()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(url: &str, env: &[&str], home: Option<&Path>) -> Result<Config, String> {
        equivalent_config(url, env.iter().map(std::ffi::OsString::from), home)
    }

    #[test]
    fn plain_urls_are_taken() {
        for url in [
            "postgres://app:pw@127.0.0.1:5432/nutrition",
            "postgresql://app:pw@db.internal/nutrition?sslmode=require",
            "postgres://app:pw@127.0.0.1/nutrition?sslmode=disable&application_name=x",
        ] {
            assert!(check(url, &["HOME", "PATH"], None).is_ok(), "{url}");
        }
    }

    #[test]
    fn what_only_libpq_does_is_refused() {
        let url = "postgres://app:pw@127.0.0.1/nutrition";
        for (url, env) in [
            (url, &["PGSSLMODE"][..]),
            (url, &["PGPASSFILE"][..]),
            ("postgres://app:pw@127.0.0.1/n?sslmode=verify-full", &[][..]),
            ("postgres://app:pw@127.0.0.1/n?sslrootcert=/ca.pem", &[][..]),
            ("postgres://app:pw@127.0.0.1/n?sslmode=allow", &[][..]),
            ("postgres://127.0.0.1/n", &[][..]),
            ("postgres://app@%2Frun%2Fpostgresql/n", &[][..]),
        ] {
            assert!(check(url, env, None).is_err(), "{url} {env:?}");
        }
    }

    #[test]
    fn files_libpq_reads_from_home_are_refused() {
        let home = std::env::temp_dir().join(format!("repo-home-{}", std::process::id()));
        std::fs::create_dir_all(home.join(".postgresql")).expect("temp home");
        let with_password = "postgres://app:pw@127.0.0.1/nutrition";
        let without = "postgres://app@127.0.0.1/nutrition";
        assert!(check(without, &[], Some(&home)).is_ok());
        std::fs::write(home.join(".pgpass"), "*:*:*:app:pw\n").expect("pgpass");
        assert!(check(without, &[], Some(&home)).is_err());
        assert!(check(with_password, &[], Some(&home)).is_ok());
        std::fs::write(home.join(".postgresql/root.crt"), "").expect("root.crt");
        assert!(check(with_password, &[], Some(&home)).is_err());
        let plain = "postgres://app:pw@127.0.0.1/nutrition?sslmode=disable";
        assert!(check(plain, &[], Some(&home)).is_ok());
        let _ = std::fs::remove_dir_all(&home);
    }
}
