//! Settings of the auth service, read from the environment and checked before anything binds.

use ipnet::IpNet;
use mailer::SmtpSettings;
use service_kit::{ConfigError, Env, Secret, ServerSettings};
use session::AuthSettings;
use url::Url;

pub const DEFAULT_LISTEN_ADDR: &str = "127.0.0.1:8081";
pub const GOOGLE_CLIENT_ID: &str = "GOOGLE_CLIENT_ID";
pub const GOOGLE_CLIENT_SECRET: &str = "GOOGLE_CLIENT_SECRET";
pub const TRUSTED_PROXIES: &str = "TRUSTED_PROXIES";
pub const GOOGLE_AUTH_URL: &str = "GOOGLE_AUTH_URL";
pub const GOOGLE_TOKEN_URL: &str = "GOOGLE_TOKEN_URL";
pub const GOOGLE_USERINFO_URL: &str = "GOOGLE_USERINFO_URL";
pub const AUTH_RATE_LIMIT_MAX: &str = "AUTH_RATE_LIMIT_MAX";
pub const AUTH_RATE_LIMIT_WINDOW_SECS: &str = "AUTH_RATE_LIMIT_WINDOW_SECS";
pub const AUTH_MAIL_RATE_LIMIT_MAX: &str = "AUTH_MAIL_RATE_LIMIT_MAX";
pub const AUTH_MAIL_RATE_LIMIT_WINDOW_SECS: &str = "AUTH_MAIL_RATE_LIMIT_WINDOW_SECS";
pub const AUTH_REQUIRE_EMAIL_VERIFICATION: &str = "AUTH_REQUIRE_EMAIL_VERIFICATION";
pub const AUTH_HASH_CONCURRENCY: &str = "AUTH_HASH_CONCURRENCY";
pub const AUTH_SOCIAL_PENDING_PER_ADDRESS: &str = "AUTH_SOCIAL_PENDING_PER_ADDRESS";
pub const AUTH_SOCIAL_PENDING_MAX: &str = "AUTH_SOCIAL_PENDING_MAX";
pub const AUTH_SIGN_IN_GLOBAL_MAX: &str = "AUTH_SIGN_IN_GLOBAL_MAX";
pub const AUTH_SIGN_IN_GLOBAL_WINDOW_SECS: &str = "AUTH_SIGN_IN_GLOBAL_WINDOW_SECS";
pub const AUTH_SIGN_UP_GLOBAL_MAX: &str = "AUTH_SIGN_UP_GLOBAL_MAX";
pub const AUTH_SIGN_UP_GLOBAL_WINDOW_SECS: &str = "AUTH_SIGN_UP_GLOBAL_WINDOW_SECS";
pub const AUTH_SIGN_IN_FAILURES_MAX: &str = "AUTH_SIGN_IN_FAILURES_MAX";
pub const AUTH_SIGN_IN_EMAIL_FAILURES_MAX: &str = "AUTH_SIGN_IN_EMAIL_FAILURES_MAX";
pub const AUTH_SIGN_IN_FAILURES_WINDOW_SECS: &str = "AUTH_SIGN_IN_FAILURES_WINDOW_SECS";

/// Google's production endpoints; overridable so that tests run the flow against a local server.
pub const DEFAULT_GOOGLE_AUTH_URL: &str = "https://accounts.google.com/o/oauth2/v2/auth";
pub const DEFAULT_GOOGLE_TOKEN_URL: &str = "https://oauth2.googleapis.com/token";
pub const DEFAULT_GOOGLE_USERINFO_URL: &str = "https://openidconnect.googleapis.com/v1/userinfo";

#[derive(Debug, Clone)]
pub struct Settings {
    pub server: ServerSettings,
    pub auth: AuthSettings,
    /// Present only when both Google variables are set; otherwise the provider does not exist.
    pub google: Option<GoogleSettings>,
    /// Peers whose `X-Forwarded-For` is believed when deciding the client address.
    pub trusted_proxies: Vec<IpNet>,
    pub rate_limit: RateLimit,
    pub sign_in: SignInLimits,
    /// Sign-ups from all addresses together that passed their own limits: each costs a hash.
    pub sign_up_global: RateLimit,
    /// Google sign-ins started (each a state row living `STATE_LIFETIME_SECS`) per client
    /// address and in total, per state lifetime.
    pub social_pending: SocialPending,
    /// `SMTP_URL` and `MAIL_FROM`; `None` when `SMTP_URL` is unset, and the routes that send mail
    /// answer 503 `EMAIL_DISABLED`.
    pub smtp: Option<SmtpSettings>,
    /// For the routes that send mail (reset and verification requests): better-auth's default is
    /// 3 per 60 s.
    pub mail_rate_limit: RateLimit,
    /// Sign-in of a password account whose address is not verified is refused (and a new
    /// verification mail sent).
    pub require_email_verification: bool,
    /// Password hashes computed at once (each holds 19 MiB); default the number of cores.
    pub hash_concurrency: u32,
}

