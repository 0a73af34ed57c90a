//! Settings of licence-server, read from the environment and checked before anything binds.

use std::path::PathBuf;
use std::str::FromStr;

use ipnet::IpNet;
use lettre::message::Mailbox;
use service_kit::{ConfigError, Env, Secret, ServerSettings};
use url::Url;

use crate::lease::LeaseKey;

pub const DEFAULT_LISTEN_ADDR: &str = "127.0.0.1:8083";
pub const PUBLIC_BASE_URL: &str = "PUBLIC_BASE_URL";
pub const LICENCE_JWT_KEYS: &str = "LICENCE_JWT_KEYS";
pub const DOWNLOAD_SIGNING_SECRET: &str = "DOWNLOAD_SIGNING_SECRET";
pub const BUILDS_DIR: &str = "BUILDS_DIR";
pub const PAYMENT_WEBHOOK_SECRET: &str = "PAYMENT_WEBHOOK_SECRET";
pub const PAYMENT_VARIANT_BASIC: &str = "PAYMENT_VARIANT_BASIC";
pub const PAYMENT_VARIANT_PRO: &str = "PAYMENT_VARIANT_PRO";
pub const PAYMENT_VARIANT_PREMIUM: &str = "PAYMENT_VARIANT_PREMIUM";
pub const PAYMENT_VARIANT_ANNUAL: &str = "PAYMENT_VARIANT_ANNUAL";
pub const SMTP_URL: &str = "SMTP_URL";
pub const MAIL_FROM: &str = "MAIL_FROM";
pub const LICENCE_SIGNING_KEYS: &str = "LICENCE_SIGNING_KEYS";
pub const LICENCE_GRACE_DAYS: &str = "LICENCE_GRACE_DAYS";
pub const LICENCE_STALE_DAYS: &str = "LICENCE_STALE_DAYS";
pub const LICENCE_DEACTIVATIONS_PER_30_DAYS: &str = "LICENCE_DEACTIVATIONS_PER_30_DAYS";
pub const LICENCE_RATE_LIMIT_PER_MINUTE: &str = "LICENCE_RATE_LIMIT_PER_MINUTE";
pub const WEBHOOK_RATE_LIMIT_PER_MINUTE: &str = "WEBHOOK_RATE_LIMIT_PER_MINUTE";
pub const TRUSTED_PROXIES: &str = "TRUSTED_PROXIES";

/// Minimum length of the token and download signing secrets (256 bits for HMAC-SHA256).
pub const MIN_SIGNING_SECRET_LEN: usize = 32;
/// Minimum length of the webhook secret, which the payment provider lets the merchant choose.
pub const MIN_WEBHOOK_SECRET_LEN: usize = 16;

#[derive(Debug, Clone)]
pub struct Settings {
    pub server: ServerSettings,
    pub public_base_url: Url,
    /// The key ring: the first key signs, all verify.
    pub jwt_keys: Vec<JwtKey>,
    pub download_signing_secret: Secret,
    pub builds_dir: PathBuf,
    pub webhook_secret: Secret,
    pub variants: Variants,
    pub smtp_url: Secret,
    pub mail_from: Mailbox,
    /// The Ed25519 ring of leases and answer signatures: the first key signs, all are published.
    pub signing_keys: Vec<LeaseKey>,
    /// Days a lease lets the app run offline.
    pub grace_days: u32,
    /// Days without a validation after which an installation's seat may go to a new one.
    pub stale_days: u32,
    pub deactivations_per_30_days: u32,
    /// Requests per minute and client address to activate, validate and deactivate together.
    pub licence_rate_limit: u32,
    /// Webhook deliveries per minute and client address.
    pub webhook_rate_limit: u32,
    /// Proxies whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Vec<IpNet>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtKey {
    pub kid: String,
    pub secret: Secret,
}

/// The payment provider's variant id of each plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variants {
    pub basic: u64,
    pub pro: u64,
    pub premium: u64,
    pub annual: u64,
}

/// One worker per core when `HTTP_WORKERS` is unset: no worker waits for MariaDB (each sends
/// its requests' statements from its own event loop, `crate::repo`), and fewer workers each hold
/// more requests to send together: held side by side on 2 cores, 2 workers answered
/// 12,300–15,300 validates/s and 10,000–10,700 consumptions/s, 4 workers 10,300–14,400 and
/// 8,100–9,600 (bench/licence/README.md). Each worker holds about 150 KiB.
fn http_defaults() -> service_kit::http::Limits {
    service_kit::http::Limits {
        workers: service_kit::http::cores(),
        ..service_kit::http::Limits::default()
    }
}

