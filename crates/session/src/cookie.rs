//! The signed session cookie, byte-compatible with better-auth:
//! `value = urlencode(token + "." + base64(HMAC-SHA256(AUTH_SECRET, token)))`.
//!
//! Verification recomputes the MAC and compares in constant time; anything that does not verify
//! is treated as no cookie at all.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use sha2::Sha256;

use crate::settings::AuthSettings;

type HmacSha256 = Hmac<Sha256>;

/// Seconds a remembered session cookie lives: the session lifetime, 7 days.
pub const MAX_AGE_SECS: i64 = 7 * 24 * 3600;

fn mac(secret: &str) -> HmacSha256 {
    // HMAC accepts keys of any length.
    HmacSha256::new_from_slice(secret.as_bytes()).expect("HMAC accepts keys of any length")
}

/// `token.signature`, before URL encoding.
pub fn sign(secret: &str, token: &str) -> String {
    let mut m = mac(secret);
    m.update(token.as_bytes());
    format!("{token}.{}", STANDARD.encode(m.finalize().into_bytes()))
}

/// The token inside a signed value, if the signature is valid.
pub fn verify(secret: &str, signed: &str) -> Option<String> {
    let (token, signature) = signed.rsplit_once('.')?;
    if token.is_empty() {
        return None;
    }
    let signature = STANDARD.decode(signature).ok()?;
    let mut m = mac(secret);
    m.update(token.as_bytes());
    m.verify_slice(&signature).ok()?;
    Some(token.to_owned())
}

/// The value of cookie `name` in a `Cookie` request header, percent-decoded.
pub fn find<'a>(header: &'a str, name: &str) -> Option<String> {
    header
        .split(';')
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v): (&'a str, &'a str)| percent_decode(v.trim_matches('"')))
}

/// The session token carried by a `Cookie` header, if present and correctly signed.
pub fn token_from_header(settings: &AuthSettings, header: &str) -> Option<String> {
    let value = find(header, &settings.session_cookie_name())?;
    verify(settings.secret.expose(), &value)
}

/// `Set-Cookie` value for a new or refreshed session. `remember: false` makes a browser-session
/// cookie (no `Max-Age`).
pub fn set_session(settings: &AuthSettings, token: &str, remember: bool) -> String {
    let value = percent_encode(&sign(settings.secret.expose(), token));
    let max_age = if remember {
        format!("; Max-Age={MAX_AGE_SECS}")
    } else {
        String::new()
    };
    format!(
        "{}={value}{max_age}; Path=/; HttpOnly; SameSite=Lax{}",
        settings.session_cookie_name(),
        secure(settings)
    )
}

/// `Set-Cookie` value that removes the session cookie.
pub fn clear_session(settings: &AuthSettings) -> String {
    clear(settings, &settings.session_cookie_name())
}

/// `Set-Cookie` removing cookie `name`.
pub fn clear(settings: &AuthSettings, name: &str) -> String {
    format!(
        "{name}=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax{}",
        secure(settings)
    )
}

/// `Set-Cookie` for a short-lived signed helper cookie (OAuth state), under the product prefix.
pub fn set_signed(settings: &AuthSettings, name: &str, value: &str, max_age_secs: i64) -> String {
    let signed = percent_encode(&sign(settings.secret.expose(), value));
    format!(
        "{name}={signed}; Max-Age={max_age_secs}; Path=/; HttpOnly; SameSite=Lax{}",
        secure(settings)
    )
}

/// The verified value of a helper cookie set by [`set_signed`].
pub fn get_signed(settings: &AuthSettings, header: &str, name: &str) -> Option<String> {
    verify(settings.secret.expose(), &find(header, name)?)
}

/// A helper cookie's full name: `__Secure-` on https, then the product prefix.
pub fn cookie_name(settings: &AuthSettings, suffix: &str) -> String {
    let secure = if settings.is_https() { "__Secure-" } else { "" };
    format!("{secure}{}.{suffix}", crate::settings::COOKIE_PREFIX)
}

fn secure(settings: &AuthSettings) -> &'static str {
    if settings.is_https() { "; Secure" } else { "" }
}

/// What `encodeURIComponent` escapes: everything but `A-Z a-z 0-9 - _ . ! ~ * ' ( )`.
const URI_COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'!')
    .remove(b'~')
    .remove(b'*')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')');

/// `encodeURIComponent`, as better-auth writes the cookie's value.
pub fn percent_encode(s: &str) -> String {
    utf8_percent_encode(s, URI_COMPONENT).to_string()
}

/// `%XX` to its byte; a malformed escape stays as it is.
fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use service_kit::Env;

    const SECRET: &str = "better-auth-secret-0123456789abcdef";

    fn settings(base: &str) -> AuthSettings {
        AuthSettings::from_env(&Env::from_pairs([
            ("AUTH_SECRET", SECRET),
            ("AUTH_BASE_URL", base),
        ]))
        .expect("valid")
    }

    #[test]
    fn signature_is_base64_hmac_sha256() {
        let signed = sign(SECRET, "abc");
        let (token, sig) = signed.split_once('.').expect("dot");
        assert_eq!(token, "abc");
        // 32 bytes in padded standard base64, as better-auth writes it.
        assert_eq!(sig.len(), 44);
        assert!(sig.ends_with('='));
        assert_eq!(verify(SECRET, &signed).as_deref(), Some("abc"));
    }

    #[test]
    fn tampering_fails() {
        let signed = sign(SECRET, "abcdefghijklmnopqrstuvwxyz012345");
        let other_token = signed.replacen('a', "b", 1);
        assert_eq!(verify(SECRET, &other_token), None);
        let (token, sig) = signed.split_once('.').expect("dot");
        let mut sig_bytes = STANDARD.decode(sig).expect("base64");
        sig_bytes[0] ^= 1;
        let bad_sig = format!("{token}.{}", STANDARD.encode(sig_bytes));
        assert_eq!(verify(SECRET, &bad_sig), None);
        assert_eq!(verify("another-secret-of-enough-length-000", &signed), None);
        assert_eq!(verify(SECRET, "no-dot"), None);
        assert_eq!(verify(SECRET, ".sig"), None);
        assert_eq!(verify(SECRET, "tok.%%%"), None);
    }

    #[test]
    fn header_round_trip_with_url_encoding() {
        let s = settings("http://localhost:8080");
        let set = set_session(&s, "tok123", true);
        assert!(set.starts_with("digiuno.session_token=tok123."));
        assert!(
            set.contains("%3D"),
            "the base64 padding is URL-encoded: {set}"
        );
        assert!(set.contains("; Max-Age=604800; Path=/; HttpOnly; SameSite=Lax"));
        assert!(!set.contains("Secure"));
        let value = set.split(';').next().expect("pair");
        let header = format!("other=1; {value}; last=2");
        assert_eq!(token_from_header(&s, &header).as_deref(), Some("tok123"));
    }

    #[test]
    fn https_adds_prefix_and_secure() {
        let s = settings("https://app.example.com");
        let set = set_session(&s, "t", false);
        assert!(set.starts_with("__Secure-digiuno.session_token="));
        assert!(set.ends_with("; Secure"));
        assert!(!set.contains("Max-Age"));
        assert!(clear_session(&s).contains("Max-Age=0"));
    }

    #[test]
    fn percent_encoding_matches_encode_uri_component() {
        assert_eq!(percent_encode("a+b/c=d.e_f~"), "a%2Bb%2Fc%3Dd.e_f~");
        assert_eq!(percent_decode("a%2Bb%2Fc%3D%zz%"), "a+b/c=%zz%");
    }
}
