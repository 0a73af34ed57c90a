//! Password hashing: argon2id with OWASP's parameters (19 MiB, 2 passes, 1 lane), stored as PHC
//! strings so that parameters can be raised later without invalidating existing hashes.
//!
//! Accounts imported from a better-auth database keep its scrypt hash (`saltHex:keyHex`) until
//! their owner's next successful sign-in, which replaces it with argon2id ([`is_current`]).

use argon2::{Algorithm, Argon2, Params, PasswordHasher, PasswordVerifier, Version};
use subtle::ConstantTimeEq;
use unicode_normalization::UnicodeNormalization;

pub const MIN_LENGTH: usize = 8;
pub const MAX_LENGTH: usize = 128;

fn hasher() -> Argon2<'static> {
    let params = Params::new(19 * 1024, 2, 1, None).unwrap_or_default();
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// A PHC string for `password`, with a fresh random salt.
pub fn hash(password: &str) -> Result<String, String> {
    hasher()
        .hash_password(password.as_bytes())
        .map(|h| h.to_string())
        .map_err(|e| e.to_string())
}

/// Whether `password` matches `stored`: an argon2 PHC string, or a better-auth scrypt hash. A
/// malformed stored hash never matches.
pub fn verify(password: &str, stored: &str) -> bool {
    if stored.starts_with('$') {
        return hasher()
            .verify_password(password.as_bytes(), stored)
            .is_ok();
    }
    verify_better_auth_scrypt(password, stored)
}

/// Whether `stored` is the hash this service writes today; any other is replaced at the next
/// successful sign-in.
pub fn is_current(stored: &str) -> bool {
    stored.starts_with("$argon2id$")
}

/// better-auth 1.x (`@better-auth/utils/password`): `saltHex:keyHex`, the key being scrypt with
/// N = 16384, r = 16, p = 1 and 64 bytes over the NFKC form of the password. The salt is the
/// hex *text* itself (its ASCII bytes), not the bytes it encodes.
fn verify_better_auth_scrypt(password: &str, stored: &str) -> bool {
    let Some((salt, key_hex)) = stored.split_once(':') else {
        return false;
    };
    if salt.is_empty() || key_hex.len() != 128 {
        return false;
    }
    let Some(expected) = decode_hex(key_hex) else {
        return false;
    };
    let Ok(params) = scrypt::Params::new(14, 16, 1, 64) else {
        return false;
    };
    let normalised: String = password.nfkc().collect();
    let mut derived = [0u8; 64];
    if scrypt::scrypt(
        normalised.as_bytes(),
        salt.as_bytes(),
        &params,
        &mut derived,
    )
    .is_err()
    {
        return false;
    }
    derived.ct_eq(expected.as_slice()).into()
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

/// A hash of a random password, verified against when the e-mail address is unknown, so that
/// an unknown address costs as much time as a wrong password and cannot be told apart.
pub fn decoy() -> String {
    hash(&session::ids::random_alphanumeric(24)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argon2id_phc_round_trip() {
        let phc = hash("correct horse battery").expect("hash");
        assert!(phc.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{phc}");
        assert!(verify("correct horse battery", &phc));
        assert!(!verify("correct horse batterY", &phc));
        assert!(!verify("anything", "not a phc string"));
        assert_ne!(phc, hash("correct horse battery").expect("hash"), "salted");
        assert!(is_current(&phc));
    }

    /// Vectors from Node's `crypto.scrypt`, the function better-auth calls.
    #[test]
    fn better_auth_scrypt_hashes_verify() {
        let salt = "0123456789abcdef0123456789abcdef";
        let umlauts = format!(
            "{salt}:9a6c243491aab229db407df28ad4abf11637c042c9802699411f49f248a3d6170901b91273005277985f701f0276516d63b8f6ff7200392161627cab393b24ce"
        );
        assert!(verify("Pässwörd-123", &umlauts));
        assert!(!verify("Passwörd-123", &umlauts));
        assert!(!is_current(&umlauts));
        // "\u{fb01}" (the fi ligature) is "fi" in NFKC, as better-auth normalises.
        let ligature = format!(
            "{salt}:248bca41498ed9946b0bcc0469418910d6d470c24203925ca9a5c803d42715c964c1b04ec52380f9c3fe7371cb3833fbc47933f8a85d5dc5dde53953d07d48b8"
        );
        assert!(verify("\u{fb01}le-password", &ligature));
        assert!(verify("file-password", &ligature));
    }

    #[test]
    fn malformed_scrypt_hashes_never_match() {
        for stored in [
            "",
            ":",
            "abcd:",
            ":00",
            "abcd:zz",
            &format!("abcd:{}", "0".repeat(127)),
            &format!("abcd:{}", "g".repeat(128)),
        ] {
            assert!(!verify("password-123", stored), "{stored}");
            assert!(!is_current(stored));
        }
    }
}
