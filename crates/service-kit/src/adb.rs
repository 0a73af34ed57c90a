//! Asynchronous diesel (`diesel-async`) for a service whose requests send their statements from
//! the worker thread that parsed them: a small pool of connections, one per worker in an actix
//! server (built in the App factory, so that a connection's socket is only ever driven by the
//! event loop of the thread that opened it), and a [`Coalescer`] that sends the requests of one
//! kind waiting on a worker together, in one statement.
//!
//! A synchronous client blocks the worker's thread for the whole round trip, and handing the
//! work to a blocking thread costs two context switches per request: on a small machine either
//! costs about as much CPU as the statement. Here the worker parses and answers other requests
//! while MariaDB works.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use diesel::ConnectionResult;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel_async::{AsyncConnection, TransactionManager};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::db::{CHECKOUT_TIMEOUT, DbError, is_connection_lost};

/// Longest wait for a new connection to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// An idle connection is closed rather than reused after this long, as the r2d2 pools do.
const IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// Longest a unit of work may take before its request is answered 503.
const WORK_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens one connection.
pub type Connect<C> =
    Arc<dyn Fn() -> Pin<Box<dyn Future<Output = ConnectionResult<C>> + Send>> + Send + Sync>;

/// Up to `size` connections, opened on demand. Cloning shares the pool.
pub struct Pool<C> {
    inner: Arc<Inner<C>>,
}

impl<C> Clone for Pool<C> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

struct Inner<C> {
    idle: Mutex<Vec<(C, Instant)>>,
    permits: Arc<Semaphore>,
    connect: Connect<C>,
    size: usize,
}

impl<C: AsyncConnection + 'static> Pool<C> {
    /// A pool of at most `size` connections (at least one); connects lazily, so that a service
    /// starts (and its `/ready` answers 503) while its database is still coming up.
    pub fn new(size: usize, connect: Connect<C>) -> Self {
        let size = size.max(1);
        Self {
            inner: Arc::new(Inner {
                idle: Mutex::new(Vec::with_capacity(size)),
                permits: Arc::new(Semaphore::new(size)),
                connect,
                size,
            }),
        }
    }

    pub fn size(&self) -> usize {
        self.inner.size
    }

    /// Connections checked out and idle now, and the most the pool opens.
    pub fn state(&self) -> crate::metrics::PoolState {
        let idle = self
            .inner
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        crate::metrics::PoolState {
            in_use: self.inner.size - self.inner.permits.available_permits(),
            idle,
            max: self.inner.size,
        }
    }

    /// A connection, waiting at most [`CHECKOUT_TIMEOUT`] for one to be free.
    async fn checkout(&self) -> Result<Pooled<C>, DbError> {
        crate::metrics::POOL_WAITING.inc();
        let permit = tokio::time::timeout(
            CHECKOUT_TIMEOUT,
            Arc::clone(&self.inner.permits).acquire_owned(),
        )
        .await;
        crate::metrics::POOL_WAITING.dec();
        let Ok(Ok(permit)) = permit else {
            crate::metrics::POOL_TIMEOUTS.inc();
            return Err(DbError::Unavailable(
                "no connection free within the timeout".into(),
            ));
        };
        let now = Instant::now();
        let reused = {
            let mut idle = self
                .inner
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            // The most recently used first: the others age out.
            idle.retain(|(_, at)| now.saturating_duration_since(*at) < IDLE_TIMEOUT);
            idle.pop().map(|(conn, _)| conn)
        };
        let conn = match reused {
            Some(conn) => conn,
            None => match tokio::time::timeout(CONNECT_TIMEOUT, (self.inner.connect)()).await {
                Ok(Ok(conn)) => conn,
                Ok(Err(error)) => {
                    tracing::warn!(%error, "cannot connect to the database");
                    return Err(DbError::Unavailable(error.to_string()));
                }
                Err(_) => {
                    return Err(DbError::Unavailable(
                        "no connection within the timeout".into(),
                    ));
                }
            },
        };
        Ok(Pooled {
            conn: Some(conn),
            pool: Arc::clone(&self.inner),
            _permit: permit,
        })
    }

    /// Runs `work` on a connection of the pool. The connection goes back to the pool only when
    /// the work ran to its end on a connection still sound, outside any transaction: one whose
    /// work was dropped half-way (the client went away) may be in the middle of an answer, and
    /// is closed instead. A lost connection, a checkout or a work that timed out is
    /// [`DbError::Unavailable`] (503); a statement the database refused is [`DbError::Query`].
    pub async fn run<T>(
        &self,
        work: impl AsyncFnOnce(&mut C) -> Result<T, DieselError>,
    ) -> Result<T, DbError> {
        let mut conn = self.checkout().await?;
        let outcome = tokio::time::timeout(WORK_TIMEOUT, work(&mut conn)).await;
        match outcome {
            Err(_) => Err(DbError::Unavailable(format!(
                "no answer within {WORK_TIMEOUT:?}"
            ))),
            Ok(Err(error)) if is_connection_lost(&error) => {
                Err(DbError::Unavailable(error.to_string()))
            }
            // The client reports a lost connection, a protocol error and a statement MariaDB
            // refused alike, with no kind of their own: such a connection is not trusted again.
            // A constraint's refusal leaves it sound.
            Ok(Err(error @ DieselError::DatabaseError(kind, _)))
                if !matches!(
                    kind,
                    DatabaseErrorKind::UniqueViolation
                        | DatabaseErrorKind::ForeignKeyViolation
                        | DatabaseErrorKind::NotNullViolation
                        | DatabaseErrorKind::CheckViolation
                ) =>
            {
                Err(DbError::Query(error))
            }
            Ok(outcome) => {
                if !C::TransactionManager::is_broken_transaction_manager(&mut conn)
                    && C::TransactionManager::transaction_manager_status_mut(&mut conn)
                        .transaction_depth()
                        .is_ok_and(|depth| depth.is_none())
                {
                    conn.give_back();
                }
                outcome.map_err(DbError::Query)
            }
        }
    }
}