impl Settings {
    pub fn from_env(env: &Env) -> Result<Self, ConfigError> {
        Ok(Self {
            server: ServerSettings::from_env_or(
                env,
                DEFAULT_LISTEN_ADDR,
                database_url,
                http_defaults(),
            )?,
            public_base_url: env.http_url(PUBLIC_BASE_URL, "https://licences.example.com")?,
            jwt_keys: jwt_keys(env)?,
            download_signing_secret: env.secret(DOWNLOAD_SIGNING_SECRET, MIN_SIGNING_SECRET_LEN)?,
            builds_dir: builds_dir(env)?,
            webhook_secret: env.secret(PAYMENT_WEBHOOK_SECRET, MIN_WEBHOOK_SECRET_LEN)?,
            variants: variants(env)?,
            smtp_url: smtp_url(env)?,
            mail_from: mail_from(env)?,
            signing_keys: signing_keys(env)?,
            grace_days: env.number(LICENCE_GRACE_DAYS, 7, 1, 90)?,
            stale_days: env.number(LICENCE_STALE_DAYS, 30, 1, 3650)?,
            deactivations_per_30_days: env.number(LICENCE_DEACTIVATIONS_PER_30_DAYS, 3, 1, 1000)?,
            licence_rate_limit: env.number(LICENCE_RATE_LIMIT_PER_MINUTE, 60, 1, 100_000)?,
            webhook_rate_limit: env.number(WEBHOOK_RATE_LIMIT_PER_MINUTE, 600, 1, 100_000)?,
            trusted_proxies: env.ip_networks(TRUSTED_PROXIES)?,
        })
    }
}

pub fn database_url(env: &Env) -> Result<Secret, ConfigError> {
    env.database_url(&["mysql"], "mysql://app:password@127.0.0.1:3306/licensing")
}

fn jwt_keys(env: &Env) -> Result<Vec<JwtKey>, ConfigError> {
    let raw = env.required(
        LICENCE_JWT_KEYS,
        "k2026:<32+ random bytes>,k2025:<older secret>",
    )?;
    let entries =
        key_entries(raw, "secret").map_err(|rule| ConfigError::new(LICENCE_JWT_KEYS, rule))?;
    let mut keys: Vec<JwtKey> = Vec::new();
    for (kid, secret) in entries {
        if secret.len() < MIN_SIGNING_SECRET_LEN {
            return Err(ConfigError::new(
                LICENCE_JWT_KEYS,
                format!(
                    "the secret of kid `{kid}` must be at least {MIN_SIGNING_SECRET_LEN} bytes"
                ),
            ));
        }
        env.check_secret(LICENCE_JWT_KEYS, secret)?;
        keys.push(JwtKey {
            kid: kid.to_owned(),
            secret: Secret::new(secret),
        });
    }
    Ok(keys)
}

/// The `kid:value` pairs of a key ring (LICENCE_JWT_KEYS, LICENCE_SIGNING_KEYS), in order:
/// at least one, each kid 1 to 64 letters, digits, '-', '_' or '.' (it travels in token and
/// lease headers) and no kid twice, or a verifier could not tell which key to use. `value`
/// names the second half of a pair in the rule an `Err` states.
pub(crate) fn key_entries<'a>(
    raw: &'a str,
    value: &str,
) -> Result<Vec<(&'a str, &'a str)>, String> {
    let mut entries: Vec<(&str, &str)> = Vec::new();
    for entry in raw.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (kid, rest) = entry
            .split_once(':')
            .ok_or_else(|| format!("must be a comma-separated list of kid:{value} pairs"))?;
        let kid = kid.trim();
        let valid_kid = !kid.is_empty()
            && kid.len() <= 64
            && kid
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !valid_kid {
            return Err("each kid must be 1 to 64 letters, digits, '-', '_' or '.'".into());
        }
        if entries.iter().any(|(k, _)| *k == kid) {
            return Err(format!("kid `{kid}` appears twice"));
        }
        entries.push((kid, rest));
    }
    if entries.is_empty() {
        return Err(format!("must hold at least one kid:{value} pair"));
    }
    Ok(entries)
}

fn signing_keys(env: &Env) -> Result<Vec<LeaseKey>, ConfigError> {
    let raw = env.required(
        LICENCE_SIGNING_KEYS,
        "ed1:<openssl rand -base64 32>,ed0:<older seed>",
    )?;
    let keys = crate::lease::parse_keys(raw)
        .map_err(|rule| ConfigError::new(LICENCE_SIGNING_KEYS, rule))?;
    for entry in raw.split(',') {
        if let Some((_, seed)) = entry.split_once(':') {
            env.check_secret(LICENCE_SIGNING_KEYS, seed.trim())?;
        }
    }
    Ok(keys)
}

