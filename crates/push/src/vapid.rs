//! VAPID keys and configuration.
//!
//! Keys travel as base64url without padding, the format browsers and every Web Push library use:
//! the public key is the 65-byte uncompressed P-256 point, the private key the 32-byte scalar.
//! Push is configured with all three variables or none; none switches push off, anything in
//! between is a configuration error, because a half-configured sender fails only at the first push.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use p256::SecretKey;
use p256::elliptic_curve::sec1::ToEncodedPoint;
use service_kit::{ConfigError, Env, Secret};

pub const VAPID_PUBLIC_KEY: &str = "VAPID_PUBLIC_KEY";
pub const VAPID_PRIVATE_KEY: &str = "VAPID_PRIVATE_KEY";
pub const VAPID_SUBJECT: &str = "VAPID_SUBJECT";
pub const PUSH_ALLOW_HTTP_ENDPOINTS: &str = "PUSH_ALLOW_HTTP_ENDPOINTS";

/// A checked VAPID configuration.
#[derive(Debug, Clone)]
pub struct VapidConfig {
    /// base64url, as handed to browsers in `applicationServerKey`.
    pub public_key: String,
    pub private_key: Secret,
    /// `mailto:` or `https:` contact of the sender, sent as the JWT `sub`.
    pub subject: String,
}

impl VapidConfig {
    /// `Ok(None)` when all three variables are unset (push off).
    pub fn from_env(env: &Env) -> Result<Option<Self>, ConfigError> {
        let public = env.get(VAPID_PUBLIC_KEY)?;
        let private = env.get(VAPID_PRIVATE_KEY)?;
        let subject = env.get(VAPID_SUBJECT)?;
        let (public, private, subject) = match (public, private, subject) {
            (None, None, None) => return Ok(None),
            (Some(a), Some(b), Some(c)) => (a, b, c),
            (a, b, _) => {
                let missing = if a.is_none() {
                    VAPID_PUBLIC_KEY
                } else if b.is_none() {
                    VAPID_PRIVATE_KEY
                } else {
                    VAPID_SUBJECT
                };
                return Err(ConfigError::new(
                    missing,
                    "must be set: VAPID_PUBLIC_KEY, VAPID_PRIVATE_KEY and VAPID_SUBJECT go together (set all three, or none to switch push off)",
                ));
            }
        };
        let secret = decode_private(private).ok_or_else(|| {
            ConfigError::new(
                VAPID_PRIVATE_KEY,
                "must be a base64url P-256 private key (32 bytes), as printed by `push-scheduler vapid-keys`",
            )
        })?;
        let point = decode_public(public).ok_or_else(|| {
            ConfigError::new(
                VAPID_PUBLIC_KEY,
                "must be a base64url uncompressed P-256 public key (65 bytes starting with 0x04)",
            )
        })?;
        if secret.public_key().to_encoded_point(false).as_bytes() != point.as_slice() {
            return Err(ConfigError::new(
                VAPID_PUBLIC_KEY,
                "does not belong to VAPID_PRIVATE_KEY",
            ));
        }
        let subject_ok = subject
            .strip_prefix("mailto:")
            .map(|addr| addr.contains('@') && !addr.contains(char::is_whitespace))
            .unwrap_or(false)
            || service_kit::config::parse_http_url(subject)
                .map(|u| u.scheme() == "https")
                .unwrap_or(false);
        if !subject_ok {
            return Err(ConfigError::new(
                VAPID_SUBJECT,
                "must be a mailto: address or an https: URL",
            ));
        }
        Ok(Some(Self {
            public_key: public.to_owned(),
            private_key: Secret::new(private),
            subject: subject.to_owned(),
        }))
    }
}

/// Whether plain `http://` and private-network push endpoints are accepted (tests only).
pub fn allow_http_endpoints(env: &Env) -> Result<bool, ConfigError> {
    env.flag(PUSH_ALLOW_HTTP_ENDPOINTS, false)
}

fn decode_private(b64: &str) -> Option<SecretKey> {
    let bytes = URL_SAFE_NO_PAD.decode(b64.trim_end_matches('=')).ok()?;
    if bytes.len() != 32 {
        return None;
    }
    SecretKey::from_slice(&bytes).ok()
}

