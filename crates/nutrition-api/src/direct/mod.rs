//! The read of `GET /me` over an asynchronous Postgres connection owned by each worker thread.
//!
//! diesel's client is synchronous, so every other route hands its statements to a blocking
//! thread and is woken when they are done: two thread switches per request, which on a small
//! machine cost more CPU than the statement itself. The hottest route instead sends its one
//! statement from the worker thread that parsed the request, on a connection whose driver runs on
//! that same thread, and concurrent requests of a worker are pipelined on it.
//!
//! This path only accelerates: whenever it cannot answer (not connected yet, connection lost, a
//! statement error, a session that needs a write), the request goes the usual way through the
//! pool, which also owns every error answer. Connecting happens in the background and is never
//! waited for by a request.
//!
//! It is used only where it connects exactly as libpq would for the same `DATABASE_URL`:
//! libpq also reads `PG*` environment variables, `~/.pgpass` and the certificates in
//! `~/.postgresql`, and knows options and `sslmode`s this client does not. When any of these
//! play a part, [`Target::for_url`] says why and the route stays on libpq.

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;
use std::str::FromStr;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use service_kit::metrics::prometheus::{IntCounter, IntCounterVec};
use session::{Session, User};
use tokio_postgres::config::{Host, SslMode};
use tokio_postgres::{Client, Config, Row, Statement};

mod tls;

/// `GET /me` reads by the way they went: over the worker's connection or through the pool.
static READS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    service_kit::metrics::counter_vec(
        "me_reads_total",
        "GET /me session reads, by the way they went: direct (the worker's own connection) or pool.",
        &["path"],
    )
});
/// The two series of [`READS`], looked up once rather than by label on every request.
pub static DIRECT_READS: LazyLock<IntCounter> =
    LazyLock::new(|| READS.with_label_values(&["direct"]));
pub static POOL_READS: LazyLock<IntCounter> = LazyLock::new(|| READS.with_label_values(&["pool"]));

/// The profile columns `GET /me` answers with: protocol, milestones, paused until.
pub type ProfileColumns = (Option<String>, bool, Option<DateTime<Utc>>);

/// What the read finds for a token: the session, its user and the profile row, if any.
pub type MeRow = (Session, User, Option<ProfileColumns>);

/// The same columns, in the same order, as the pool's statement of the route.
pub const ME_SQL: &str = "SELECT s.id, s.token, s.user_id, s.expires_at, s.created_at, s.updated_at, \
    s.ip_address, s.user_agent, u.id, u.name, u.email, u.email_verified, u.image, u.created_at, \
    u.updated_at, p.fasting_protocol, p.fasting_milestones, p.fasting_paused_until \
    FROM auth.session s JOIN auth.\"user\" u ON u.id = s.user_id \
    LEFT JOIN nutrition.profile p ON p.user_id = s.user_id \
    WHERE s.token = $1";

/// Longest wait for a connection to open and prepare its statement.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// After a failed connection or read, requests use the pool for this long before a new attempt.
const RETRY_AFTER: Duration = Duration::from_secs(2);
/// Longest wait for the statement's answer before the request goes through the pool instead.
const QUERY_TIMEOUT: Duration = Duration::from_secs(2);

/// Where and how to connect: shared by every worker thread.
#[derive(Clone)]
pub struct Target {
    config: Arc<Config>,
    tls: tls::Tls,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target").finish_non_exhaustive()
    }
}

impl Target {
    /// The target for `url` when this client connects to it exactly as libpq would, given the
    /// process's environment and home directory; otherwise the reason it would not.
    pub fn for_url(url: &str) -> Result<Self, String> {
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        let config = equivalent_config(url, std::env::vars_os().map(|(k, _)| k), home.as_deref())?;
        let tls = tls::Tls::new().map_err(|e| format!("TLS set-up failed: {e}"))?;
        Ok(Self {
            config: Arc::new(config),
            tls,
        })
    }

