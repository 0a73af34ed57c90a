//! Settings of push-scheduler, read from the environment and checked before anything starts.

use std::net::SocketAddr;

use service_kit::{ConfigError, Env, Secret};

/// Address of the health and readiness endpoints.
pub const DEFAULT_LISTEN_ADDR: &str = "127.0.0.1:8084";

#[derive(Debug, Clone)]
pub struct Settings {
    pub listen_addr: SocketAddr,
    pub database_url: Secret,
    pub pool_size: u32,
    /// Slow-client and connection limits of the HTTP server.
    pub http: service_kit::http::Limits,
    /// VAPID keys (none: push is off, and jobs record what they would send but deliver nothing)
    /// and the push endpoints sent to (a message for another is dropped as gone).
    pub push: push::PushSettings,
}

impl Settings {
    pub fn from_env(env: &Env) -> Result<Self, ConfigError> {
        Ok(Self {
            listen_addr: env.listen_addr(DEFAULT_LISTEN_ADDR)?,
            database_url: database_url(env)?,
            pool_size: env.pool_size()?,
            http: service_kit::http::Limits::from_env(env)?,
            push: push::PushSettings::from_env(env)?,
        })
    }
}

pub use pg_store::database_url;

#[cfg(test)]
mod tests {
    use super::*;

    testkit::settings_tests!(
        [(
            "DATABASE_URL",
            "postgres://app:app@127.0.0.1:5432/nutrition",
        )],
        "mysql://root@127.0.0.1/x"
    );

    #[test]
    fn defaults() {
        let s = with(&[]).expect("valid");
        assert_eq!(s.listen_addr.to_string(), DEFAULT_LISTEN_ADDR);
        assert!(s.push.vapid.is_none());
    }
}
