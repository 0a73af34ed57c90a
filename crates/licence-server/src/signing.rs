//! HMAC-SHA256 signatures: download addresses and the payment provider's webhook.
//!
//! Comparisons go through `Mac::verify_slice`, which compares in constant time, so the time of a
//! rejection tells nothing about how much of a forged signature was right.

use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// How long a signed download address stays valid.
pub const DOWNLOAD_VALIDITY: chrono::Duration = chrono::Duration::minutes(15);

fn mac(secret: &[u8]) -> HmacSha256 {
    // HMAC accepts keys of any length; the error case does not exist for it.
    HmacSha256::new_from_slice(secret).unwrap_or_else(|_| unreachable!("HMAC takes any key length"))
}

/// The message a download signature covers. The newline cannot occur in a manifest file name
/// (names are single path components without control characters), so no two (name, expiry)
/// pairs share a message.
fn download_message(file: &str, expires: i64) -> String {
    format!("download\n{file}\n{expires}")
}

/// The hex signature of a download of `file` valid until `expires` (Unix seconds).
pub fn sign_download(secret: &[u8], file: &str, expires: i64) -> String {
    let mut m = mac(secret);
    m.update(download_message(file, expires).as_bytes());
    to_hex(&m.finalize().into_bytes())
}

/// Whether `sig` is the signature of (`file`, `expires`) and `expires` is still ahead of `now`.
pub fn verify_download(
    secret: &[u8],
    file: &str,
    expires: i64,
    sig: &str,
    now: DateTime<Utc>,
) -> bool {
    let Some(sig) = from_hex(sig) else {
        return false;
    };
    let mut m = mac(secret);
    m.update(download_message(file, expires).as_bytes());
    let authentic = m.verify_slice(&sig).is_ok();
    authentic && expires > now.timestamp()
}

/// The message of a licence's Sparkle feed token. Download messages start with `download\n`, so
/// no feed token is ever a download signature.
fn sparkle_feed_message(licence_id: &str) -> String {
    format!("sparkle-feed\n{licence_id}")
}

/// The Sparkle feed token of a licence (contract section 12): the base64url HMAC-SHA256 of its
/// id. It never expires: an app keeps its feed address for as long as it is installed.
pub fn sparkle_feed_token(secret: &[u8], licence_id: &str) -> String {
    use base64::Engine;
    let mut m = mac(secret);
    m.update(sparkle_feed_message(licence_id).as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(m.finalize().into_bytes())
}

/// Whether `token` is the feed token of `licence_id`, compared in constant time.
pub fn verify_sparkle_feed(secret: &[u8], licence_id: &str, token: &str) -> bool {
    use base64::Engine;
    let Ok(sig) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(token) else {
        return false;
    };
    let mut m = mac(secret);
    m.update(sparkle_feed_message(licence_id).as_bytes());
    m.verify_slice(&sig).is_ok()
}

/// Whether `signature` (hex, as Lemon Squeezy sends it in `X-Signature`) is the HMAC-SHA256 of
/// the raw `body`.
pub fn verify_webhook(secret: &[u8], body: &[u8], signature: &str) -> bool {
    let Some(sig) = from_hex(signature.trim()) else {
        return false;
    };
    let mut m = mac(secret);
    m.update(body);
    m.verify_slice(&sig).is_ok()
}

/// The hex HMAC-SHA256 of `body`, as the provider computes it.
pub fn webhook_signature(secret: &[u8], body: &[u8]) -> String {
    let mut m = mac(secret);
    m.update(body);
    to_hex(&m.finalize().into_bytes())
}

pub fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

/// Hex (either case) to bytes; `None` for odd lengths and other characters.
pub fn from_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || s.len() > 256 {
        return None;
    }
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    s.as_bytes()
        .chunks(2)
        .map(|pair| Some(nibble(pair[0])? << 4 | nibble(pair[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

    #[test]
    fn download_signatures() {
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
        let exp = now.timestamp() + 900;
        let sig = sign_download(SECRET, "app.dmg", exp);
        assert!(verify_download(SECRET, "app.dmg", exp, &sig, now));
        assert!(verify_download(
            SECRET,
            "app.dmg",
            exp,
            &sig.to_uppercase(),
            now
        ));
        assert!(!verify_download(SECRET, "app.exe", exp, &sig, now));
        assert!(!verify_download(SECRET, "app.dmg", exp + 1, &sig, now));
        assert!(!verify_download(SECRET, "app.dmg", exp, &sig[2..], now));
        assert!(!verify_download(SECRET, "app.dmg", exp, "zz", now));
        let expired = DateTime::from_timestamp(exp, 0).unwrap_or_default();
        assert!(!verify_download(SECRET, "app.dmg", exp, &sig, expired));
    }

    #[test]
    fn webhook_signature_over_raw_bytes() {
        let body = br#"{"meta":{"event_name":"order_created"}}"#;
        let sig = webhook_signature(SECRET, body);
        assert!(verify_webhook(SECRET, body, &sig));
        assert!(!verify_webhook(SECRET, b"{ }", &sig));
        assert!(!verify_webhook(SECRET, body, ""));
    }

    #[test]
    fn sparkle_feed_tokens() {
        let token = sparkle_feed_token(SECRET, "lic-1");
        assert_eq!(token.len(), 43);
        assert!(verify_sparkle_feed(SECRET, "lic-1", &token));
        assert!(!verify_sparkle_feed(SECRET, "lic-2", &token));
        assert!(!verify_sparkle_feed(
            b"another secret of thirty-two bytes",
            "lic-1",
            &token
        ));
        assert!(!verify_sparkle_feed(SECRET, "lic-1", "not base64 !"));
    }

    #[test]
    fn hex_round_trip() {
        assert_eq!(to_hex(&[0, 15, 255]), "000fff");
        assert_eq!(from_hex("000fFF"), Some(vec![0, 15, 255]));
        assert_eq!(from_hex("0"), None);
        assert_eq!(from_hex("g0"), None);
    }
}