/// The pools of a service (one per worker), for `/metrics`.
pub struct Pools<C>(Arc<Mutex<Vec<Pool<C>>>>);

impl<C> Clone for Pools<C> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<C> Default for Pools<C> {
    fn default() -> Self {
        Self(Arc::default())
    }
}

impl<C: AsyncConnection + 'static> Pools<C> {
    /// `pool`, counted from now on.
    pub fn register(&self, pool: Pool<C>) -> Pool<C> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(pool.clone());
        pool
    }

    /// The sum over the pools.
    pub fn state(&self) -> crate::metrics::PoolState {
        let pools = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        pools
            .iter()
            .map(Pool::state)
            .fold(crate::metrics::PoolState::default(), |sum, s| {
                crate::metrics::PoolState {
                    in_use: sum.in_use + s.in_use,
                    idle: sum.idle + s.idle,
                    max: sum.max + s.max,
                }
            })
    }
}

/// A connection checked out of a [`Pool`]; dropped unless given back.
struct Pooled<C> {
    conn: Option<C>,
    pool: Arc<Inner<C>>,
    _permit: OwnedSemaphorePermit,
}

impl<C> Pooled<C> {
    fn give_back(&mut self) {
        if let Some(conn) = self.conn.take() {
            self.pool
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((conn, Instant::now()));
        }
    }
}

impl<C> Deref for Pooled<C> {
    type Target = C;
    fn deref(&self) -> &C {
        self.conn.as_ref().expect("a checked-out connection")
    }
}

impl<C> DerefMut for Pooled<C> {
    fn deref_mut(&mut self) -> &mut C {
        self.conn.as_mut().expect("a checked-out connection")
    }
}

/// Requests answered by a statement that answered several at once, by kind.
static TOGETHER: std::sync::LazyLock<prometheus::IntCounterVec> = std::sync::LazyLock::new(|| {
    crate::metrics::counter_vec(
        "db_requests_together_total",
        "Requests sent in one statement with others, by a worker that had its most statements \
         of their kind in flight when they arrived, by kind.",
        &["kind"],
    )
});

/// A kind of request whose statement can answer several at once.
pub trait Batch: 'static {
    /// The kind, as `db_requests_together_total` names it.
    const KIND: &'static str;
    /// What one request asks.
    type Item;
    /// What one request is answered.
    type Answer;
    /// Most requests in one statement.
    const MAX: usize;
    /// Most statements of this kind a worker has in flight at once. A statement for many
    /// requests costs the database little more than one for a single request, so more of them
    /// only split the same requests into more, smaller statements.
    const SENDERS: usize;
    /// Whether `item` may join `batch` (never empty).
    fn fits(batch: &[Self::Item], item: &Self::Item) -> bool;
    /// Sends `batch`'s statement: one answer per request, in their order.
    fn send(
        &self,
        batch: &[Self::Item],
    ) -> impl Future<Output = Result<Vec<Self::Answer>, DbError>>;
}

