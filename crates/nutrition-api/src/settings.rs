//! Settings of nutrition-api, read from the environment and checked before anything binds.

use service_kit::{ConfigError, Env, ServerSettings};
use session::AuthSettings;

pub const DEFAULT_LISTEN_ADDR: &str = "127.0.0.1:8082";

#[derive(Debug, Clone)]
pub struct Settings {
    pub server: ServerSettings,
    /// Must equal auth's, or no session will verify.
    pub auth: AuthSettings,
    /// VAPID keys (none: push is off) and the push endpoints a device may register.
    pub push: push::PushSettings,
}

impl Settings {
    pub fn from_env(env: &Env) -> Result<Self, ConfigError> {
        Ok(Self {
            server: ServerSettings::from_env(env, DEFAULT_LISTEN_ADDR, database_url)?,
            auth: AuthSettings::from_env(env)?,
            push: push::PushSettings::from_env(env)?,
        })
    }
}

pub use pg_store::database_url;

#[cfg(test)]
mod tests {
    use super::*;

    testkit::session_settings_tests!();

    #[test]
    fn defaults_have_push_off() {
        let s = with(&[]).expect("valid");
        assert!(s.push.vapid.is_none());
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
}