    async fn open(&self) -> Result<Link, tokio_postgres::Error> {
        let (client, connection) = self.config.connect(self.tls.clone()).await?;
        // The driver lives on this worker's thread, like the requests that use it; it ends when
        // the client is dropped or the socket closes.
        actix_web::rt::spawn(async move {
            if let Err(error) = connection.await {
                tracing::warn!(%error, "direct Postgres connection ended");
            }
        });
        let statement = client.prepare(ME_SQL).await?;
        Ok(Link { client, statement })
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

/// An open connection with the route's statement prepared on it.
struct Link {
    client: Client,
    statement: Statement,
}

enum Slot {
    Empty,
    Connecting,
    Ready(Rc<Link>),
    /// The last attempt failed; the next one waits until then.
    Resting(Instant),
}

/// One worker thread's connection. Not `Send`: it is made in and used from one worker only.
pub struct Reader {
    target: Option<Target>,
    slot: Rc<RefCell<Slot>>,
}

impl Reader {
    /// `None` keeps every request on the pool.
    pub fn new(target: Option<Target>) -> Self {
        Self {
            target,
            slot: Rc::new(RefCell::new(Slot::Empty)),
        }
    }

    /// The row of the session with `token` (`Some(None)`: no such session), or `None` when this
    /// path cannot answer now and the pool must.
    pub async fn me(&self, token: &str) -> Option<Option<MeRow>> {
        let link = self.link()?;
        let answer = tokio::time::timeout(
            QUERY_TIMEOUT,
            link.client.query_opt(&link.statement, &[&token]),
        )
        .await;
        let error = match answer {
            Ok(Ok(row)) => match row.as_ref().map(me_row).transpose() {
                Ok(found) => return Some(found),
                Err(error) => format!("unexpected row: {error}"),
            },
            Ok(Err(error)) => error.to_string(),
            // Stuck behind a dead socket, or the database is overloaded.
            Err(_) => format!("no answer within {QUERY_TIMEOUT:?}"),
        };
        // Whatever went wrong (a lost connection, a statement the schema no longer fits), the
        // link is dropped and the pool answers until a fresh one is opened after a pause: a
        // fault that persists costs one failed read and one connection per pause, not a failed
        // read in front of every request.
        self.set_aside(&link);
        tracing::warn!(%error, "direct read failed; using the pool");
        None
    }

    /// The open link, or `None` after starting to open one when there is none.
    fn link(&self) -> Option<Rc<Link>> {
        let target = self.target.as_ref()?;
        {
            let slot = self.slot.borrow();
            match &*slot {
                Slot::Ready(link) if !link.client.is_closed() => return Some(Rc::clone(link)),
                Slot::Connecting => return None,
                Slot::Resting(until) if Instant::now() < *until => return None,
                _ => {}
            }
        }
        *self.slot.borrow_mut() = Slot::Connecting;
        let target = target.clone();
        let slot = Rc::clone(&self.slot);
        actix_web::rt::spawn(async move {
            let opened = tokio::time::timeout(CONNECT_TIMEOUT, target.open()).await;
            *slot.borrow_mut() = match opened {
                Ok(Ok(link)) => Slot::Ready(Rc::new(link)),
                Ok(Err(error)) => {
                    tracing::warn!(%error, "direct Postgres connection failed");
                    Slot::Resting(Instant::now() + RETRY_AFTER)
                }
                Err(_) => {
                    tracing::warn!("direct Postgres connection timed out");
                    Slot::Resting(Instant::now() + RETRY_AFTER)
                }
            };
        });
        None
    }

    fn set_aside(&self, link: &Rc<Link>) {
        let mut slot = self.slot.borrow_mut();
        if matches!(&*slot, Slot::Ready(current) if Rc::ptr_eq(current, link)) {
            *slot = Slot::Resting(Instant::now() + RETRY_AFTER);
        }
    }
}

fn me_row(row: &Row) -> Result<MeRow, tokio_postgres::Error> {
    let session = Session {
        id: row.try_get(0)?,
        token: row.try_get(1)?,
        user_id: row.try_get(2)?,
        expires_at: row.try_get(3)?,
        created_at: row.try_get(4)?,
        updated_at: row.try_get(5)?,
        ip_address: row.try_get(6)?,
        user_agent: row.try_get(7)?,
    };
    let user = User {
        id: row.try_get(8)?,
        name: row.try_get(9)?,
        email: row.try_get(10)?,
        email_verified: row.try_get(11)?,
        image: row.try_get(12)?,
        created_at: row.try_get(13)?,
        updated_at: row.try_get(14)?,
    };
    // The column is NOT NULL in the table: null means the left join found no profile.
    let milestones: Option<bool> = row.try_get(16)?;
    let profile = match milestones {
        Some(milestones) => Some((row.try_get(15)?, milestones, row.try_get(17)?)),
        None => None,
    };
    Ok((session, user, profile))
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
    fn what_only_libpq_does_keeps_the_pool() {
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
    fn files_libpq_reads_from_home_keep_the_pool() {
        let home = std::env::temp_dir().join(format!("direct-home-{}", std::process::id()));
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
