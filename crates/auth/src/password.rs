//! Password hashing: argon2id with OWASP's parameters (19 MiB, 2 passes, 1 lane), stored as PHC
//! strings so that parameters can be raised later without invalidating existing hashes.

use argon2::{Algorithm, Argon2, Params, PasswordHasher, PasswordVerifier, Version};

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

/// Whether `password` matches `phc`. A malformed stored hash never matches.
pub fn verify(password: &str, phc: &str) -> bool {
    hasher().verify_password(password.as_bytes(), phc).is_ok()
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
    }
}
