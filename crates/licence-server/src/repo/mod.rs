//! The one way to the database: every statement a handler, a background job or the admin CLI
//! needs is a function of this module, taking a [`Db`] and answering plain values, never a
//! connection, a fallback or a batch. One module per table. Flows that must hold under
//! concurrent requests (the activation limit, the daily quota, webhook idempotency) are enforced
//! here, in the database, by a row lock or a single conditional statement.
//!
//! The connections are diesel-async's [`AsyncMysqlConnection`] (over mysql_async), in a small
//! pool per worker thread that the actix App factory builds ([`Db::new`]): the worker sends its
//! requests' statements from its own event loop and goes on parsing and answering others while
//! MariaDB works, which a synchronous client cannot do without a hand-off to a blocking thread
//! costing as much CPU as the statement. The two hottest statements, validate's seat by token
//! and consume's quota take, go through a [`Coalescer`] each: requests of that kind arriving
//! while the worker has its statements of the kind in flight are sent together, one statement
//! for up to [`usage::MAX_TAKEN_AT_ONCE`] licences (ARCHITECTURE.md, "licence-server's one
//! door"). A database failure is an error like any other: no path tries again elsewhere.

service_kit::id_type!(
    /// The id of a licence (`licence.id`): what a licence token names and every row of a licence
    /// points at. Never its key, which the buyer holds.
    LicenceId
);

pub mod activations;
pub mod buyers;
pub mod deactivations;
pub mod events;
pub mod fixed;
pub mod idempotency;
pub mod licences;
pub mod outbox;
pub mod rate_limit;
pub mod updates;
pub mod usage;

use std::rc::Rc;

pub use diesel_async::AsyncMysqlConnection;
use service_kit::adb::Coalescer;
pub use service_kit::adb::Pool;
pub use service_kit::db::DbError;

/// The connection every repository function runs on.
pub type Conn = AsyncMysqlConnection;

/// A worker thread's door to the database: its pool and the coalescers of the hot statements.
/// Not `Send`: made in and used from one thread.
pub struct Db {
    pool: Pool<Conn>,
    seats: Rc<Coalescer<activations::SeatsById>>,
    takes: Rc<Coalescer<usage::Takes>>,
}

impl Db {
    pub fn new(pool: Pool<Conn>) -> Self {
        Self {
            seats: Coalescer::new(activations::SeatsById(pool.clone())),
            takes: Coalescer::new(usage::Takes(pool.clone())),
            pool,
        }
    }

    /// Runs `work` on one connection of the pool.
    pub(crate) async fn run<T>(
        &self,
        work: impl AsyncFnOnce(&mut Conn) -> diesel::QueryResult<T>,
    ) -> Result<T, DbError> {
        self.pool.run(work).await
    }

    /// Runs `work` in one transaction on one connection of the pool: committed when it
    /// succeeds, rolled back when it fails. A connection whose work is dropped half-way is
    /// closed, not pooled again (`Pool::run`), which rolls the transaction back.
    pub(crate) async fn transaction<T>(
        &self,
        work: impl AsyncFnOnce(&mut Conn) -> diesel::QueryResult<T>,
    ) -> Result<T, DbError> {
        use diesel_async::{AnsiTransactionManager, TransactionManager};
        self.run(async move |conn| {
            AnsiTransactionManager::begin_transaction(conn).await?;
            let done = match work(conn).await {
                Ok(value) => AnsiTransactionManager::commit_transaction(conn)
                    .await
                    .map(|()| value),
                Err(error) => Err(error),
            };
            if done.is_err() {
                // A failed rollback leaves the transaction manager broken: the pool then closes
                // the connection instead of taking it back.
                let _ = AnsiTransactionManager::rollback_transaction(conn).await;
            }
            done
        })
        .await
    }

    /// One round trip: whether the database answers.
    pub async fn ping(&self) -> Result<(), DbError> {
        use diesel_async::SimpleAsyncConnection;
        self.run(async |conn| conn.batch_execute("DO 1").await)
            .await
    }
}

use rand::Rng;

/// A random id in the form of a version 4 UUID, for the `CHAR(36)` primary keys.
pub fn new_id() -> String {
    let mut b: [u8; 16] = rand::rng().random();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = crate::signing::to_hex(&b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// A fresh licence key (see `domain::licensing::format_key`).
pub fn new_licence_key() -> String {
    let bytes: [u8; domain::licensing::KEY_RANDOM_BYTES] = rand::rng().random();
    domain::licensing::format_key(&bytes)
}

/// Whether a failed transaction may simply be run again: InnoDB chose it as a deadlock victim,
/// or a concurrent transaction inserted the same unique value first.
pub fn is_retryable(err: &diesel::result::Error) -> bool {
    use diesel::result::{DatabaseErrorKind, Error};
    matches!(
        err,
        Error::DatabaseError(
            DatabaseErrorKind::SerializationFailure | DatabaseErrorKind::UniqueViolation,
            _
        )
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_look_like_uuids() {
        let id = super::new_id();
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "4");
        assert_ne!(id, super::new_id());
    }

    /// `bench/licence/statements.lua` sends the hot statements without the service, to measure
    /// what the database alone allows; it must send the very texts the service prepares.
    #[test]
    fn the_benchmark_sends_the_statements_the_service_prepares() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../bench/licence/statements.lua"
        );
        let lua = std::fs::read_to_string(path).expect("bench/licence/statements.lua");
        let squeezed = |sql: &str| sql.split_whitespace().collect::<String>();
        for (name, sql) in [
            ("SEAT", super::activations::SEAT_BY_ID),
            ("TAKE", super::rate_limit::TAKE),
            ("TAKE_ON_PLAN", super::usage::TAKE[1].as_str()),
        ] {
            let opening = format!("local {name} = [[");
            let from = lua.find(&opening).expect(name) + opening.len();
            let to = from + lua[from..].find("]]").expect(name);
            assert_eq!(squeezed(&lua[from..to]), squeezed(sql), "{name}");
        }
    }
}

/// A plan or status column read as the enum it names. A value the code does not know (the
/// table's CHECK constraint admits none, but a manual edit or a newer version could write one)
/// fails the row's decoding, so the request answers an error rather than guess a plan or a
/// status for it.
#[derive(Debug, Clone, Copy, diesel::deserialize::FromSqlRow)]
pub struct Known<T>(pub T);

impl<T> diesel::deserialize::FromSql<diesel::sql_types::Text, diesel::mysql::Mysql> for Known<T>
where
    T: std::str::FromStr,
{
    fn from_sql(value: diesel::mysql::MysqlValue<'_>) -> diesel::deserialize::Result<Self> {
        let name = <String as diesel::deserialize::FromSql<
            diesel::sql_types::Text,
            diesel::mysql::Mysql,
        >>::from_sql(value)?;
        name.parse()
            .map(Known)
            .map_err(|_| format!("unknown value {name:?} in a plan or status column").into())
    }
}

impl From<Known<domain::licensing::Plan>> for domain::licensing::Plan {
    fn from(known: Known<Self>) -> Self {
        known.0
    }
}

impl From<Known<domain::licensing::Status>> for domain::licensing::Status {
    fn from(known: Known<Self>) -> Self {
        known.0
    }
}