/// The `MAIL_FROM` shown in error messages.
pub const MAIL_FROM_EXAMPLE: &str = "Nutrizione <no-reply@example.com>";

/// Attempts allowed per client address and per e-mail address within a window, for sign-in and
/// sign-up each (better-auth's default: 3 per 10 s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    pub max: u32,
    pub window_secs: u32,
}

/// The budgets of sign-in beyond the per-address limit (see docs/api.md, "Sign-in limits").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignInLimits {
    /// Attempts from all addresses together, shared by every replica: a ceiling on guessing
    /// spread over many addresses.
    pub global: RateLimit,
    /// Failed sign-ins from one address (an IPv6 /64) for one e-mail address.
    pub failures_per_address: RateLimit,
    /// Failed sign-ins for one e-mail address from all addresses. Once spent, only addresses
    /// that already failed for it in the window are refused, so that others trying someone's
    /// address from many places cannot lock that person out.
    pub failures_per_email: RateLimit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocialPending {
    pub per_address: u32,
    pub total: u32,
}

#[derive(Debug, Clone)]
pub struct GoogleSettings {
    pub client_id: String,
    pub client_secret: Secret,
    pub auth_url: Url,
    pub token_url: Url,
    pub userinfo_url: Url,
}

impl Settings {
    pub fn from_env(env: &Env) -> Result<Self, ConfigError> {
        Ok(Self {
            server: ServerSettings::from_env(env, DEFAULT_LISTEN_ADDR, database_url)?,
            auth: AuthSettings::from_env(env)?,
            google: google(env)?,
            trusted_proxies: env.ip_networks(TRUSTED_PROXIES)?,
            rate_limit: RateLimit {
                max: env.number(AUTH_RATE_LIMIT_MAX, 3, 1, 1_000_000)?,
                window_secs: env.number(AUTH_RATE_LIMIT_WINDOW_SECS, 10, 1, 86_400)?,
            },
            sign_in: sign_in_limits(env)?,
            sign_up_global: RateLimit {
                max: env.number(AUTH_SIGN_UP_GLOBAL_MAX, 300, 1, 100_000_000)?,
                window_secs: env.number(AUTH_SIGN_UP_GLOBAL_WINDOW_SECS, 60, 1, 86_400)?,
            },
            social_pending: SocialPending {
                per_address: env.number(AUTH_SOCIAL_PENDING_PER_ADDRESS, 30, 1, 1_000_000)?,
                total: env.number(AUTH_SOCIAL_PENDING_MAX, 10_000, 1, 100_000_000)?,
            },
            smtp: SmtpSettings::optional_from_env(env, MAIL_FROM_EXAMPLE)?,
            mail_rate_limit: RateLimit {
                max: env.number(AUTH_MAIL_RATE_LIMIT_MAX, 3, 1, 1_000_000)?,
                window_secs: env.number(AUTH_MAIL_RATE_LIMIT_WINDOW_SECS, 60, 1, 86_400)?,
            },
            require_email_verification: flag(env, AUTH_REQUIRE_EMAIL_VERIFICATION)?,
            hash_concurrency: env.number(AUTH_HASH_CONCURRENCY, cores(), 1, 256)?,
        })
    }
}

