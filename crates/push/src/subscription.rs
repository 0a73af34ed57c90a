//! What a browser hands over when it subscribes, and the checks it must pass before it is stored.
//!
//! Keys are checked when a device registers, not when the first reminder fails: a key that is not
//! a point on P-256 can never be encrypted to, so storing it would only produce a silent failure
//! days later.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// A push subscription as `PushSubscription.toJSON()` gives it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Subscription {
    pub endpoint: String,
    /// base64url, the subscriber's uncompressed P-256 public key (65 bytes).
    pub p256dh: String,
    /// base64url, the subscriber's 16-byte authentication secret.
    pub auth: String,
}

/// Why a subscription's keys were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("keys.p256dh must be base64url")]
    P256dhEncoding,
    #[error("keys.p256dh must be a 65-byte uncompressed P-256 public key, got {0} bytes")]
    P256dhLength(usize),
    #[error("keys.p256dh must be an uncompressed P-256 public key (first byte 0x04)")]
    P256dhNotUncompressed,
    #[error("keys.p256dh is not a point on the P-256 curve")]
    P256dhNotOnCurve,
    #[error("keys.auth must be base64url")]
    AuthEncoding,
    #[error("keys.auth must be a 16-byte secret, got {0} bytes")]
    AuthLength(usize),
}

/// Checks `p256dh` and `auth` as a browser sends them (base64url; trailing `=` padding tolerated).
pub fn check_keys(p256dh: &str, auth: &str) -> Result<(), KeyError> {
    let point = decode(p256dh).ok_or(KeyError::P256dhEncoding)?;
    if point.len() != 65 {
        return Err(KeyError::P256dhLength(point.len()));
    }
    if point[0] != 0x04 {
        return Err(KeyError::P256dhNotUncompressed);
    }
    p256::PublicKey::from_sec1_bytes(&point).map_err(|_| KeyError::P256dhNotOnCurve)?;
    let secret = decode(auth).ok_or(KeyError::AuthEncoding)?;
    if secret.len() != 16 {
        return Err(KeyError::AuthLength(secret.len()));
    }
    Ok(())
}

/// The key without padding, the only form the `web-push` crate decodes, and as the VAPID `k`
/// parameter is compared.
pub(crate) fn unpadded(key: &str) -> &str {
    key.trim_end_matches('=')
}

fn decode(key: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(unpadded(key)).ok()
}