/// Decodes a base64url uncompressed P-256 point, checking that it lies on the curve.
pub fn decode_public(b64: &str) -> Option<Vec<u8>> {
    let bytes = URL_SAFE_NO_PAD.decode(b64.trim_end_matches('=')).ok()?;
    if bytes.len() != 65 || bytes[0] != 0x04 {
        return None;
    }
    p256::PublicKey::from_sec1_bytes(&bytes).ok()?;
    Some(bytes)
}

/// A freshly generated key pair, base64url encoded.
#[derive(Debug, Clone)]
pub struct VapidKeyPair {
    pub public_key: String,
    pub private_key: Secret,
}

impl VapidKeyPair {
    pub fn generate() -> Self {
        let secret = SecretKey::random(&mut rand_core::OsRng);
        let public = secret.public_key().to_encoded_point(false);
        Self {
            public_key: URL_SAFE_NO_PAD.encode(public.as_bytes()),
            private_key: Secret::new(URL_SAFE_NO_PAD.encode(secret.to_bytes())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_with(public: &str, private: &str, subject: &str) -> Env {
        Env::from_pairs([
            (VAPID_PUBLIC_KEY, public),
            (VAPID_PRIVATE_KEY, private),
            (VAPID_SUBJECT, subject),
        ])
    }

    #[test]
    fn none_means_push_off() {
        assert!(
            VapidConfig::from_env(&Env::default())
                .expect("valid")
                .is_none()
        );
    }

    #[test]
    fn generated_pair_is_accepted() {
        let pair = VapidKeyPair::generate();
        let env = env_with(
            &pair.public_key,
            pair.private_key.expose(),
            "mailto:ops@example.com",
        );
        let cfg = VapidConfig::from_env(&env)
            .expect("valid")
            .expect("configured");
        assert_eq!(cfg.public_key.len(), 87);
        assert!(!format!("{cfg:?}").contains(pair.private_key.expose()));
    }

    #[test]
    fn partial_configuration_names_the_missing_variable() {
        let pair = VapidKeyPair::generate();
        let env = Env::from_pairs([(VAPID_PUBLIC_KEY, pair.public_key.as_str())]);
        assert_eq!(
            VapidConfig::from_env(&env).unwrap_err().var,
            VAPID_PRIVATE_KEY
        );
        let env = Env::from_pairs([
            (VAPID_PUBLIC_KEY, pair.public_key.as_str()),
            (VAPID_PRIVATE_KEY, pair.private_key.expose()),
        ]);
        assert_eq!(VapidConfig::from_env(&env).unwrap_err().var, VAPID_SUBJECT);
        let env = Env::from_pairs([(VAPID_SUBJECT, "mailto:a@b.c")]);
        assert_eq!(
            VapidConfig::from_env(&env).unwrap_err().var,
            VAPID_PUBLIC_KEY
        );
    }

    #[test]
    fn malformed_keys_name_their_variable() {
        let pair = VapidKeyPair::generate();
        let other = VapidKeyPair::generate();
        let subject = "https://example.com/contact";
        let bad_private = env_with(&pair.public_key, "not-a-key", subject);
        assert_eq!(
            VapidConfig::from_env(&bad_private).unwrap_err().var,
            VAPID_PRIVATE_KEY
        );
        let bad_public = env_with("AAAA", pair.private_key.expose(), subject);
        assert_eq!(
            VapidConfig::from_env(&bad_public).unwrap_err().var,
            VAPID_PUBLIC_KEY
        );
        let mismatch = env_with(&other.public_key, pair.private_key.expose(), subject);
        assert!(
            VapidConfig::from_env(&mismatch)
                .unwrap_err()
                .rule
                .contains("does not belong")
        );
        // A point that is 65 bytes long but not on the curve.
        let off_curve = URL_SAFE_NO_PAD.encode([4u8; 65]);
        let env = env_with(&off_curve, pair.private_key.expose(), subject);
        assert_eq!(
            VapidConfig::from_env(&env).unwrap_err().var,
            VAPID_PUBLIC_KEY
        );
    }

    #[test]
    fn subject_must_be_mailto_or_https() {
        let pair = VapidKeyPair::generate();
        for bad in ["ops@example.com", "http://example.com", "mailto:nobody"] {
            let env = env_with(&pair.public_key, pair.private_key.expose(), bad);
            assert_eq!(
                VapidConfig::from_env(&env).unwrap_err().var,
                VAPID_SUBJECT,
                "{bad}"
            );
        }
    }
}
