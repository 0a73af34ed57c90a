//! Values derived from `AUTH_SECRET` with HMAC-SHA256, one sub-key per purpose, so that none of
//! them can be turned into another (a session handle is never a valid cookie signature).

use aes_gcm::aead::{Aead, AeadCore, KeyInit as _, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

fn mac(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut m = <HmacSha256 as Mac>::new_from_slice(key).expect("HMAC accepts keys of any length");
    m.update(data);
    m.finalize().into_bytes().into()
}

/// The sub-key of `secret` for `purpose`.
fn derive(secret: &str, purpose: &str) -> [u8; 32] {
    mac(
        secret.as_bytes(),
        format!("digiuno/{purpose}/v1").as_bytes(),
    )
}

/// The opaque handle of a session in `list-sessions`, accepted by `revoke-session`. Stable for a
/// session, useless as a cookie, and not reversible to the session's id or token.
pub fn session_handle(secret: &str, session_id: &str) -> String {
    URL_SAFE_NO_PAD.encode(mac(
        &derive(secret, "session-handle"),
        session_id.as_bytes(),
    ))
}

/// The stored key of a rate-limit counter: the route in clear (for operators), the client
/// address or e-mail address only as a keyed hash, so that the table names no one.
pub fn rate_limit_key(secret: &str, route: &str, kind: &str, value: &str) -> String {
    let digest = mac(
        &derive(secret, "rate-limit"),
        format!("{route}\n{kind}\n{value}").as_bytes(),
    );
    format!("{route}:{kind}:{}", URL_SAFE_NO_PAD.encode(digest))
}

/// A fresh single-use token for an e-mailed link: 256 random bits, URL-safe.
pub fn link_token() -> String {
    let bytes: [u8; 32] = rand::random();
    URL_SAFE_NO_PAD.encode(bytes)
}

/// How a link token is stored: its SHA-256, so that a copy of the table opens no account. A
/// 256-bit random token needs no slow hash.
pub fn token_digest(token: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes()))
}

/// How an e-mailed code is stored: keyed with a sub-key of `AUTH_SECRET` and bound to what it
/// was issued for (its identifier), because a plain hash of one of a million codes is reversed
/// by trying them all.
pub fn code_digest(secret: &str, identifier: &str, code: &str) -> String {
    URL_SAFE_NO_PAD.encode(mac(
        &derive(secret, "email-code"),
        format!("{identifier}\n{code}").as_bytes(),
    ))
}

/// How a backup code is stored: keyed and bound to its user, like an e-mailed code, so that a
/// copy of the table gives away none of the codes.
pub fn backup_code_digest(secret: &str, user_id: &str, code: &str) -> String {
    URL_SAFE_NO_PAD.encode(mac(
        &derive(secret, "backup-code"),
        format!("{user_id}\n{code}").as_bytes(),
    ))
}

/// The cipher that seals the two-factor secrets, keyed by a sub-key of `AUTH_SECRET`.
fn two_factor_cipher(secret: &str) -> Aes256Gcm {
    Aes256Gcm::new(&derive(secret, "two-factor-secret").into())
}

/// `plain` sealed with AES-256-GCM under a fresh nonce: base64url(nonce ‖ ciphertext), bound
/// to `owner` (the user id) so that a sealed value moved to another row does not open.
pub fn seal(secret: &str, owner: &str, plain: &str) -> String {
    let nonce = Aes256Gcm::generate_nonce(&mut aes_gcm::aead::OsRng);
    let payload = Payload {
        msg: plain.as_bytes(),
        aad: owner.as_bytes(),
    };
    let sealed = two_factor_cipher(secret)
        .encrypt(&nonce, payload)
        .expect("AES-GCM encrypts any message of this size");
    let mut out = nonce.to_vec();
    out.extend_from_slice(&sealed);
    URL_SAFE_NO_PAD.encode(out)
}

/// What [`seal`] sealed for `owner`; `None` when it was sealed under another key, for another
/// owner, or altered.
pub fn open(secret: &str, owner: &str, sealed: &str) -> Option<String> {
    let bytes = URL_SAFE_NO_PAD.decode(sealed).ok()?;
    if bytes.len() < 12 {
        return None;
    }
    let (nonce, ciphertext) = bytes.split_at(12);
    let nonce: [u8; 12] = nonce.try_into().ok()?;
    let payload = Payload {
        msg: ciphertext,
        aad: owner.as_bytes(),
    };
    let plain = two_factor_cipher(secret)
        .decrypt(&Nonce::from(nonce), payload)
        .ok()?;
    String::from_utf8(plain).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn derived_values_are_stable_and_separate() {
        let h = session_handle(SECRET, "abc");
        assert_eq!(h, session_handle(SECRET, "abc"));
        assert_eq!(h.len(), 43);
        assert_ne!(h, session_handle(SECRET, "abd"));
        assert_ne!(h, session_handle("another-secret-0123456789abcdef0", "abc"));
        let k = rate_limit_key(SECRET, "sign-in", "email", "a@b.co");
        assert!(k.starts_with("sign-in:email:"), "{k}");
        assert!(!k.contains("a@b.co"));
        assert_ne!(k, rate_limit_key(SECRET, "sign-up", "email", "a@b.co"));
        let t = link_token();
        assert_eq!(t.len(), 43);
        assert_ne!(t, link_token());
        assert_ne!(token_digest(&t), t);
        let c = code_digest(SECRET, "sign-in-otp-a@b.co", "123456");
        assert_eq!(c, code_digest(SECRET, "sign-in-otp-a@b.co", "123456"));
        assert_ne!(c, code_digest(SECRET, "sign-in-otp-b@b.co", "123456"));
        assert!(!c.contains("123456"));
    }

    #[test]
    fn sealed_secrets_open_only_with_their_key_and_owner() {
        let sealed = seal(SECRET, "user-1", "JBSWY3DPEHPK3PXP");
        assert_ne!(
            sealed,
            seal(SECRET, "user-1", "JBSWY3DPEHPK3PXP"),
            "a fresh nonce each time"
        );
        assert!(!sealed.contains("JBSWY3DPEHPK3PXP"));
        assert_eq!(
            open(SECRET, "user-1", &sealed).as_deref(),
            Some("JBSWY3DPEHPK3PXP")
        );
        assert_eq!(open(SECRET, "user-2", &sealed), None);
        assert_eq!(
            open("another-secret-0123456789abcdef0", "user-1", &sealed),
            None
        );
        let mut altered = sealed.clone().into_bytes();
        altered[20] = if altered[20] == b'A' { b'B' } else { b'A' };
        assert_eq!(
            open(SECRET, "user-1", &String::from_utf8(altered).unwrap()),
            None
        );
        assert_eq!(open(SECRET, "user-1", "short"), None);
    }
}
