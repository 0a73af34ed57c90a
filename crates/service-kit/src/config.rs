//! Typed settings from the environment.
//!
//! Every binary turns its environment into a settings struct before it binds a socket or opens a
//! connection. The first bad value stops the process with one line, `VARIABLE: rule`, so that an
//! operator sees at once what to fix. Parsing reads from an [`Env`] snapshot instead of the process
//! environment so that every rule can be tested without touching global state.

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use url::Url;

/// A rejected setting: the variable and the rule it broke.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{var}: {rule}")]
pub struct ConfigError {
    pub var: String,
    pub rule: String,
}

impl ConfigError {
    pub fn new(var: impl Into<String>, rule: impl Into<String>) -> Self {
        Self {
            var: var.into(),
            rule: rule.into(),
        }
    }
}

/// A value that must never reach a log line. `Debug` and `Display` print a placeholder.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself, for the one place that needs it (a MAC key, a connection).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// A snapshot of environment variables. Empty values count as unset, because container
/// orchestrators and `.env` files commonly write `NAME=` for "not configured".
#[derive(Clone, Default)]
pub struct Env {
    vars: HashMap<String, Result<String, ()>>,
    secrets: SecretLedger,
}

/// Names only: the environment holds secrets.
impl fmt::Debug for Env {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<&str> = self.vars.keys().map(String::as_str).collect();
        names.sort_unstable();
        f.debug_struct("Env")
            .field("vars", &names)
            .field("secrets", &self.secrets)
            .finish()
    }
}

/// The secrets read so far from one [`Env`], so that a value used for two purposes is caught at
/// start-up: one leaked key must not open a second door. `Debug` prints the names only.
#[derive(Clone, Default)]
struct SecretLedger(Arc<Mutex<Vec<(String, String)>>>);

impl fmt::Debug for SecretLedger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = match self.0.lock() {
            Ok(seen) => seen.iter().map(|(name, _)| name.clone()).collect(),
            Err(_) => Vec::new(),
        };
        f.debug_tuple("SecretLedger").field(&names).finish()
    }
}

/// Marks the example values of deploy/env/*.env. They are public, so a service holding one is
/// as good as unprotected.
const PLACEHOLDER_MARKERS: [&str; 2] = ["change-me", "changeme"];

impl Env {
    /// The process environment, after reading `.env` from the working directory when one exists
    /// (a development convenience; real deployments set variables directly).
    pub fn load() -> Self {
        // A missing .env is the normal case in production.
        let _ = dotenvy::dotenv();
        Self::from_process()
    }

    pub fn from_process() -> Self {
        let vars = std::env::vars_os()
            .filter_map(|(k, v)| {
                let key = k.into_string().ok()?;
                Some((key, v.into_string().map_err(|_| ())))
            })
            .collect();
        Self {
            vars,
            secrets: SecretLedger::default(),
        }
    }

    /// `base` with each variable of `overrides` set to its value there instead: the
    /// environment a test of a service's settings varies.
    pub fn overriding(base: &[(&str, &str)], overrides: &[(&str, &str)]) -> Self {
        let kept = base
            .iter()
            .filter(|(k, _)| !overrides.iter().any(|(o, _)| o == k));
        Self::from_pairs(kept.chain(overrides).map(|&(k, v)| (k, v)))
    }