fn builds_dir(env: &Env) -> Result<PathBuf, ConfigError> {
    let path = PathBuf::from(env.required(BUILDS_DIR, "/srv/builds")?);
    if !path.is_dir() {
        return Err(ConfigError::new(
            BUILDS_DIR,
            "must be an existing directory",
        ));
    }
    // Canonical, so that the containment check of downloads compares like with like.
    path.canonicalize()
        .map_err(|_| ConfigError::new(BUILDS_DIR, "must be an existing, readable directory"))
}

fn variants(env: &Env) -> Result<Variants, ConfigError> {
    let one = |name: &str| -> Result<u64, ConfigError> {
        let raw = env.required(name, "123456")?;
        raw.parse::<u64>().ok().filter(|v| *v > 0).ok_or_else(|| {
            ConfigError::new(name, "must be the payment provider's numeric variant id")
        })
    };
    let v = Variants {
        basic: one(PAYMENT_VARIANT_BASIC)?,
        pro: one(PAYMENT_VARIANT_PRO)?,
        premium: one(PAYMENT_VARIANT_PREMIUM)?,
        annual: one(PAYMENT_VARIANT_ANNUAL)?,
    };
    let named = [
        (PAYMENT_VARIANT_BASIC, v.basic),
        (PAYMENT_VARIANT_PRO, v.pro),
        (PAYMENT_VARIANT_PREMIUM, v.premium),
        (PAYMENT_VARIANT_ANNUAL, v.annual),
    ];
    for (i, (name, id)) in named.iter().enumerate() {
        if named[..i].iter().any(|(_, other)| other == id) {
            return Err(ConfigError::new(
                *name,
                "must differ from the other plans' variant ids",
            ));
        }
    }
    Ok(v)
}

fn smtp_url(env: &Env) -> Result<Secret, ConfigError> {
    let raw = env.required(SMTP_URL, "smtps://user:password@smtp.example.com:465")?;
    let allow_plaintext = env.flag(mailer::settings::SMTP_ALLOW_PLAINTEXT, false)?;
    mailer::settings::smtp_url(raw, allow_plaintext)
}

