//! `SMTP_URL`, `MAIL_FROM` and `SMTP_ALLOW_PLAINTEXT`, checked at start-up.

use std::net::IpAddr;
use std::str::FromStr;

use lettre::message::Mailbox;
use lettre::{AsyncSmtpTransport, Tokio1Executor};
use service_kit::{ConfigError, Env, Secret};
use url::Url;

pub const SMTP_URL: &str = "SMTP_URL";
pub const MAIL_FROM: &str = "MAIL_FROM";
pub const SMTP_ALLOW_PLAINTEXT: &str = "SMTP_ALLOW_PLAINTEXT";

/// Where and as whom mail is sent.
#[derive(Debug, Clone)]
pub struct SmtpSettings {
    /// May hold the SMTP password.
    pub url: Secret,
    pub from: Mailbox,
}

impl SmtpSettings {
    /// The settings when `SMTP_URL` is set, `None` when it is not (mail switched off).
    pub fn optional_from_env(env: &Env, example_from: &str) -> Result<Option<Self>, ConfigError> {
        match env.get(SMTP_URL)? {
            None => Ok(None),
            Some(_) => Self::from_env(env, example_from).map(Some),
        }
    }

    /// The settings; `SMTP_URL` and `MAIL_FROM` are required.
    pub fn from_env(env: &Env, example_from: &str) -> Result<Self, ConfigError> {
        let raw = env.required(SMTP_URL, "smtps://user:password@smtp.example.com:465")?;
        let allow_plaintext = env.flag(SMTP_ALLOW_PLAINTEXT, false)?;
        let url = smtp_url(raw, allow_plaintext)?;
        let from_raw = env.required(MAIL_FROM, example_from)?;
        let from = Mailbox::from_str(from_raw).map_err(|_| {
            ConfigError::new(MAIL_FROM, format!("must be an address like {example_from}"))
        })?;
        Ok(Self { url, from })
    }
}

/// Checks an SMTP URL: `smtps://` (TLS from the start), `smtp://…?tls=required` (STARTTLS that
/// must succeed), or plain `smtp://` only to this machine unless plaintext is explicitly allowed,
/// because a plain connection to another host carries passwords and mail in the clear.
pub fn smtp_url(raw: &str, allow_plaintext: bool) -> Result<Secret, ConfigError> {
    let url = Url::parse(raw).map_err(|_| {
        ConfigError::new(
            SMTP_URL,
            "must be a URL like smtps://user:pass@host:465 or smtp://host:587?tls=required",
        )
    })?;
    let Some(host) = url.host_str().filter(|h| !h.is_empty()) else {
        return Err(ConfigError::new(SMTP_URL, "must name a host"));
    };
    let tls = url
        .query_pairs()
        .find(|(k, _)| k == "tls")
        .map(|(_, v)| v.into_owned());
    let encrypted = match (url.scheme(), tls.as_deref()) {
        ("smtps", None) | ("smtp", Some("required")) => true,
        ("smtp", None | Some("opportunistic")) => false,
        _ => {
            return Err(ConfigError::new(
                SMTP_URL,
                "must start with smtps:// or smtp:// (optionally with ?tls=required)",
            ));
        }
    };
    if !encrypted && !allow_plaintext && !is_loopback(host) {
        return Err(ConfigError::new(
            SMTP_URL,
            format!(
                "plain smtp:// is only allowed to this machine; use smtps:// or ?tls=required, \
                 or set {SMTP_ALLOW_PLAINTEXT}=true"
            ),
        ));
    }
    // Whatever lettre would refuse later is refused now, naming the variable.
    AsyncSmtpTransport::<Tokio1Executor>::from_url(raw)
        .map_err(|_| ConfigError::new(SMTP_URL, "is not a usable SMTP address"))?;
    Ok(Secret::new(raw))
}

fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(url: &str, plaintext: Option<&str>) -> Result<SmtpSettings, String> {
        let mut pairs = vec![(SMTP_URL, url), (MAIL_FROM, "App <app@example.com>")];
        if let Some(p) = plaintext {
            pairs.push((SMTP_ALLOW_PLAINTEXT, p));
        }
        SmtpSettings::from_env(&Env::from_pairs(pairs), "App <app@example.com>").map_err(|e| e.var)
    }

    #[test]
    fn plaintext_only_to_this_machine() {
        assert!(check("smtp://127.0.0.1:2525", None).is_ok());
        assert!(check("smtp://localhost:25", None).is_ok());
        assert!(check("smtp://[::1]:25", None).is_ok());
        assert_eq!(
            check("smtp://mail.example.com:25", None).unwrap_err(),
            SMTP_URL
        );
        assert_eq!(check("smtp://10.0.0.5:25", None).unwrap_err(), SMTP_URL);
        assert_eq!(
            check("smtp://u:p@mail.example.com:587?tls=opportunistic", None).unwrap_err(),
            SMTP_URL
        );
        assert!(check("smtp://mail.example.com:25", Some("true")).is_ok());
        assert_eq!(
            check("smtp://mail.example.com:25", Some("maybe")).unwrap_err(),
            SMTP_ALLOW_PLAINTEXT
        );
    }

    #[test]
    fn encrypted_remote_servers() {
        assert!(check("smtps://u:p@mail.example.com:465", None).is_ok());
        assert!(check("smtp://u:p@mail.example.com:587?tls=required", None).is_ok());
        assert_eq!(
            check("smtps://mail.example.com?tls=bogus", None).unwrap_err(),
            SMTP_URL
        );
    }

    #[test]
    fn malformed_values() {
        assert_eq!(check("mail.example.com:25", None).unwrap_err(), SMTP_URL);
        assert_eq!(
            check("http://mail.example.com", None).unwrap_err(),
            SMTP_URL
        );
        let env = Env::from_pairs([(SMTP_URL, "smtp://127.0.0.1:25"), (MAIL_FROM, "nobody")]);
        assert_eq!(
            SmtpSettings::from_env(&env, "x <x@example.com>")
                .unwrap_err()
                .var,
            MAIL_FROM
        );
    }

    #[test]
    fn optional_when_unset() {
        let env = Env::from_pairs([(MAIL_FROM, "App <app@example.com>")]);
        assert!(
            SmtpSettings::optional_from_env(&env, "x <x@example.com>")
                .expect("valid")
                .is_none()
        );
        let env = Env::from_pairs([(SMTP_URL, "smtp://127.0.0.1:25")]);
        assert_eq!(
            SmtpSettings::optional_from_env(&env, "x <x@example.com>")
                .unwrap_err()
                .var,
            MAIL_FROM
        );
    }
}
