//! Random identifiers and tokens: alphanumeric, from the operating system's CSPRNG.

use rand::Rng;
use rand::distr::Alphanumeric;

pub use pg_store::ids::{SessionId, UserId};

/// `len` random letters and digits (62 symbols: 32 of them carry about 190 bits).
pub fn random_alphanumeric(len: usize) -> String {
    rand::rng()
        .sample_iter(&Alphanumeric)
        .take(len)
        .map(char::from)
        .collect()
}

/// A session token: 32 random alphanumerics, as the better-auth client expects.
pub fn session_token() -> String {
    random_alphanumeric(32)
}

/// An opaque row id.
pub fn id() -> String {
    random_alphanumeric(32)
}
