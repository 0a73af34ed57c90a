//! The MariaDB side: the connections of the repository's door ([`pool`]), which work in UTC,
//! and migrations under `GET_LOCK`, which run on one synchronous diesel connection at start-up
//! (diesel_migrations has no asynchronous harness for MariaDB).

use std::sync::Arc;
use std::time::Duration;

use diesel::mysql::MysqlConnection;
use diesel::sql_types::{Integer, Nullable};
use diesel::{Connection, QueryableByName, RunQueryDsl};
use diesel_async::AsyncMysqlConnection;
use diesel_migrations::{EmbeddedMigrations, embed_migrations};
use mysql_async::{Opts, OptsBuilder};
use service_kit::Secret;

use crate::repo::Pool;

pub const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations-licensing");

/// Named lock serialising the migration runs of one database across processes. MariaDB's named
/// locks are server-wide, so the name carries the database's (hashed to stay within the 64
/// characters a lock name may have): migrators of other databases on the same server, another
/// environment or the tests' scratch databases, never wait for each other.
const MIGRATION_LOCK: &str = "CONCAT('licensing.migrations.', MD5(DATABASE()))";
/// How long a second migrator waits for the first before giving up.
const MIGRATION_LOCK_WAIT_SECS: i32 = 300;

fn utc_session(conn: &mut MysqlConnection) -> diesel::QueryResult<()> {
    diesel::sql_query("SET time_zone = '+00:00'").execute(conn)?;
    Ok(())
}

/// How the door's client connects for `DATABASE_URL`, as libmariadb (the migrations' client)
/// does for the same URL: the host, port, user, password and database of the URL; the host
/// `localhost` through the server's Unix socket once connected (libmariadb takes it to mean its
/// socket); the options `unix_socket` and `ssl_mode`. This client has no TLS: `ssl_mode`
/// `disabled` and `preferred` connect in plaintext (libmariadb's `preferred` does too with a
/// server that offers no TLS), and a mode that requires TLS, or any other option, is refused at
/// start-up rather than ignored.
pub fn connect_options(url: &Secret) -> anyhow::Result<Opts> {
    // The parser's messages may quote the URL, password included: they are not passed on.
    let parsed =
        url::Url::parse(url.expose()).map_err(|_| anyhow::anyhow!("DATABASE_URL is not a URL"))?;
    if !matches!(parsed.scheme(), "mysql" | "mariadb") {
        anyhow::bail!("DATABASE_URL must start with mysql://");
    }
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8()
            .map(|s| s.into_owned())
            .map_err(|_| anyhow::anyhow!("DATABASE_URL is not UTF-8 once decoded"))
    };
    let host = match parsed.host_str() {
        None | Some("") => anyhow::bail!("DATABASE_URL names no host"),
        Some(host) => host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned(),
    };
    let local = host.eq_ignore_ascii_case("localhost");
    let database = decode(parsed.path().trim_start_matches('/'))?;
    let mut opts = OptsBuilder::default()
        .ip_or_hostname(host)
        .tcp_port(parsed.port().unwrap_or(3306))
        .user(
            (!parsed.username().is_empty())
                .then(|| decode(parsed.username()))
                .transpose()?,
        )
        .pass(parsed.password().map(decode).transpose()?)
        .db_name((!database.is_empty()).then_some(database))
        .prefer_socket(local)
        // diesel-async keeps its own cache of prepared statements, and counts the rows an
        // update matched, as diesel does.
        .stmt_cache_size(0)
        .client_found_rows(true);
    for (name, value) in parsed.query_pairs() {
        match (&*name, value.to_ascii_lowercase().as_str()) {
            ("ssl_mode", "disabled" | "preferred") => {}
            ("ssl_mode", mode) => {
                anyhow::bail!("DATABASE_URL asks for ssl_mode={mode}; this client has no TLS")
            }
            ("unix_socket", _) => opts = opts.socket(Some(value.into_owned())),
            (other, _) => {
                anyhow::bail!("DATABASE_URL has an option this service does not read: {other}")
            }
        }
    }
    Ok(opts.into())
}

