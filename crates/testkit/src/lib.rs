//! Test kit: everything the integration tests of the services need to run against real parts.
//!
//! - [`postgres::TestPostgres`] and [`mariadb::TestMariaDb`]: a uniquely named, freshly created
//!   database per test, dropped afterwards, on the machine's real servers.
//! - [`proxy::TcpProxy`]: a TCP relay that can be cut, to see a service lose its database.
//! - [`process`]: running the real binaries with a chosen environment.
//! - [`smtp::SmtpServer`]: a real SMTP server that records messages and can be switched off.
//! - [`push_service::FakePushService`]: a Web Push service that verifies VAPID, decrypts and
//!   records every message, and answers as a test scripts it.
//! - [`otlp::Collector`]: an OTLP/HTTP collector that decodes and keeps the spans it receives.
//!
//! The admin connections come from `TEST_POSTGRES_URL` and `TEST_MYSQL_URL`, which the
//! project's test command sets up; the defaults match it.

pub mod checks;
pub mod database;
pub mod http;
pub mod mariadb;
pub mod oauth;
pub mod openapi;
pub mod otlp;
pub mod postgres;
pub mod process;
pub mod proxy;
pub mod push_service;
pub mod smtp;
pub mod stack;
pub mod webdriver;

use rand::Rng;

/// Initialises OpenSSL with `NO_ATEXIT` before the client libraries touch it. libpq and the
/// MariaDB client would otherwise register OpenSSL's exit-time clean-up, which frees state that
/// pool threads still opening TLS connections use while the test process exits ("double free").
/// The binaries do the same through `service_kit::cli::process_init`.
pub fn process_init() {
    openssl::init();
}

/// A database name unique across parallel tests and test processes: `t_<unix time>_<random>`.
/// The time lets a later run drop databases that a crashed run left behind.
pub(crate) fn unique_db_name() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let suffix: u64 = rand::rng().random();
    format!("t_{now}_{suffix:016x}")
}

/// Whether a test database name is older than an hour, so certainly not in use by a running test.
pub(crate) fn is_stale(name: &str) -> bool {
    let Some(secs) = name
        .strip_prefix("t_")
        .and_then(|rest| rest.split('_').next())
        .and_then(|s| s.parse::<u64>().ok())
    else {
        return false;
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    now.saturating_sub(secs) > 3600
}

/// Replaces the database name (the URL path) of a connection URL.
pub(crate) fn with_database(url: &str, db: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            u.set_path(&format!("/{db}"));
            u.to_string()
        }
        Err(_) => url.to_owned(),
    }
}

/// Replaces host and port of a connection URL, to route it through a [`proxy::TcpProxy`].
pub fn with_host_port(url: &str, addr: std::net::SocketAddr) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            let _ = u.set_host(Some(&addr.ip().to_string()));
            let _ = u.set_port(Some(addr.port()));
            u.to_string()
        }
        Err(_) => url.to_owned(),
    }
}

/// The `host:port` a connection URL points to.
pub fn socket_addr_of(url: &str) -> anyhow::Result<std::net::SocketAddr> {
    let u = url::Url::parse(url)?;
    let host = u
        .host_str()
        .ok_or_else(|| anyhow::anyhow!("no host in {url}"))?;
    let port = u
        .port()
        .ok_or_else(|| anyhow::anyhow!("no port in database URL"))?;
    let addr = std::net::ToSocketAddrs::to_socket_addrs(&(host, port))?
        .next()
        .ok_or_else(|| anyhow::anyhow!("{host} does not resolve"))?;
    Ok(addr)
}

/// Deterministic bytes that do not repeat, so that a misplaced or doubled piece of a file
/// changes what arrives.
pub fn build_bytes(len: usize, seed: u32) -> Vec<u8> {
    let mut x = seed.wrapping_mul(2_654_435_761).max(1);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x.to_le_bytes()[0]
        })
        .collect()
}