    pub fn from_pairs<I, K, V>(pairs: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        Self {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), Ok(v.into())))
                .collect(),
            secrets: SecretLedger::default(),
        }
    }

    /// The value of `name`, trimmed; `None` when unset or blank.
    pub fn get(&self, name: &str) -> Result<Option<&str>, ConfigError> {
        match self.vars.get(name) {
            None => Ok(None),
            Some(Err(())) => Err(ConfigError::new(name, "must be valid UTF-8")),
            Some(Ok(v)) => {
                let v = v.trim();
                Ok(if v.is_empty() { None } else { Some(v) })
            }
        }
    }

    pub fn required(&self, name: &str, example: &str) -> Result<&str, ConfigError> {
        self.get(name)?
            .ok_or_else(|| ConfigError::new(name, format!("is required (for example {example})")))
    }

    /// A number or other `FromStr` value with a default and an inclusive range.
    pub fn number<T>(&self, name: &str, default: T, min: T, max: T) -> Result<T, ConfigError>
    where
        T: FromStr + PartialOrd + fmt::Display + Copy,
    {
        let rule = || format!("must be a whole number from {min} to {max}");
        match self.get(name)? {
            None => Ok(default),
            Some(raw) => {
                let value: T = raw.parse().map_err(|_| ConfigError::new(name, rule()))?;
                if value < min || value > max {
                    return Err(ConfigError::new(name, rule()));
                }
                Ok(value)
            }
        }
    }

    /// `true`/`false` (also `1`/`0`, `yes`/`no`, `on`/`off`), any case.
    pub fn flag(&self, name: &str, default: bool) -> Result<bool, ConfigError> {
        match self.get(name)? {
            None => Ok(default),
            Some(raw) => match raw.to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" | "on" => Ok(true),
                "false" | "0" | "no" | "off" => Ok(false),
                _ => Err(ConfigError::new(name, "must be true or false")),
            },
        }
    }

    /// `host:port` to listen on.
    pub fn listen_addr(&self, default: &str) -> Result<SocketAddr, ConfigError> {
        let raw = self.get(LISTEN_ADDR)?.unwrap_or(default);
        raw.parse().map_err(|_| {
            ConfigError::new(
                LISTEN_ADDR,
                "must be an IP address and port, for example 127.0.0.1:8081",
            )
        })
    }

    /// A required secret of at least `min_len` bytes.
    pub fn secret(&self, name: &str, min_len: usize) -> Result<Secret, ConfigError> {
        let value = self.get(name)?.ok_or_else(|| {
            ConfigError::new(
                name,
                format!("is required: a random secret of at least {min_len} characters"),
            )
        })?;
        if value.len() < min_len {
            return Err(ConfigError::new(
                name,
                format!("must be at least {min_len} characters long"),
            ));
        }
        self.check_secret(name, value)?;
        Ok(Secret::new(value))
    }

    /// Refuses a secret that is still a published placeholder or that another secret variable
    /// already holds, naming `name`. Every secret a service reads passes here: [`Env::secret`]
    /// and the password of [`Env::database_url`] do it themselves; settings that take a secret
    /// apart (key lists, client secrets) call it for each part.
    pub fn check_secret(&self, name: &str, value: &str) -> Result<(), ConfigError> {
        let lower = value.to_ascii_lowercase();
        if PLACEHOLDER_MARKERS.iter().any(|m| lower.contains(m)) {
            return Err(ConfigError::new(
                name,
                "still holds a change-me placeholder; set a random secret (openssl rand -hex 32)",
            ));
        }
        let Ok(mut seen) = self.secrets.0.lock() else {
            return Ok(());
        };
        let clash = seen.iter().find(|(other, v)| {
            other != name
                && bool::from(subtle::ConstantTimeEq::ct_eq(
                    v.as_bytes(),
                    value.as_bytes(),
                ))
        });
        if let Some((other, _)) = clash {
            return Err(ConfigError::new(
                name,
                format!("must differ from {other}: every secret needs its own value"),
            ));
        }
        if !seen.iter().any(|(n, v)| n == name && v == value) {
            seen.push((name.to_owned(), value.to_owned()));
        }
        Ok(())
    }

    /// A required absolute `http` or `https` URL.
    pub fn http_url(&self, name: &str, example: &str) -> Result<Url, ConfigError> {
        let raw = self.required(name, example)?;
        parse_http_url(raw).map_err(|rule| ConfigError::new(name, rule))
    }

    /// A comma-separated list of IP addresses and CIDR ranges (an address stands for itself
    /// alone), such as the proxies whose `X-Forwarded-For` is believed; empty when unset. The
    /// error names the item that is neither.
    pub fn ip_networks(&self, name: &str) -> Result<Vec<ipnet::IpNet>, ConfigError> {
        let Some(list) = self.get(name)? else {
            return Ok(Vec::new());
        };
        list.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|item| {
                item.parse::<ipnet::IpNet>()
                    .or_else(|_| item.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
                    .map_err(|_| {
                        ConfigError::new(
                            name,
                            format!(
                                "must be a comma-separated list of IP addresses or CIDR ranges; `{item}` is not one"
                            ),
                        )
                    })
            })
            .collect()
    }

    /// The database connection string, which must use one of `schemes`.
    pub fn database_url(&self, schemes: &[&str], example: &str) -> Result<Secret, ConfigError> {
        let raw = self.required(DATABASE_URL, example)?;
        let url = Url::parse(raw)
            .map_err(|_| ConfigError::new(DATABASE_URL, format!("must be a URL like {example}")))?;
        if !schemes.contains(&url.scheme()) {
            return Err(ConfigError::new(
                DATABASE_URL,
                format!("must start with {}://", schemes.join(":// or ")),
            ));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(ConfigError::new(DATABASE_URL, "must name a host"));
        }
        if let Some(password) = url.password() {
            let password = percent_encoding::percent_decode_str(password).decode_utf8_lossy();
            self.check_secret(DATABASE_URL, &password)?;
        }
        Ok(Secret::new(raw))
    }

    /// Connections per process in the database pool.
    pub fn pool_size(&self) -> Result<u32, ConfigError> {
        self.number(DATABASE_POOL_SIZE, 10, 1, 256)
    }
}