/// A pool of at most `size` connections to `opts`, each in UTC (diesel-async sets the session's
/// time zone when it connects). Connects lazily.
pub fn pool(opts: &Opts, size: usize) -> Pool<crate::repo::Conn> {
    let opts = opts.clone();
    Pool::new(
        size,
        Arc::new(move || {
            let opts = opts.clone();
            Box::pin(async move {
                let conn = mysql_async::Conn::new(opts)
                    .await
                    .map_err(|e| diesel::ConnectionError::BadConnection(e.to_string()))?;
                AsyncMysqlConnection::try_from(conn).await
            })
        }),
    )
}

#[derive(QueryableByName)]
struct LockResult {
    #[diesel(sql_type = Nullable<Integer>)]
    acquired: Option<i32>,
}

/// Applies pending migrations under a MariaDB named lock; returns the versions applied.
pub fn migrate(conn: &mut MysqlConnection) -> anyhow::Result<Vec<String>> {
    service_kit::db::migrate_locked(conn, MIGRATIONS, lock_migrations, unlock_migrations)
}

/// Takes the connected database's migration lock, waiting for another migrator if need be.
pub fn lock_migrations(conn: &mut MysqlConnection) -> anyhow::Result<()> {
    let got: LockResult = diesel::sql_query(format!(
        "SELECT GET_LOCK({MIGRATION_LOCK}, {MIGRATION_LOCK_WAIT_SECS}) AS acquired"
    ))
    .get_result(conn)?;
    match got.acquired {
        Some(1) => Ok(()),
        _ => Err(anyhow::anyhow!(
            "another process held the migration lock for {MIGRATION_LOCK_WAIT_SECS} s"
        )),
    }
}

/// Releases the lock [`lock_migrations`] took.
pub fn unlock_migrations(conn: &mut MysqlConnection) -> anyhow::Result<()> {
    diesel::sql_query(format!("DO RELEASE_LOCK({MIGRATION_LOCK})")).execute(conn)?;
    Ok(())
}

/// Connects (waiting up to `wait` for MariaDB) and migrates.
pub fn connect_and_migrate(url: &Secret, wait: Duration) -> anyhow::Result<Vec<String>> {
    let mut conn = service_kit::db::retry_for(wait, "connecting to MariaDB", || {
        let mut conn = MysqlConnection::establish(url.expose())?;
        utc_session(&mut conn)?;
        Ok(conn)
    })?;
    migrate(&mut conn)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(url: &str) -> anyhow::Result<Opts> {
        connect_options(&Secret::new(url.to_owned()))
    }

    #[test]
    fn reads_the_urls_libmariadb_reads() {
        let o = opts("mysql://app:p%40ss@db.internal:3307/licensing").expect("plain");
        assert_eq!(o.ip_or_hostname(), "db.internal");
        assert_eq!(o.tcp_port(), 3307);
        assert_eq!(o.user(), Some("app"));
        assert_eq!(o.pass(), Some("p@ss"));
        assert_eq!(o.db_name(), Some("licensing"));
        assert!(!o.prefer_socket());
        assert!(
            opts("mysql://app:pw@localhost/licensing")
                .expect("localhost")
                .prefer_socket()
        );
        let o =
            opts("mysql://app:pw@127.0.0.1/licensing?ssl_mode=disabled&unix_socket=/run/m.sock")
                .expect("options");
        assert_eq!(o.socket(), Some("/run/m.sock"));
        assert!(opts("mysql://app:pw@127.0.0.1/licensing?ssl_mode=PREFERRED").is_ok());
    }

    #[test]
    fn refuses_what_it_cannot_honour_without_quoting_the_password() {
        for (url, why) in [
            (
                "mysql://app:pw@127.0.0.1/licensing?ssl_mode=required",
                "TLS",
            ),
            (
                "mysql://app:pw@127.0.0.1/licensing?ssl_ca=/ca.pem",
                "ssl_ca",
            ),
            ("postgres://app:pw@127.0.0.1/licensing", "mysql://"),
            ("mysql:///licensing", "no host"),
        ] {
            let err = opts(url).expect_err(url).to_string();
            assert!(err.contains(why), "{url}: {err}");
            assert!(
                !err.contains("pw"),
                "{url}: the message quotes the password"
            );
        }
    }
}