fn sign_in_limits(env: &Env) -> Result<SignInLimits, ConfigError> {
    let failures_window = env.number(AUTH_SIGN_IN_FAILURES_WINDOW_SECS, 900, 1, 86_400)?;
    Ok(SignInLimits {
        global: RateLimit {
            max: env.number(AUTH_SIGN_IN_GLOBAL_MAX, 600, 1, 100_000_000)?,
            window_secs: env.number(AUTH_SIGN_IN_GLOBAL_WINDOW_SECS, 60, 1, 86_400)?,
        },
        failures_per_address: RateLimit {
            max: env.number(AUTH_SIGN_IN_FAILURES_MAX, 5, 1, 1_000_000)?,
            window_secs: failures_window,
        },
        failures_per_email: RateLimit {
            max: env.number(AUTH_SIGN_IN_EMAIL_FAILURES_MAX, 20, 1, 1_000_000)?,
            window_secs: failures_window,
        },
    })
}

fn cores() -> u32 {
    std::thread::available_parallelism()
        .map(|n| u32::try_from(n.get()).unwrap_or(1).min(256))
        .unwrap_or(1)
}

pub use pg_store::database_url;

fn google(env: &Env) -> Result<Option<GoogleSettings>, ConfigError> {
    match (env.get(GOOGLE_CLIENT_ID)?, env.get(GOOGLE_CLIENT_SECRET)?) {
        (None, None) => Ok(None),
        (Some(id), Some(secret)) => Ok(Some(GoogleSettings {
            client_secret: {
                env.check_secret(GOOGLE_CLIENT_SECRET, secret)?;
                Secret::new(secret)
            },
            client_id: id.to_owned(),
            auth_url: endpoint(env, GOOGLE_AUTH_URL, DEFAULT_GOOGLE_AUTH_URL)?,
            token_url: endpoint(env, GOOGLE_TOKEN_URL, DEFAULT_GOOGLE_TOKEN_URL)?,
            userinfo_url: endpoint(env, GOOGLE_USERINFO_URL, DEFAULT_GOOGLE_USERINFO_URL)?,
        })),
        (Some(_), None) => Err(ConfigError::new(
            GOOGLE_CLIENT_SECRET,
            "must be set together with GOOGLE_CLIENT_ID (or unset both to switch Google sign-in off)",
        )),
        (None, Some(_)) => Err(ConfigError::new(
            GOOGLE_CLIENT_ID,
            "must be set together with GOOGLE_CLIENT_SECRET (or unset both to switch Google sign-in off)",
        )),
    }
}

fn flag(env: &Env, name: &str) -> Result<bool, ConfigError> {
    match env.get(name)? {
        None | Some("false") | Some("0") => Ok(false),
        Some("true") | Some("1") => Ok(true),
        Some(_) => Err(ConfigError::new(name, "must be `true` or `false`")),
    }
}

fn endpoint(env: &Env, name: &str, default: &str) -> Result<Url, ConfigError> {
    let raw = env.get(name)?.unwrap_or(default);
    service_kit::config::parse_http_url(raw).map_err(|rule| ConfigError::new(name, rule))
}

#[cfg(test)]
mod tests {
    use super::*;

    testkit::session_settings_tests!();

    #[test]
    fn defaults() {
        let s = with(&[]).expect("valid");
        assert!(s.google.is_none());
        assert!(s.trusted_proxies.is_empty());
    }

    #[test]
    fn auth_secret_is_at_least_32_characters() {
        assert_eq!(failing(&[("AUTH_SECRET", "too-short")]), "AUTH_SECRET");
    }

    #[test]
    fn auth_base_url_is_a_url() {
        assert_eq!(
            failing(&[("AUTH_BASE_URL", "localhost:8080")]),
            "AUTH_BASE_URL"
        );
    }

    #[test]
    fn google_needs_both_variables() {
        assert_eq!(failing(&[("GOOGLE_CLIENT_ID", "id")]), GOOGLE_CLIENT_SECRET);
        assert_eq!(failing(&[("GOOGLE_CLIENT_SECRET", "s")]), GOOGLE_CLIENT_ID);
        let s = with(&[("GOOGLE_CLIENT_ID", "id"), ("GOOGLE_CLIENT_SECRET", "s")]).expect("valid");
        assert_eq!(s.google.map(|g| g.client_id), Some("id".to_owned()));
    }

    #[test]
    fn google_endpoints_are_urls() {
        let s = with(&[("GOOGLE_CLIENT_ID", "id"), ("GOOGLE_CLIENT_SECRET", "s")]).expect("valid");
        assert_eq!(
            s.google.map(|g| g.token_url.to_string()),
            Some(DEFAULT_GOOGLE_TOKEN_URL.to_owned())
        );
        assert_eq!(
            failing(&[
                ("GOOGLE_CLIENT_ID", "id"),
                ("GOOGLE_CLIENT_SECRET", "s"),
                ("GOOGLE_TOKEN_URL", "nope")
            ]),
            GOOGLE_TOKEN_URL
        );
    }

