//! Settings of push-scheduler, read from the environment and checked before anything starts.

use service_kit::{ConfigError, Env, ServerSettings};

/// Address of the health and readiness endpoints.
pub const DEFAULT_LISTEN_ADDR: &str = "127.0.0.1:8084";

#[derive(Debug, Clone)]
pub struct Settings {
    pub server: ServerSettings,
    /// VAPID keys (none: push is off, and jobs record what they would send but deliver nothing)
    /// and the push endpoints sent to (a message for another is dropped as gone).
    pub push: push::PushSettings,
}

impl Settings {
    pub fn from_env(env: &Env) -> Result<Self, ConfigError> {
        Ok(Self {
            server: ServerSettings::from_env(env, DEFAULT_LISTEN_ADDR, database_url)?,
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
        assert!(s.push.vapid.is_none());
    }
}
