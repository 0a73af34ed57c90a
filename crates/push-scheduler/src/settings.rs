//! Settings of push-scheduler, read from the environment and checked before anything starts.

use std::net::SocketAddr;

use push::VapidConfig;
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
    /// `None`: push is off; jobs record what they would send but nothing is delivered.
    pub vapid: Option<VapidConfig>,
    pub allow_http_endpoints: bool,
    /// The push endpoints sent to (`PUSH_ENDPOINT_HOSTS`, default the known Web Push services;
    /// any host with `PUSH_ALLOW_HTTP_ENDPOINTS`); a message for another is dropped as gone.
    pub push_endpoints: push::EndpointPolicy,
}

impl Settings {
    pub fn from_env(env: &Env) -> Result<Self, ConfigError> {
        Ok(Self {
            listen_addr: env.listen_addr(DEFAULT_LISTEN_ADDR)?,
            database_url: database_url(env)?,
            pool_size: env.pool_size()?,
            http: service_kit::http::Limits::from_env(env)?,
            vapid: VapidConfig::from_env(env)?,
            allow_http_endpoints: push::vapid::allow_http_endpoints(env)?,
            push_endpoints: push::EndpointPolicy::from_env(env)?,
        })
    }
}

pub use pg_store::database_url;

#[cfg(test)]
mod tests {
    use super::*;
    use push::VapidKeyPair;

    fn with(extra: &[(&str, &str)]) -> Result<Settings, ConfigError> {
        let base = [(
            "DATABASE_URL",
            "postgres://app:app@127.0.0.1:5432/nutrition",
        )];
        Settings::from_env(&Env::overriding(&base, extra))
    }

    fn failing(extra: &[(&str, &str)]) -> String {
        with(extra).expect_err("must be rejected").var
    }

    #[test]
    fn shared_rules() {
        testkit::checks::shared_settings_rules(failing, "mysql://root@127.0.0.1/x");
    }

    #[test]
    fn defaults() {
        let s = with(&[]).expect("valid");
        assert_eq!(s.listen_addr.to_string(), DEFAULT_LISTEN_ADDR);
        assert!(s.vapid.is_none());
    }

    #[test]
    fn vapid_subject_and_pairing() {
        let pair = VapidKeyPair::generate();
        let other = VapidKeyPair::generate();
        assert_eq!(
            failing(&[
                ("VAPID_PUBLIC_KEY", &other.public_key),
                ("VAPID_PRIVATE_KEY", pair.private_key.expose()),
                ("VAPID_SUBJECT", "mailto:a@example.com"),
            ]),
            "VAPID_PUBLIC_KEY"
        );
        assert_eq!(
            failing(&[
                ("VAPID_PUBLIC_KEY", &pair.public_key),
                ("VAPID_PRIVATE_KEY", pair.private_key.expose()),
                ("VAPID_SUBJECT", "a@example.com"),
            ]),
            "VAPID_SUBJECT"
        );
    }

    #[test]
    fn push_endpoint_hosts_default_to_the_known_push_services() {
        assert_eq!(
            with(&[]).expect("valid").push_endpoints,
            push::EndpointPolicy::known_push_services()
        );
        assert_eq!(
            failing(&[("PUSH_ENDPOINT_HOSTS", "*,fcm.googleapis.com")]),
            "PUSH_ENDPOINT_HOSTS"
        );
    }

    #[test]
    fn push_allow_http_is_a_flag() {
        assert_eq!(
            failing(&[("PUSH_ALLOW_HTTP_ENDPOINTS", "2")]),
            "PUSH_ALLOW_HTTP_ENDPOINTS"
        );
    }
}
