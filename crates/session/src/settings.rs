//! `AUTH_SECRET`, `AUTH_BASE_URL` and `AUTH_TRUSTED_ORIGINS`, read identically by every service
//! that verifies sessions: a difference between two services would sign users out at random.

use service_kit::config::{origin_of, parse_http_url};
use service_kit::{ConfigError, Env, Secret};
use url::Url;

pub const AUTH_SECRET: &str = "AUTH_SECRET";
pub const AUTH_BASE_URL: &str = "AUTH_BASE_URL";
pub const AUTH_TRUSTED_ORIGINS: &str = "AUTH_TRUSTED_ORIGINS";

/// Minimum length of the signing secret.
pub const MIN_SECRET_LEN: usize = 32;

/// Fixed product prefix of the session cookie name.
pub const COOKIE_PREFIX: &str = "digiuno";

#[derive(Debug, Clone)]
pub struct AuthSettings {
    pub secret: Secret,
    pub base_url: Url,
    /// Origins allowed to send cookie-carrying state-changing requests, the base URL's first.
    pub trusted_origins: Vec<String>,
}

impl AuthSettings {
    pub fn from_env(env: &Env) -> Result<Self, ConfigError> {
        let secret = env.secret(AUTH_SECRET, MIN_SECRET_LEN)?;
        let base_url = env.http_url(AUTH_BASE_URL, "https://app.example.com")?;
        let mut trusted_origins = vec![origin_of(&base_url)];
        if let Some(list) = env.get(AUTH_TRUSTED_ORIGINS)? {
            for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let url = parse_http_url(item).map_err(|_| {
                    ConfigError::new(
                        AUTH_TRUSTED_ORIGINS,
                        format!(
                            "must be a comma-separated list of http(s) origins; `{item}` is not one"
                        ),
                    )
                })?;
                if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
                    return Err(ConfigError::new(
                        AUTH_TRUSTED_ORIGINS,
                        format!(
                            "`{item}` must be an origin (scheme, host and port) without a path"
                        ),
                    ));
                }
                let origin = origin_of(&url);
                if !trusted_origins.contains(&origin) {
                    trusted_origins.push(origin);
                }
            }
        }
        Ok(Self {
            secret,
            base_url,
            trusted_origins,
        })
    }

    /// Whether cookies must carry `Secure` and the `__Secure-` name prefix.
    pub fn is_https(&self) -> bool {
        self.base_url.scheme() == "https"
    }

    /// `digiuno.session_token`, or `__Secure-digiuno.session_token` on https.
    pub fn session_cookie_name(&self) -> String {
        if self.is_https() {
            format!("__Secure-{COOKIE_PREFIX}.session_token")
        } else {
            format!("{COOKIE_PREFIX}.session_token")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "0123456789abcdef0123456789abcdef";

    fn env(pairs: &[(&str, &str)]) -> Env {
        Env::from_pairs(pairs.iter().copied())
    }

    #[test]
    fn valid_settings_and_cookie_name() {
        let s = AuthSettings::from_env(&env(&[
            (AUTH_SECRET, SECRET),
            (AUTH_BASE_URL, "https://app.example.com/base"),
            (
                AUTH_TRUSTED_ORIGINS,
                "https://m.example.com, http://localhost:3000,",
            ),
        ]))
        .expect("valid");
        assert_eq!(
            s.trusted_origins,
            [
                "https://app.example.com",
                "https://m.example.com",
                "http://localhost:3000"
            ]
        );
        assert_eq!(s.session_cookie_name(), "__Secure-digiuno.session_token");
        let s = AuthSettings::from_env(&env(&[
            (AUTH_SECRET, SECRET),
            (AUTH_BASE_URL, "http://localhost:8080"),
        ]))
        .expect("valid");
        assert_eq!(s.session_cookie_name(), "digiuno.session_token");
    }

    #[test]
    fn secret_rules() {
        let e = env(&[(AUTH_BASE_URL, "http://localhost")]);
        assert_eq!(AuthSettings::from_env(&e).unwrap_err().var, AUTH_SECRET);
        let e = env(&[
            (AUTH_SECRET, &SECRET[..31]),
            (AUTH_BASE_URL, "http://localhost"),
        ]);
        assert!(
            AuthSettings::from_env(&e)
                .unwrap_err()
                .rule
                .contains("at least 32")
        );
    }

    #[test]
    fn base_url_rules() {
        let e = env(&[(AUTH_SECRET, SECRET)]);
        assert_eq!(AuthSettings::from_env(&e).unwrap_err().var, AUTH_BASE_URL);
        let e = env(&[(AUTH_SECRET, SECRET), (AUTH_BASE_URL, "app.example.com")]);
        assert_eq!(AuthSettings::from_env(&e).unwrap_err().var, AUTH_BASE_URL);
    }

    #[test]
    fn trusted_origins_rules() {
        for bad in [
            "not a url",
            "ftp://x.example.com",
            "https://x.example.com/path",
        ] {
            let e = env(&[
                (AUTH_SECRET, SECRET),
                (AUTH_BASE_URL, "http://localhost"),
                (AUTH_TRUSTED_ORIGINS, bad),
            ]);
            assert_eq!(
                AuthSettings::from_env(&e).unwrap_err().var,
                AUTH_TRUSTED_ORIGINS,
                "{bad}"
            );
        }
    }
}
