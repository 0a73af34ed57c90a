//! E-mailed codes (better-auth's `emailOTP` plugin): six digits, valid five minutes, single use,
//! and void after three wrong tries, even when the fourth is right.
//!
//! A code lives in `auth.verification` under `<kind>-otp-<email>`, as better-auth keeps it, but
//! its value is `<keyed digest>:<wrong tries>` rather than the code in clear. A new code for the
//! same address and kind replaces the old one.

use chrono::{DateTime, Duration, Utc};
use serde::Deserialize;
use subtle::ConstantTimeEq;

use crate::error::ApiError;
use crate::keys;
use crate::repo::{Db, QueryResult, Tx, verification};

/// How long a code works.
pub const LIFETIME: Duration = Duration::minutes(5);
/// Wrong tries a code survives; the next try voids it.
pub const ATTEMPTS: u32 = 3;
/// Digits of a code.
pub const LENGTH: usize = 6;

/// What a code is for, as the client names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    SignIn,
    EmailVerification,
    ForgetPassword,
    /// A move to a new address, under `<userId>:<new address>`; requested by its own route, so
    /// never a `type` a client may name.
    #[serde(skip_deserializing)]
    ChangeEmail,
    /// The second factor of a sign-in (better-auth's two-factor OTP: 3 minutes, 5 tries), under
    /// the sign-in's challenge or `<userId>!<sessionId>`; sent by its own route.
    #[serde(skip_deserializing)]
    TwoFactor,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Self::SignIn => "sign-in",
            Self::EmailVerification => "email-verification",
            Self::ForgetPassword => "forget-password",
            Self::ChangeEmail => "change-email",
            Self::TwoFactor => "two-factor",
        }
    }

    /// How long a code works.
    pub fn lifetime(self) -> Duration {
        match self {
            Self::TwoFactor => Duration::minutes(3),
            _ => LIFETIME,
        }
    }

    /// Wrong tries a code survives.
    fn attempts(self) -> u32 {
        match self {
            Self::TwoFactor => 5,
            _ => ATTEMPTS,
        }
    }
}

/// Why a code was not accepted; each is better-auth's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// No code: never sent, used already, or voided.
    Missing,
    /// A wrong code (counted).
    Invalid,
    Expired,
    /// The tries were used up: the code is void now.
    TooManyAttempts,
}

impl From<Refused> for ApiError {
    fn from(refused: Refused) -> Self {
        match refused {
            Refused::Missing | Refused::Invalid => ApiError::bad("INVALID_OTP"),
            Refused::Expired => ApiError::bad("OTP_EXPIRED"),
            Refused::TooManyAttempts => ApiError::Forbidden("TOO_MANY_ATTEMPTS"),
        }
    }
}

/// What to do with a right code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnSuccess {
    /// Use it up (signing in, verifying, resetting).
    Spend,
    /// Leave it for the step that uses it (`check-verification-otp`).
    Keep,
}

fn identifier(kind: Kind, email: &str) -> String {
    format!("{}-otp-{email}", kind.as_str())
}

fn stored(secret: &str, identifier: &str, code: &str, wrong: u32) -> String {
    format!("{}:{wrong}", keys::code_digest(secret, identifier, code))
}

/// A fresh code: six uniformly random digits.
pub fn new_code() -> String {
    format!("{:06}", rand::random_range(0..1_000_000u32))
}

/// Stores a new code for `email` and `kind`, voiding the one before; answers the code, the only
/// copy in clear.
pub fn issue(
    conn: &mut Tx,
    secret: &str,
    kind: Kind,
    email: &str,
    now: DateTime<Utc>,
) -> QueryResult<String> {
    let id = identifier(kind, email);
    let code = new_code();
    verification::delete_all(conn, &id)?;
    verification::insert(
        conn,
        &id,
        &stored(secret, &id, &code, 0),
        now + kind.lifetime(),
        now,
    )?;
    Ok(code)
}

/// Voids the code of `email` and `kind`: the link mailed with it was used instead.
pub fn void(conn: &mut Tx, kind: Kind, email: &str) -> QueryResult<()> {
    verification::delete_all(conn, &identifier(kind, email))?;
    Ok(())
}

/// Checks `code` against the code of `email` and `kind`. The row is taken first, so that of
/// parallel tries only one is weighed and counted: the others find no code and are refused.
/// The count is kept only when the caller's transaction commits: [`Codes::verify`] runs it in
/// one of its own.
pub fn check(
    conn: &mut Tx,
    secret: &str,
    kind: Kind,
    email: &str,
    code: &str,
    on_success: OnSuccess,
    now: DateTime<Utc>,
) -> QueryResult<Result<(), Refused>> {
    let id = identifier(kind, email);
    let Some((value, expires_at)) = verification::take_newest(conn, &id)? else {
        return Ok(Err(Refused::Missing));
    };
    if expires_at <= now {
        return Ok(Err(Refused::Expired));
    }
    let (digest, wrong) = value.rsplit_once(':').unwrap_or((value.as_str(), ""));
    let wrong: u32 = wrong.parse().unwrap_or(kind.attempts());
    if wrong >= kind.attempts() {
        return Ok(Err(Refused::TooManyAttempts));
    }
    // A code of another shape is never looked at, but is still a try.
    let right = code.len() == LENGTH
        && bool::from(
            keys::code_digest(secret, &id, code)
                .as_bytes()
                .ct_eq(digest.as_bytes()),
        );
    if !right {
        let counted = format!("{digest}:{}", wrong + 1);
        verification::insert(conn, &id, &counted, expires_at, now)?;
        return Ok(Err(Refused::Invalid));
    }
    if on_success == OnSuccess::Keep {
        verification::insert(conn, &id, &value, expires_at, now)?;
    }
    Ok(Ok(()))
}

/// The codes of this service: [`check`] over its database, with its secret.
pub struct Codes<'a> {
    pub db: &'a Db,
    pub secret: &'a str,
}

impl Codes<'_> {
    /// [`check`] in a transaction of its own, committed whatever the outcome, so that a wrong
    /// try stays counted; a refusal is the route's error. A right code spent here stays spent
    /// if what it allows then fails, as in better-auth: the person asks for a new one.
    pub async fn verify(
        &self,
        kind: Kind,
        email: &str,
        code: &str,
        on_success: OnSuccess,
    ) -> Result<(), ApiError> {
        let (secret, email, code) = (self.secret.to_owned(), email.to_owned(), code.to_owned());
        self.db
            .write(move |conn| {
                let now = Utc::now();
                Ok::<_, ApiError>(check(conn, &secret, kind, &email, &code, on_success, now)?)
            })
            .await?
            .map_err(ApiError::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_six_digits() {
        for _ in 0..1000 {
            let c = new_code();
            assert_eq!(c.len(), LENGTH);
            assert!(c.bytes().all(|b| b.is_ascii_digit()), "{c}");
        }
    }

    #[test]
    fn kinds_read_as_the_client_writes_them() {
        let k: Kind = serde_json::from_str("\"forget-password\"").unwrap();
        assert_eq!(k, Kind::ForgetPassword);
        assert!(serde_json::from_str::<Kind>("\"change-email\"").is_err());
        assert_eq!(
            identifier(Kind::ChangeEmail, "u1:new@b.co"),
            "change-email-otp-u1:new@b.co"
        );
        assert_eq!(identifier(Kind::SignIn, "a@b.co"), "sign-in-otp-a@b.co");
    }
}