    #[test]
    fn rate_limit_bounds() {
        let s = with(&[]).expect("valid");
        assert_eq!(
            s.rate_limit,
            RateLimit {
                max: 3,
                window_secs: 10
            }
        );
        assert_eq!(
            failing(&[("AUTH_RATE_LIMIT_MAX", "0")]),
            AUTH_RATE_LIMIT_MAX
        );
        assert_eq!(
            failing(&[("AUTH_RATE_LIMIT_WINDOW_SECS", "a")]),
            AUTH_RATE_LIMIT_WINDOW_SECS
        );
    }

    #[test]
    fn sign_in_budgets() {
        let s = with(&[]).expect("valid").sign_in;
        assert_eq!(
            s.global,
            RateLimit {
                max: 600,
                window_secs: 60
            }
        );
        assert_eq!(
            (s.failures_per_address.max, s.failures_per_email.max),
            (5, 20)
        );
        assert_eq!(s.failures_per_email.window_secs, 900);
        let social = with(&[]).expect("valid").social_pending;
        assert_eq!((social.per_address, social.total), (30, 10_000));
        assert_eq!(
            failing(&[(AUTH_SOCIAL_PENDING_MAX, "0")]),
            AUTH_SOCIAL_PENDING_MAX
        );
        for var in [
            AUTH_SIGN_IN_GLOBAL_MAX,
            AUTH_SIGN_IN_GLOBAL_WINDOW_SECS,
            AUTH_SIGN_IN_FAILURES_MAX,
            AUTH_SIGN_IN_EMAIL_FAILURES_MAX,
            AUTH_SIGN_IN_FAILURES_WINDOW_SECS,
        ] {
            assert_eq!(failing(&[(var, "0")]), var);
        }
    }

    #[test]
    fn hash_concurrency_defaults_to_the_cores() {
        assert_eq!(with(&[]).expect("valid").hash_concurrency, cores());
        assert_eq!(
            with(&[(AUTH_HASH_CONCURRENCY, "3")])
                .expect("valid")
                .hash_concurrency,
            3
        );
        for bad in ["0", "257", "many"] {
            assert_eq!(
                failing(&[(AUTH_HASH_CONCURRENCY, bad)]),
                AUTH_HASH_CONCURRENCY
            );
        }
    }

    #[test]
    fn email_is_optional_and_checked_when_set() {
        assert!(with(&[]).expect("valid").smtp.is_none());
        let s = with(&[
            ("SMTP_URL", "smtp://127.0.0.1:2525"),
            ("MAIL_FROM", "App <app@example.com>"),
        ])
        .expect("valid");
        assert!(s.smtp.is_some());
        assert_eq!(
            failing(&[("SMTP_URL", "smtp://127.0.0.1:2525")]),
            "MAIL_FROM"
        );
        assert_eq!(
            failing(&[
                ("SMTP_URL", "smtp://mail.example.com:25"),
                ("MAIL_FROM", "App <app@example.com>")
            ]),
            "SMTP_URL"
        );
    }

    #[test]
    fn email_verification_flag() {
        assert!(!with(&[]).expect("valid").require_email_verification);
        assert!(
            with(&[(AUTH_REQUIRE_EMAIL_VERIFICATION, "true")])
                .expect("valid")
                .require_email_verification
        );
        assert_eq!(
            failing(&[(AUTH_REQUIRE_EMAIL_VERIFICATION, "yes")]),
            AUTH_REQUIRE_EMAIL_VERIFICATION
        );
        assert_eq!(
            with(&[]).expect("valid").mail_rate_limit,
            RateLimit {
                max: 3,
                window_secs: 60
            }
        );
    }

    #[test]
    fn trusted_proxies_are_ips_or_ranges() {
        let s = with(&[("TRUSTED_PROXIES", "127.0.0.1, 172.28.0.0/16,::1")]).expect("valid");
        assert_eq!(s.trusted_proxies.len(), 3);
        assert_eq!(failing(&[("TRUSTED_PROXIES", "nginx")]), TRUSTED_PROXIES);
    }
}