fn mail_from(env: &Env) -> Result<Mailbox, ConfigError> {
    let raw = env.required(MAIL_FROM, "Licences <licences@example.com>")?;
    Mailbox::from_str(raw).map_err(|_| {
        ConfigError::new(
            MAIL_FROM,
            "must be an address like Licences <licences@example.com>",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "0123456789abcdef0123456789abcdef";
    const SEED: &str = "ed1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

    fn with(extra: &[(&str, &str)]) -> Result<Settings, ConfigError> {
        let dir = std::env::temp_dir().to_string_lossy().into_owned();
        let keys = format!("k1:{KEY}");
        let base = [
            ("DATABASE_URL", "mysql://app:app@127.0.0.1:3306/licensing"),
            (PUBLIC_BASE_URL, "https://licences.example.com"),
            (LICENCE_JWT_KEYS, keys.as_str()),
            (DOWNLOAD_SIGNING_SECRET, "fedcba9876543210fedcba9876543210"),
            (BUILDS_DIR, dir.as_str()),
            (PAYMENT_WEBHOOK_SECRET, "whsec-0123456789abcdef"),
            (PAYMENT_VARIANT_BASIC, "101"),
            (PAYMENT_VARIANT_PRO, "102"),
            (PAYMENT_VARIANT_PREMIUM, "103"),
            (PAYMENT_VARIANT_ANNUAL, "104"),
            (SMTP_URL, "smtp://127.0.0.1:2525"),
            (MAIL_FROM, "Licences <licences@example.com>"),
            (LICENCE_SIGNING_KEYS, SEED),
        ];
        Settings::from_env(&Env::overriding(&base, extra))
    }

    testkit::settings_tests!("postgres://app@127.0.0.1/x");

    #[test]
    fn valid_defaults() {
        let s = with(&[]).expect("valid");
        assert_eq!(s.jwt_keys.len(), 1);
        assert_eq!(s.variants.annual, 104);
        assert_eq!(s.mail_from.email.to_string(), "licences@example.com");
        assert!(!format!("{s:?}").contains(KEY));
    }

    #[test]
    fn one_worker_per_core_as_no_worker_waits_for_mariadb() {
        let cores = service_kit::http::cores().get();
        let workers =
            |extra: &[(&str, &str)]| with(extra).expect("valid").server.http.workers.get();
        assert_eq!(workers(&[]), cores);
        let socket = [("DATABASE_URL", "mysql://app:app@localhost/licensing")];
        assert_eq!(workers(&socket), cores, "whatever the URL");
        assert_eq!(
            workers(&[("DATABASE_URL", socket[0].1), ("HTTP_WORKERS", "3")]),
            3,
            "as set"
        );
    }

    #[test]
    fn public_base_url() {
        assert_eq!(
            failing(&[(PUBLIC_BASE_URL, "licences.example.com")]),
            PUBLIC_BASE_URL
        );
    }

    #[test]
    fn jwt_key_ring_rules() {
        let long = format!("a:{KEY},b:{KEY}");
        assert_eq!(
            with(&[(LICENCE_JWT_KEYS, long.as_str())])
                .expect("valid")
                .jwt_keys[0]
                .kid,
            "a"
        );
        for bad in [
            "nokid".to_owned(),
            format!(":{KEY}"),
            format!("bad kid:{KEY}"),
            "k1:short".to_owned(),
            format!("k1:{KEY},k1:{KEY}"),
            ",".to_owned(),
        ] {
            assert_eq!(
                failing(&[(LICENCE_JWT_KEYS, bad.as_str())]),
                LICENCE_JWT_KEYS,
                "{bad}"
            );
        }
    }

    #[test]
    fn download_signing_secret_length() {
        assert_eq!(
            failing(&[(DOWNLOAD_SIGNING_SECRET, "short")]),
            DOWNLOAD_SIGNING_SECRET
        );
    }

    #[test]
    fn builds_dir_must_exist() {
        assert_eq!(failing(&[(BUILDS_DIR, "/definitely/not/here")]), BUILDS_DIR);
    }

    #[test]
    fn webhook_secret_length() {
        assert_eq!(
            failing(&[(PAYMENT_WEBHOOK_SECRET, "abc")]),
            PAYMENT_WEBHOOK_SECRET
        );
    }

    #[test]
    fn variants_numeric_and_distinct() {
        assert_eq!(
            failing(&[(PAYMENT_VARIANT_PRO, "pro")]),
            PAYMENT_VARIANT_PRO
        );
        assert_eq!(
            failing(&[(PAYMENT_VARIANT_BASIC, "0")]),
            PAYMENT_VARIANT_BASIC
        );
        assert_eq!(
            failing(&[(PAYMENT_VARIANT_ANNUAL, "101")]),
            PAYMENT_VARIANT_ANNUAL
        );
        assert_eq!(
            failing(&[(PAYMENT_VARIANT_PREMIUM, "")]),
            PAYMENT_VARIANT_PREMIUM
        );
    }

    #[test]
    fn smtp_url_scheme() {
        assert_eq!(failing(&[(SMTP_URL, "http://mail")]), SMTP_URL);
        assert_eq!(failing(&[(SMTP_URL, "mail.example.com:25")]), SMTP_URL);
        assert!(with(&[(SMTP_URL, "smtps://u:p@mail.example.com:465")]).is_ok());
    }

    #[test]
    fn plaintext_smtp_only_to_this_machine() {
        assert_eq!(
            failing(&[(SMTP_URL, "smtp://mail.example.com:25")]),
            SMTP_URL
        );
        assert!(with(&[(SMTP_URL, "smtp://u:p@mail.example.com:587?tls=required")]).is_ok());
        assert!(
            with(&[
                (SMTP_URL, "smtp://mail.example.com:25"),
                ("SMTP_ALLOW_PLAINTEXT", "true")
            ])
            .is_ok()
        );
    }

    #[test]
    fn signing_keys_and_section_7_numbers() {
        let s = with(&[]).expect("valid");
        assert_eq!(s.signing_keys[0].kid, "ed1");
        assert_eq!(
            (s.grace_days, s.stale_days, s.deactivations_per_30_days),
            (7, 30, 3)
        );
        assert!(!format!("{s:?}").contains("AAECAwQF"));
        assert_eq!(
            failing(&[(LICENCE_SIGNING_KEYS, "ed1:change-me")]),
            LICENCE_SIGNING_KEYS
        );
        assert_eq!(failing(&[(LICENCE_SIGNING_KEYS, "")]), LICENCE_SIGNING_KEYS);
        assert_eq!(failing(&[(LICENCE_GRACE_DAYS, "0")]), LICENCE_GRACE_DAYS);
        assert_eq!(failing(&[(LICENCE_STALE_DAYS, "x")]), LICENCE_STALE_DAYS);
        assert_eq!(
            failing(&[(LICENCE_DEACTIVATIONS_PER_30_DAYS, "-1")]),
            LICENCE_DEACTIVATIONS_PER_30_DAYS
        );
        assert_eq!(failing(&[(TRUSTED_PROXIES, "proxy")]), TRUSTED_PROXIES);
    }

    #[test]
    fn mail_from_is_a_mailbox() {
        assert_eq!(failing(&[(MAIL_FROM, "not an address")]), MAIL_FROM);
    }
}
