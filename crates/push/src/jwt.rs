//! The VAPID `Authorization` header (RFC 8292), signed once per push service and reused.
//!
//! The token is signed by the `web-push` crate (`PartialVapidSignatureBuilder`, ES256 through
//! `jwt-simple`); what is kept here is when to sign. A VAPID token names the push service's origin
//! (`aud`), so one token serves every subscription on that service until it expires. Signing per
//! message, as the crate's own clients do, would cost an ECDSA signature per notification for
//! nothing, and push services rate-limit senders that present a fresh token on every request less
//! kindly than ones that reuse it. Tokens live [`TOKEN_LIFETIME`] (the RFC allows at most 24 hours)
//! and are replaced once less than [`REFRESH_BEFORE`] is left, so a token never expires while a
//! request carrying it is in flight.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use web_push::{
    PartialVapidSignatureBuilder, SubscriptionInfo, VapidSignature, VapidSignatureBuilder,
    WebPushError,
};

/// How long a signed token is valid.
pub const TOKEN_LIFETIME: Duration = Duration::from_secs(12 * 3600);
/// A cached token with less than this left is replaced before use.
pub const REFRESH_BEFORE: Duration = Duration::from_secs(3600);
/// Origins remembered at most; a flood of registrations on made-up push services cannot grow the
/// cache without bound.
const MAX_ORIGINS: usize = 1024;

struct Cached {
    signature: VapidSignature,
    expires_at: u64,
}

/// Signs VAPID tokens and keeps one per push-service origin.
pub(crate) struct VapidSigner {
    key: PartialVapidSignatureBuilder,
    /// base64url uncompressed public key, the `k` parameter.
    public_key: String,
    subject: String,
    cache: Mutex<HashMap<String, Cached>>,
    signings: AtomicU64,
}

impl VapidSigner {
    /// `private_key`: the base64url 32-byte scalar of the configuration (padding tolerated);
    /// `None` if it is not one.
    pub(crate) fn new(private_key: &str, subject: String) -> Option<Self> {
        let private_key = private_key.trim_end_matches('=');
        // `jwt-simple` panics on a key of another length instead of refusing it.
        if URL_SAFE_NO_PAD.decode(private_key).ok()?.len() != 32 {
            return None;
        }
        let key = VapidSignatureBuilder::from_base64_no_sub(private_key).ok()?;
        let public_key = URL_SAFE_NO_PAD.encode(key.get_public_key());
        Some(Self {
            key,
            public_key,
            subject,
            cache: Mutex::new(HashMap::new()),
            signings: AtomicU64::new(0),
        })
    }

    pub(crate) fn public_key(&self) -> &str {
        &self.public_key
    }

    /// The signature for a request to `origin` (`scheme://host[:port]`), which the message
    /// builder turns into the `Authorization` header.
    pub(crate) fn signature(&self, origin: &str) -> Result<VapidSignature, WebPushError> {
        self.signature_at(origin, unix_now())
    }

    pub(crate) fn signings(&self) -> u64 {
        self.signings.load(Ordering::Relaxed)
    }

    fn signature_at(&self, origin: &str, now: u64) -> Result<VapidSignature, WebPushError> {
        // Held while signing, so that concurrent first sends to one origin sign once.
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(cached) = cache.get(origin)
            && cached.expires_at > now + REFRESH_BEFORE.as_secs()
        {
            return Ok(cached.signature.clone());
        }
        if cache.len() >= MAX_ORIGINS {
            cache.retain(|_, c| c.expires_at > now + REFRESH_BEFORE.as_secs());
            if cache.len() >= MAX_ORIGINS {
                cache.clear();
            }
        }
        let expires_at = now + TOKEN_LIFETIME.as_secs();
        let signature = self.sign(origin, expires_at)?;
        cache.insert(
            origin.to_owned(),
            Cached {
                signature: signature.clone(),
                expires_at,
            },
        );
        Ok(signature)
    }

    fn sign(&self, origin: &str, expires_at: u64) -> Result<VapidSignature, WebPushError> {
        // The builder only reads the endpoint for its default `aud`, which leaves out the port
        // (RFC 8292 wants the origin, port included), and its default `exp` is counted from the
        // system clock: both are given here, so that the cache knows when the token expires.
        let info = SubscriptionInfo::new(origin, "", "");
        let mut builder = self.key.clone().add_sub_info(&info);
        builder.add_claim("aud", origin);
        builder.add_claim("exp", expires_at);
        builder.add_claim("sub", self.subject.as_str());
        let signature = builder.build()?;
        self.signings.fetch_add(1, Ordering::Relaxed);
        Ok(signature)
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
    use p256::ecdsa::signature::Verifier;
    use p256::ecdsa::{Signature, VerifyingKey};

    fn signer() -> VapidSigner {
        let pair = crate::VapidKeyPair::generate();
        VapidSigner::new(
            pair.private_key.expose(),
            "mailto:ops@example.com".to_owned(),
        )
        .expect("signer")
    }

    fn token(signer: &VapidSigner, origin: &str, now: u64) -> String {
        signer.signature_at(origin, now).expect("signs").auth_t
    }

    #[test]
    fn token_is_a_valid_es256_jwt_for_the_origin() {
        let signer = signer();
        let now = 1_800_000_000;
        let signature = signer
            .signature_at("https://push.example.net", now)
            .expect("signs");
        assert_eq!(
            URL_SAFE_NO_PAD.encode(&signature.auth_k),
            signer.public_key()
        );
        let parts: Vec<&str> = signature.auth_t.split('.').collect();
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
    fn the_audience_keeps_the_port() {
        let signer = signer();
        let t = token(&signer, "http://127.0.0.1:8443", 1_800_000_000);
        let claims = t.split('.').nth(1).expect("claims");
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).expect("b64")).expect("json");
        assert_eq!(claims["aud"], "http://127.0.0.1:8443");
    }

    #[test]
    fn token_is_reused_until_an_hour_before_expiry() {
        let signer = signer();
        let t0 = 1_800_000_000;
        let first = token(&signer, "https://a.example", t0);
        let lifetime = TOKEN_LIFETIME.as_secs();
        let refresh = REFRESH_BEFORE.as_secs();
        assert_eq!(token(&signer, "https://a.example", t0 + 60), first);
        assert_eq!(
            token(&signer, "https://a.example", t0 + lifetime - refresh - 1),
            first
        );
        assert_eq!(signer.signings(), 1);
        let renewed = token(&signer, "https://a.example", t0 + lifetime - refresh);
        assert_ne!(renewed, first);
        assert_eq!(signer.signings(), 2);
        token(&signer, "https://b.example", t0);
        assert_eq!(signer.signings(), 3);
    }

    #[test]
    fn cache_stays_bounded() {
        let signer = signer();
        for i in 0..(MAX_ORIGINS + 10) {
            token(&signer, &format!("https://p{i}.example"), 1_800_000_000);
        }
        let len = signer.cache.lock().expect("lock").len();
        assert!(len <= MAX_ORIGINS, "{len}");
    }

    #[test]
    fn a_bad_private_key_is_refused() {
        for bad in ["not-a-key", "AAAA", &URL_SAFE_NO_PAD.encode([0u8; 32])] {
            assert!(
                VapidSigner::new(bad, "mailto:a@b.c".to_owned()).is_none(),
                "{bad}"
            );
        }
    }
}
