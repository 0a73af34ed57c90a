//! Settings of nutrition-api, read from the environment and checked before anything binds.

use std::net::SocketAddr;

use push::VapidConfig;
use service_kit::{ConfigError, Env, Secret};
use session::AuthSettings;

pub const DEFAULT_LISTEN_ADDR: &str = "127.0.0.1:8082";

#[derive(Debug, Clone)]
pub struct Settings {
    pub listen_addr: SocketAddr,
    pub database_url: Secret,
    pub pool_size: u32,
    /// Slow-client and connection limits of the HTTP server.
    pub http: service_kit::http::Limits,
    /// Must equal auth's, or no session will verify.
    pub auth: AuthSettings,
    /// `None`: push is switched off.
    pub vapid: Option<VapidConfig>,
    /// Accept `http://` and private-network push endpoints (tests against a local push service).
    pub allow_http_endpoints: bool,
    /// The push endpoints a device may register (`PUSH_ENDPOINT_HOSTS`, default the known Web
    /// Push services; any host with `PUSH_ALLOW_HTTP_ENDPOINTS`).
    pub push_endpoints: push::EndpointPolicy,
}

impl Settings {
    pub fn from_env(env: &Env) -> Result<Self, ConfigError> {
        Ok(Self {
            listen_addr: env.listen_addr(DEFAULT_LISTEN_ADDR)?,
            database_url: database_url(env)?,
            pool_size: env.pool_size()?,
            http: service_kit::http::Limits::from_env(env)?,
            auth: AuthSettings::from_env(env)?,
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
        let base = [
            (
                "DATABASE_URL",
                "postgres://app:app@127.0.0.1:5432/nutrition",
            ),
            ("AUTH_SECRET", "0123456789abcdef0123456789abcdef"),
            ("AUTH_BASE_URL", "http://localhost:8080"),
        ];
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
    fn defaults_have_push_off() {
        let s = with(&[]).expect("valid");
        assert_eq!(s.listen_addr.to_string(), DEFAULT_LISTEN_ADDR);
        assert!(s.vapid.is_none());
        assert!(!s.allow_http_endpoints);
        assert_eq!(
            s.push_endpoints,
            push::EndpointPolicy::known_push_services()
        );
    }

    #[test]
    fn push_endpoint_hosts_are_host_suffixes_or_a_star() {
        assert_eq!(
            failing(&[("PUSH_ENDPOINT_HOSTS", "com")]),
            "PUSH_ENDPOINT_HOSTS"
        );
        assert_eq!(
            with(&[("PUSH_ENDPOINT_HOSTS", "*")])
                .expect("valid")
                .push_endpoints,
            push::EndpointPolicy::any_public_host()
        );
    }

    #[test]
    fn auth_secret_and_base_url() {
        assert_eq!(failing(&[("AUTH_SECRET", "x")]), "AUTH_SECRET");
        assert_eq!(failing(&[("AUTH_BASE_URL", "nope")]), "AUTH_BASE_URL");
        assert_eq!(
            failing(&[("AUTH_TRUSTED_ORIGINS", "https://a.example/b")]),
            "AUTH_TRUSTED_ORIGINS"
        );
    }

    #[test]
    fn vapid_all_or_none_and_well_formed() {
        let pair = VapidKeyPair::generate();
        assert_eq!(
            failing(&[("VAPID_PUBLIC_KEY", &pair.public_key)]),
            "VAPID_PRIVATE_KEY"
        );
        assert_eq!(
            failing(&[
                ("VAPID_PUBLIC_KEY", &pair.public_key),
                ("VAPID_PRIVATE_KEY", "zz"),
                ("VAPID_SUBJECT", "mailto:a@example.com"),
            ]),
            "VAPID_PRIVATE_KEY"
        );
        let s = with(&[
            ("VAPID_PUBLIC_KEY", &pair.public_key),
            ("VAPID_PRIVATE_KEY", pair.private_key.expose()),
            ("VAPID_SUBJECT", "mailto:a@example.com"),
        ])
        .expect("valid");
        assert!(s.vapid.is_some());
    }

    #[test]
    fn push_allow_http_is_a_flag() {
        assert_eq!(
            failing(&[("PUSH_ALLOW_HTTP_ENDPOINTS", "sometimes")]),
            "PUSH_ALLOW_HTTP_ENDPOINTS"
        );
        assert!(
            with(&[("PUSH_ALLOW_HTTP_ENDPOINTS", "true")])
                .expect("valid")
                .allow_http_endpoints
        );
    }
}