/// The settings every service's `serve` has besides its own: where it listens, its database,
/// the size of its pool and the HTTP server's limits.
#[derive(Debug, Clone)]
pub struct ServerSettings {
    pub listen_addr: SocketAddr,
    pub database_url: Secret,
    pub pool_size: u32,
    /// Slow-client and connection limits of the HTTP server.
    pub http: crate::http::Limits,
}

impl ServerSettings {
    /// Reads them with the service's default address and its rule for DATABASE_URL.
    pub fn from_env(
        env: &Env,
        default_listen_addr: &str,
        database_url: fn(&Env) -> Result<Secret, ConfigError>,
    ) -> Result<Self, ConfigError> {
        Self::from_env_or(env, default_listen_addr, database_url, Default::default())
    }

    /// [`ServerSettings::from_env`] with the service's own defaults for the HTTP limits the
    /// environment leaves unset.
    pub fn from_env_or(
        env: &Env,
        default_listen_addr: &str,
        database_url: fn(&Env) -> Result<Secret, ConfigError>,
        http_defaults: crate::http::Limits,
    ) -> Result<Self, ConfigError> {
        Ok(Self {
            listen_addr: env.listen_addr(default_listen_addr)?,
            database_url: database_url(env)?,
            pool_size: env.pool_size()?,
            http: crate::http::Limits::from_env_or(env, http_defaults)?,
        })
    }
}

pub const LISTEN_ADDR: &str = "LISTEN_ADDR";
pub const DATABASE_URL: &str = "DATABASE_URL";
pub const DATABASE_POOL_SIZE: &str = "DATABASE_POOL_SIZE";

/// Parses an absolute `http(s)` URL with a host, the only kind a browser-facing setting may hold.
pub fn parse_http_url(raw: &str) -> Result<Url, String> {
    let url = Url::parse(raw).map_err(|_| "must be an absolute http(s) URL".to_owned())?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err("must be an absolute http(s) URL".to_owned());
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("must be an absolute http(s) URL with a host".to_owned());
    }
    Ok(url)
}

