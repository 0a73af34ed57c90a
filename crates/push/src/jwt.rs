//! The VAPID `Authorization` header (RFC 8292), signed once per push service and reused.
//!
//! A VAPID token names the push service's origin (`aud`), so one token serves every subscription
//! on that service until it expires. Signing per message would cost an ECDSA signature per
//! notification for nothing, and push services rate-limit senders that present a fresh token on
//! every request less kindly than ones that reuse it. Tokens live [`TOKEN_LIFETIME`] (the RFC
//! allows at most 24 hours) and are replaced once less than [`REFRESH_BEFORE`] is left, so a token
//! never expires while a request carrying it is in flight.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};

/// How long a signed token is valid.
pub const TOKEN_LIFETIME: Duration = Duration::from_secs(12 * 3600);
/// A cached token with less than this left is replaced before use.
pub const REFRESH_BEFORE: Duration = Duration::from_secs(3600);
/// Origins remembered at most; a flood of registrations on made-up push services cannot grow the
/// cache without bound.
const MAX_ORIGINS: usize = 1024;

struct Cached {
    header: String,
    expires_at: u64,
}

/// Signs VAPID tokens and keeps one per push-service origin.
pub(crate) struct VapidSigner {
    key: SigningKey,
    /// base64url uncompressed public key, the `k` parameter.
    public_key: String,
    subject: String,
    cache: Mutex<HashMap<String, Cached>>,
    signings: AtomicU64,
}

impl VapidSigner {
    pub(crate) fn new(key: SigningKey, subject: String) -> Self {
        let public_key = URL_SAFE_NO_PAD.encode(key.verifying_key().to_encoded_point(false));
        Self {
            key,
            public_key,
            subject,
            cache: Mutex::new(HashMap::new()),
            signings: AtomicU64::new(0),
        }
    }

    pub(crate) fn public_key(&self) -> &str {
        &self.public_key
    }

    /// The `Authorization` value for a request to `origin` (`scheme://host[:port]`).
    pub(crate) fn header(&self, origin: &str) -> String {
        self.header_at(origin, unix_now())
    }

    pub(crate) fn signings(&self) -> u64 {
        self.signings.load(Ordering::Relaxed)
    }

    fn header_at(&self, origin: &str, now: u64) -> String {
        // Held while signing, so that concurrent first sends to one origin sign once.
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(cached) = cache.get(origin)
            && cached.expires_at > now + REFRESH_BEFORE.as_secs()
        {
            return cached.header.clone();
        }
        if cache.len() >= MAX_ORIGINS {
            cache.retain(|_, c| c.expires_at > now + REFRESH_BEFORE.as_secs());
            if cache.len() >= MAX_ORIGINS {
                cache.clear();
            }
        }
        let expires_at = now + TOKEN_LIFETIME.as_secs();
        let token = self.sign(origin, expires_at);
        let header = format!("vapid t={token}, k={}", self.public_key);
        cache.insert(
            origin.to_owned(),
            Cached {
                header: header.clone(),
                expires_at,
            },
        );
        header
    }

    fn sign(&self, audience: &str, expires_at: u64) -> String {
        const HEADER: &str = r#"{"typ":"JWT","alg":"ES256"}"#;
        let claims = serde_json::json!({
            "aud": audience,
            "exp": expires_at,
            "sub": self.subject,
        });
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(HEADER),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        // JWS ES256 wants the raw 64-byte r || s, not DER.
        let signature: Signature = self.key.sign(signing_input.as_bytes());
        self.signings.fetch_add(1, Ordering::Relaxed);
        format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature.to_bytes())
        )
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::VerifyingKey;
    use p256::ecdsa::signature::Verifier;

    fn signer() -> VapidSigner {
        let key = SigningKey::random(&mut rand_core::OsRng);
        VapidSigner::new(key, "mailto:ops@example.com".to_owned())
    }

    fn token(header: &str) -> &str {
        header
            .strip_prefix("vapid t=")
            .and_then(|rest| rest.split(',').next())
            .expect("vapid t=")
    }

    #[test]
    fn token_is_a_valid_es256_jwt_for_the_origin() {
        let signer = signer();
        let now = 1_800_000_000;
        let header = signer.header_at("https://push.example.net", now);
        assert!(header.ends_with(&format!(", k={}", signer.public_key())));
        let parts: Vec<&str> = token(&header).split('.').collect();
        assert_eq!(parts.len(), 3);
        let head: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).expect("b64")).expect("json");
        assert_eq!(head, serde_json::json!({"typ": "JWT", "alg": "ES256"}));
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).expect("b64")).expect("json");
        assert_eq!(claims["aud"], "https://push.example.net");
        assert_eq!(claims["exp"], now + TOKEN_LIFETIME.as_secs());
        assert_eq!(claims["sub"], "mailto:ops@example.com");
        let signature =
            Signature::from_slice(&URL_SAFE_NO_PAD.decode(parts[2]).expect("b64")).expect("r||s");
        let key = VerifyingKey::from_sec1_bytes(
            &URL_SAFE_NO_PAD.decode(signer.public_key()).expect("b64"),
        )
        .expect("key");
        key.verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
            .expect("signature verifies");
    }

    #[test]
    fn token_is_reused_until_an_hour_before_expiry() {
        let signer = signer();
        let t0 = 1_800_000_000;
        let first = signer.header_at("https://a.example", t0);
        let lifetime = TOKEN_LIFETIME.as_secs();
        let refresh = REFRESH_BEFORE.as_secs();
        assert_eq!(signer.header_at("https://a.example", t0 + 60), first);
        assert_eq!(
            signer.header_at("https://a.example", t0 + lifetime - refresh - 1),
            first
        );
        assert_eq!(signer.signings(), 1);
        let renewed = signer.header_at("https://a.example", t0 + lifetime - refresh);
        assert_ne!(renewed, first);
        assert_eq!(signer.signings(), 2);
        signer.header_at("https://b.example", t0);
        assert_eq!(signer.signings(), 3);
    }

    #[test]
    fn cache_stays_bounded() {
        let signer = signer();
        for i in 0..(MAX_ORIGINS + 10) {
            signer.header_at(&format!("https://p{i}.example"), 1_800_000_000);
        }
        let len = signer.cache.lock().expect("lock").len();
        assert!(len <= MAX_ORIGINS, "{len}");
    }
}