type Reply<A> = tokio::sync::oneshot::Sender<Result<A, DbError>>;
/// A request waiting, with where its answer goes.
type Waiting<B> = (<B as Batch>::Item, Reply<<B as Batch>::Answer>);

/// The requests of one [`Batch`] kind waiting on one worker thread (not `Send`): while the
/// worker has [`Batch::SENDERS`] statements of that kind in flight, the requests that arrive
/// wait, and the next of those statements to come back sends them together, up to
/// [`Batch::MAX`] in one statement. A busy worker then pays the database's cost per statement
/// (round trip, parse, plan, commit) once for many requests, and an idle one adds no wait.
pub struct Coalescer<B: Batch> {
    kind: B,
    waiting: RefCell<VecDeque<Waiting<B>>>,
    senders: Cell<usize>,
}

impl<B: Batch> Coalescer<B> {
    pub fn new(kind: B) -> Rc<Self> {
        // Shown at zero from the first scrape on.
        TOGETHER.with_label_values(&[B::KIND]);
        Rc::new(Self {
            kind,
            waiting: RefCell::default(),
            senders: Cell::new(0),
        })
    }

    /// Queues one request and waits for its statement's answer. Must run on an actix (or
    /// `LocalSet`) thread: the sender is a local task.
    pub async fn submit(self: &Rc<Self>, item: B::Item) -> Result<B::Answer, DbError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.waiting.borrow_mut().push_back((item, reply));
        if self.senders.get() < B::SENDERS {
            self.senders.set(self.senders.get() + 1);
            tokio::task::spawn_local(Rc::clone(self).send_waiting());
        }
        answer.await.unwrap_or_else(|_| {
            // Only a worker stopping drops a sender with requests in hand.
            Err(DbError::Unavailable(
                "the worker stopped before the statement answered".into(),
            ))
        })
    }

    /// Sends the waiting requests until none is left. The count of senders drops in the same
    /// step as the queue is found empty, so a request queued after it always finds a sender or
    /// starts one.
    async fn send_waiting(self: Rc<Self>) {
        struct Leaving<'a>(&'a Cell<usize>);
        impl Drop for Leaving<'_> {
            fn drop(&mut self) {
                self.0.set(self.0.get().saturating_sub(1));
            }
        }
        let _leaving = Leaving(&self.senders);
        loop {
            let (items, replies) = self.next_batch();
            if items.is_empty() {
                return;
            }
            match self.kind.send(&items).await {
                Ok(answers) if answers.len() == replies.len() => {
                    if replies.len() > 1 {
                        TOGETHER
                            .with_label_values(&[B::KIND])
                            .inc_by(replies.len() as u64);
                    }
                    for (reply, answer) in replies.into_iter().zip(answers) {
                        let _ = reply.send(Ok(answer));
                    }
                }
                Ok(_) => reply_all(replies, "a statement answered the wrong number of rows"),
                // Each request answers 503 as it would have alone.
                Err(error) => reply_all(replies, &error.to_string()),
            }
        }
    }

    /// The oldest waiting request and those after it that fit its batch.
    fn next_batch(&self) -> (Vec<B::Item>, Vec<Reply<B::Answer>>) {
        let mut waiting = self.waiting.borrow_mut();
        // A request whose client went away while it waited is not sent, as it would not have
        // been without the wait.
        waiting.retain(|(_, reply)| !reply.is_closed());
        let mut items = Vec::new();
        let mut replies = Vec::new();
        let mut i = 0;
        while i < waiting.len() && items.len() < B::MAX {
            if items.is_empty() || B::fits(&items, &waiting[i].0) {
                if let Some((item, reply)) = waiting.remove(i) {
                    items.push(item);
                    replies.push(reply);
                }
            } else {
                i += 1;
            }
        }
        (items, replies)
    }
}

fn reply_all<A>(replies: Vec<Reply<A>>, error: &str) {
    for reply in replies {
        let _ = reply.send(Err(DbError::Unavailable(error.to_owned())));
    }
}