/// The `scheme://host[:port]` origin of a URL, as browsers send it in `Origin`.
pub fn origin_of(url: &Url) -> String {
    url.origin().ascii_serialization()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Env {
        Env::from_pairs(pairs.iter().copied())
    }

    #[test]
    fn blank_counts_as_unset() {
        assert_eq!(env(&[("A", "  ")]).get("A"), Ok(None));
        assert_eq!(env(&[("A", " x ")]).get("A"), Ok(Some("x")));
    }

    #[test]
    fn required_names_the_variable() {
        let err = env(&[]).required("FOO", "bar").unwrap_err();
        assert_eq!(err.var, "FOO");
        assert!(err.to_string().starts_with("FOO: is required"));
    }

    #[test]
    fn number_range_is_inclusive() {
        let e = env(&[("N", "256"), ("M", "257"), ("Z", "0"), ("X", "ten")]);
        assert_eq!(e.number("N", 1u32, 1, 256), Ok(256));
        assert_eq!(e.number("M", 1u32, 1, 256).unwrap_err().var, "M");
        assert_eq!(e.number("Z", 1u32, 1, 256).unwrap_err().var, "Z");
        assert_eq!(e.number("X", 1u32, 1, 256).unwrap_err().var, "X");
        assert_eq!(e.number("UNSET", 7u32, 1, 256), Ok(7));
    }

    #[test]
    fn flags() {
        let e = env(&[("A", "TRUE"), ("B", "0"), ("C", "maybe")]);
        assert_eq!(e.flag("A", false), Ok(true));
        assert_eq!(e.flag("B", true), Ok(false));
        assert_eq!(e.flag("C", true).unwrap_err().var, "C");
        assert_eq!(e.flag("D", true), Ok(true));
    }

    #[test]
    fn listen_addr() {
        assert_eq!(
            env(&[]).listen_addr("127.0.0.1:8081").map(|a| a.port()),
            Ok(8081)
        );
        assert_eq!(
            env(&[("LISTEN_ADDR", "localhost:80")])
                .listen_addr("127.0.0.1:1")
                .unwrap_err()
                .var,
            "LISTEN_ADDR"
        );
    }

    #[test]
    fn secret_length_and_redaction() {
        let e = env(&[("S", "short"), ("L", &"x".repeat(32))]);
        assert!(e.secret("S", 32).unwrap_err().rule.contains("at least 32"));
        let s = e.secret("L", 32).expect("long enough");
        assert_eq!(format!("{s:?} {s}"), "Secret(***) ***");
        assert_eq!(e.secret("NONE", 32).unwrap_err().var, "NONE");
    }

    #[test]
    fn placeholders_are_refused_naming_the_variable() {
        let e = env(&[
            (
                "S",
                "change-me-auth-secret-replace-with-openssl-rand-hex-32",
            ),
            ("T", "0123456789abcdef-CHANGEME-0123456789abcdef"),
            (
                "DATABASE_URL",
                "postgres://app:change-me-postgres-password@db/x",
            ),
        ]);
        let err = e.secret("S", 32).unwrap_err();
        assert_eq!(err.var, "S");
        assert!(err.rule.contains("placeholder"), "{err}");
        assert_eq!(e.secret("T", 32).unwrap_err().var, "T");
        let err = e.database_url(&["postgres"], "").unwrap_err();
        assert_eq!(err.var, "DATABASE_URL");
        assert!(!err.to_string().contains("password"), "{err}");
    }

    #[test]
    fn one_value_in_two_secret_variables_is_refused() {
        let same = "0123456789abcdef0123456789abcdef";
        let e = env(&[
            ("A", same),
            ("B", same),
            ("C", "fedcba9876543210fedcba9876543210"),
            (
                "DATABASE_URL",
                "postgres://app:0123456789abcdef0123456789abcdef@db/x",
            ),
        ]);
        e.secret("A", 32).expect("first use");
        // Reading the same variable twice is no clash.
        e.secret("A", 32).expect("same variable again");
        let err = e.secret("B", 32).unwrap_err();
        assert_eq!(err.var, "B");
        assert!(err.rule.contains("must differ from A"), "{err}");
        assert!(!err.to_string().contains(same));
        e.secret("C", 32).expect("a different value");
        assert_eq!(
            e.database_url(&["postgres"], "").unwrap_err().var,
            "DATABASE_URL"
        );
        // Percent-encoding does not hide a reused password.
        let e = env(&[
            ("A", "p@ss/word-0123456789abcdef012345"),
            (
                "DATABASE_URL",
                "postgres://app:p%40ss%2Fword-0123456789abcdef012345@db/x",
            ),
        ]);
        e.secret("A", 32).expect("first use");
        assert_eq!(
            e.database_url(&["postgres"], "").unwrap_err().var,
            "DATABASE_URL"
        );
        assert!(!format!("{e:?}").contains("p@ss"));
    }

    #[test]
    fn urls() {
        let e = env(&[
            ("A", "https://app.example.com/x"),
            ("B", "ftp://x"),
            ("C", "not a url"),
        ]);
        assert_eq!(
            origin_of(&e.http_url("A", "").expect("valid")),
            "https://app.example.com"
        );
        assert_eq!(e.http_url("B", "").unwrap_err().var, "B");
        assert_eq!(e.http_url("C", "").unwrap_err().var, "C");
    }

    #[test]
    fn ip_networks() {
        let e = env(&[
            ("A", "127.0.0.1, 172.28.0.0/16,::1"),
            ("B", "10.0.0.1,nginx"),
            ("C", "10.0.0.0/33"),
        ]);
        let nets = e.ip_networks("A").expect("valid");
        assert_eq!(nets.len(), 3);
        assert_eq!(
            nets[0].to_string(),
            "127.0.0.1/32",
            "an address is a range of one"
        );
        assert!(nets[1].contains(&"172.28.9.9".parse::<std::net::IpAddr>().expect("ip")));
        let err = e.ip_networks("B").unwrap_err();
        assert_eq!(err.var, "B");
        assert!(err.rule.contains("`nginx`"), "{err}");
        assert_eq!(e.ip_networks("C").unwrap_err().var, "C");
        assert_eq!(e.ip_networks("UNSET"), Ok(Vec::new()));
    }

    #[test]
    fn database_url_scheme() {
        let pg = ["postgres", "postgresql"];
        let ok = env(&[("DATABASE_URL", "postgres://u:p@127.0.0.1/db")]);
        let secret = ok.database_url(&pg, "").expect("valid");
        assert!(!format!("{secret:?}").contains("u:p"));
        let bad = env(&[("DATABASE_URL", "mysql://u@127.0.0.1/db")]);
        assert!(
            bad.database_url(&pg, "")
                .unwrap_err()
                .rule
                .contains("postgres://")
        );
        let nohost = env(&[("DATABASE_URL", "postgres:///db")]);
        assert_eq!(
            nohost.database_url(&pg, "").unwrap_err().var,
            "DATABASE_URL"
        );
    }
}
