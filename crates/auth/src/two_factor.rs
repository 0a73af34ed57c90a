//! Two-factor sign-in, as better-auth's `twoFactor` plugin does it: an authenticator app's
//! time-based codes (RFC 6238: SHA-1, 6 digits, 30 s, one step of drift either way) and ten
//! single-use backup codes.
//!
//! - The secret is 32 characters of `[A-Za-z0-9_-]` whose UTF-8 bytes are the HMAC key, as
//!   better-auth makes it; it is stored sealed ([`keys::seal`]), the backup codes as keyed
//!   digests ([`keys::backup_code_digest`]).
//! - A sign-in with the password of a user with two-factor on opens no session: it leaves a
//!   challenge (a row `2fa-<digest of its id>` in `auth.verification`, 10 minutes) and the signed
//!   cookie `two_factor` carrying its id. A right code then opens the session.
//! - A challenge takes 5 codes; the 6th try voids it. Ten wrong codes in a row, over any number
//!   of challenges, lock the account's sign-in verifications for 15 minutes.
//! - "Trust this device" leaves a signed cookie `trust_device` (30 days) backed by a row
//!   `trust-device-<digest of its id>`; a sign-in that shows it skips the code and renews it.

use chrono::{DateTime, Duration, Utc};
use rand::Rng;
use rand::distr::Alphanumeric;
use session::{User, UserId};
use subtle::ConstantTimeEq;
use totp_rs::{Algorithm, TOTP};

use crate::error::ApiError;
use crate::keys;
use crate::otp;
use crate::repo::{QueryResult, Tx, two_factor, users, verification};

/// The issuer an authenticator app shows beside the account.
pub const ISSUER: &str = "Digiuno";
/// Backup codes made at a time.
pub const BACKUP_CODES: usize = 10;
/// How long a sign-in challenge waits for its code.
pub const CHALLENGE_LIFETIME: Duration = Duration::minutes(10);
/// Codes one challenge takes; the next try voids it.
pub const CHALLENGE_ATTEMPTS: u32 = 5;
/// Wrong codes in a row that lock the account's sign-in verifications...
pub const LOCKOUT_FAILURES: i32 = 10;
/// ...for this long.
pub const LOCKOUT: Duration = Duration::minutes(15);
/// How long a trusted device skips the code.
pub const TRUST_LIFETIME: Duration = Duration::days(30);
/// The cookie of a pending sign-in (suffix of the product's cookie prefix).
pub const CHALLENGE_COOKIE: &str = "two_factor";
/// The cookie of a trusted device.
pub const TRUST_COOKIE: &str = "trust_device";

const SECRET_ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// A fresh secret: 32 characters, 192 bits.
pub fn new_secret() -> String {
    let mut rng = rand::rng();
    (0..32)
        .map(|_| char::from(SECRET_ALPHABET[rng.random_range(0..SECRET_ALPHABET.len())]))
        .collect()
}

fn totp(secret: &str, account: &str) -> TOTP {
    // `new_unchecked`: the key length is ours (32 bytes), and an address is a fine label even
    // where totp-rs's label check would refuse it.
    TOTP::new_unchecked(
        Algorithm::SHA1,
        6,
        1,
        30,
        secret.as_bytes().to_vec(),
        Some(ISSUER.to_owned()),
        account.to_owned(),
    )
}

/// The `otpauth://` URI an authenticator app reads (as a QR code) for `secret`.
pub fn uri(secret: &str, email: &str) -> String {
    totp(secret, email).get_url()
}

/// Whether `code` is the code of `secret` now, a step before or a step after.
pub fn code_is_current(secret: &str, code: &str, now: DateTime<Utc>) -> bool {
    let Ok(time) = u64::try_from(now.timestamp()) else {
        return false;
    };
    code.len() == 6 && totp(secret, "").check(code, time)
}

/// Fresh backup codes, `xxxxx-xxxxx` of letters and digits: the only copy in clear, shown once.
pub fn new_backup_codes() -> Vec<String> {
    (0..BACKUP_CODES)
        .map(|_| {
            let raw: String = rand::rng()
                .sample_iter(&Alphanumeric)
                .take(10)
                .map(char::from)
                .collect();
            format!("{}-{}", &raw[..5], &raw[5..])
        })
        .collect()
}

/// Stores a new, not yet verified secret and backup codes for `user`, replacing an unverified
/// set; answers the URI and the codes in clear.
pub fn begin(conn: &mut Tx, key: &str, user: &User, now: DateTime<Utc>) -> QueryResult<Setup> {
    let secret = new_secret();
    let codes = new_backup_codes();
    let digests = digests(key, &user.id, &codes);
    two_factor::replace_unverified(
        conn,
        &user.id,
        &keys::seal(key, user.id.as_str(), &secret),
        &digests,
        now,
    )?;
    Ok(Setup {
        totp_uri: uri(&secret, &user.email),
        backup_codes: codes,
    })
}

/// A new secret's URI and backup codes, as `enable` answers them.
pub struct Setup {
    pub totp_uri: String,
    pub backup_codes: Vec<String>,
}

fn digests(key: &str, user_id: &UserId, codes: &[String]) -> Vec<String> {
    codes
        .iter()
        .map(|c| keys::backup_code_digest(key, user_id.as_str(), c))
        .collect()
}

/// Replaces the backup codes of `user_id`; answers them in clear.
pub fn renew_backup_codes(conn: &mut Tx, key: &str, user_id: &UserId) -> QueryResult<Vec<String>> {
    let codes = new_backup_codes();
    two_factor::set_backup_codes(conn, user_id, &digests(key, user_id, &codes))?;
    Ok(codes)
}

/// The secret of `user_id` in clear, if two-factor was begun.
pub fn secret_of(conn: &mut Tx, key: &str, user_id: &UserId) -> Result<Option<String>, ApiError> {
    let Some(row) = two_factor::find(conn, user_id)? else {
        return Ok(None);
    };
    keys::open(key, user_id.as_str(), &row.secret)
        .map(Some)
        .ok_or_else(|| ApiError::internal("a two-factor secret does not open with AUTH_SECRET"))
}

/// What a person offers as the second factor.
#[derive(Debug, Clone)]
pub enum Proof {
    Totp(String),
    Backup(String),
    /// A code mailed by `send-otp`.
    Otp(String),
}

impl Proof {
    fn wrong(&self) -> ApiError {
        match self {
            Self::Totp(_) | Self::Otp(_) => ApiError::Unauthorized("INVALID_CODE"),
            Self::Backup(_) => ApiError::Unauthorized("INVALID_BACKUP_CODE"),
        }
    }
}

/// What a mailed code of a sign-in is stored under: its challenge.
pub fn challenge_subject(challenge_id: &str) -> String {
    challenge_identifier(challenge_id)
}

/// What a mailed code asked for while signed in is stored under: the session.
pub fn session_subject(user_id: &UserId, session_id: &str) -> String {
    format!("{}!{session_id}", user_id.as_str())
}

/// The user a live sign-in challenge is for.
pub fn challenge_user(
    conn: &mut Tx,
    challenge_id: &str,
    now: DateTime<Utc>,
) -> QueryResult<Option<UserId>> {
    let value = verification::find_live(conn, &challenge_identifier(challenge_id), now)?;
    Ok(value.as_deref().and_then(Pending::parse).map(|p| p.user_id))
}

/// The ways `user_id` can give a second factor: `totp` once an app is set up, `otp` when mail
/// can be sent.
pub fn methods(conn: &mut Tx, user_id: &UserId, mail: bool) -> QueryResult<Vec<&'static str>> {
    let mut methods = Vec::new();
    if two_factor::find(conn, user_id)?.is_some_and(|row| row.verified) {
        methods.push("totp");
    }
    if mail {
        methods.push("otp");
    }
    Ok(methods)
}

/// Checks a mailed code, spending it when right; better-auth's answers for each refusal.
fn weigh_mailed(
    conn: &mut Tx,
    key: &str,
    subject: &str,
    code: &str,
    now: DateTime<Utc>,
) -> Result<Result<(), ApiError>, ApiError> {
    let checked = otp::check(
        conn,
        key,
        otp::Kind::TwoFactor,
        subject,
        code,
        otp::OnSuccess::Spend,
        now,
    )?;
    Ok(checked.map_err(|refused| match refused {
        otp::Refused::Missing | otp::Refused::Expired => ApiError::bad("OTP_HAS_EXPIRED"),
        otp::Refused::Invalid => ApiError::Unauthorized("INVALID_CODE"),
        otp::Refused::TooManyAttempts => ApiError::bad("TOO_MANY_ATTEMPTS_REQUEST_NEW_CODE"),
    }))
}

/// Checks `proof` against the two-factor row of `user_id` (locked for the transaction), spending
/// a right backup code, or against the code mailed for `subject`. When right, answers whether
/// the row weighed was verified (`None` for a mailed code). `Ok(Err(_))` is a refusal the
/// caller's transaction must still commit.
fn weigh(
    conn: &mut Tx,
    key: &str,
    user_id: &UserId,
    proof: &Proof,
    subject: &str,
    now: DateTime<Utc>,
) -> Result<Result<Option<bool>, ApiError>, ApiError> {
    let row = two_factor::find_for_update(conn, user_id)?;
    let row = match (proof, row) {
        (Proof::Totp(_), Some(row)) if row.verified || !users::two_factor_on(conn, user_id)? => row,
        (Proof::Totp(_), _) => return Ok(Err(ApiError::bad("TOTP_NOT_ENABLED"))),
        (Proof::Backup(_), Some(row)) => row,
        (Proof::Backup(_), None) => return Ok(Err(ApiError::bad("BACKUP_CODES_NOT_ENABLED"))),
        (Proof::Otp(code), _) => {
            return Ok(weigh_mailed(conn, key, subject, code, now)?.map(|()| None));
        }
    };
    let right = match proof {
        Proof::Totp(code) => {
            let secret = keys::open(key, user_id.as_str(), &row.secret).ok_or_else(|| {
                ApiError::internal("a two-factor secret does not open with AUTH_SECRET")
            })?;
            code_is_current(&secret, code, now)
        }
        Proof::Backup(code) => {
            let digest = keys::backup_code_digest(key, user_id.as_str(), code);
            let left: Vec<String> = row
                .backup_codes
                .iter()
                .filter(|d| !bool::from(d.as_bytes().ct_eq(digest.as_bytes())))
                .cloned()
                .collect();
            let found = left.len() < row.backup_codes.len();
            if found {
                two_factor::set_backup_codes(conn, user_id, &left)?;
            }
            found
        }
        // Weighed against the mailed code above.
        Proof::Otp(_) => false,
    };
    Ok(if right {
        Ok(Some(row.verified))
    } else {
        Err(proof.wrong())
    })
}

/// A second factor offered by someone signed in (setting up, or spending a backup code), in
/// the session `session_id`: `Ok(Ok(first))` when right, `first` true when it turned two-factor
/// on (for an app's code, the app is set up now).
pub fn verify_signed_in(
    conn: &mut Tx,
    key: &str,
    user_id: &UserId,
    session_id: &str,
    proof: &Proof,
    now: DateTime<Utc>,
) -> Result<Result<bool, ApiError>, ApiError> {
    let subject = session_subject(user_id, session_id);
    let verified = match weigh(conn, key, user_id, proof, &subject, now)? {
        Ok(verified) => verified,
        Err(refused) => return Ok(Err(refused)),
    };
    let was_on = users::two_factor_on(conn, user_id)?;
    let app_set_up = matches!(proof, Proof::Totp(_)) && verified == Some(false);
    if app_set_up {
        two_factor::mark_verified(conn, user_id)?;
    }
    let first = app_set_up || (matches!(proof, Proof::Otp(_)) && !was_on);
    if first && !was_on {
        users::set_two_factor(conn, user_id, true, now)?;
    }
    Ok(Ok(first))
}

/// Turns two-factor on with mailed codes alone (`enable` with method `otp`).
pub fn enable_mailed(conn: &mut Tx, user_id: &UserId, now: DateTime<Utc>) -> QueryResult<()> {
    users::set_two_factor(conn, user_id, true, now)?;
    Ok(())
}

fn challenge_identifier(id: &str) -> String {
    format!("2fa-{}", keys::token_digest(id))
}

fn trust_identifier(id: &str) -> String {
    format!("trust-device-{}", keys::token_digest(id))
}

/// Leaves a sign-in challenge for `user_id`; answers its id, for the `two_factor` cookie.
pub fn challenge(
    conn: &mut Tx,
    user_id: &UserId,
    remember: bool,
    now: DateTime<Utc>,
) -> QueryResult<String> {
    let id = keys::link_token();
    let pending = Pending {
        user_id: user_id.clone(),
        remember,
        tries: 0,
    };
    verification::insert(
        conn,
        &challenge_identifier(&id),
        &pending.value(),
        now + CHALLENGE_LIFETIME,
        now,
    )?;
    Ok(id)
}

/// What a challenge's row holds, as `<userId>:<remember 0|1>:<wrong codes>`.
struct Pending {
    user_id: UserId,
    remember: bool,
    tries: u32,
}

impl Pending {
    fn parse(value: &str) -> Option<Self> {
        let mut parts = value.splitn(3, ':');
        let (user_id, remember, tries) = (parts.next()?, parts.next()?, parts.next()?);
        Some(Self {
            user_id: UserId::from(user_id.to_owned()),
            remember: remember == "1",
            tries: tries.parse().unwrap_or(CHALLENGE_ATTEMPTS),
        })
    }

    fn value(&self) -> String {
        let remember = u8::from(self.remember);
        format!("{}:{remember}:{}", self.user_id.as_str(), self.tries)
    }
}

/// A sign-in whose second factor was right.
pub struct Passed {
    pub user_id: UserId,
    /// The session outlives the browser (no `rememberMe: false` at the password step).
    pub remember: bool,
}

/// Why a sign-in's second factor was refused, and whether the challenge is gone with it.
pub struct Refusal {
    pub error: ApiError,
    pub challenge_void: bool,
}

/// Weighs `proof` for the sign-in challenge `challenge_id`: a right one spends the challenge
/// and clears the account's run of failures; a wrong one counts against both. Refusals are
/// answers the caller's transaction commits.
pub fn verify_challenge(
    conn: &mut Tx,
    key: &str,
    challenge_id: &str,
    proof: &Proof,
    now: DateTime<Utc>,
) -> Result<Result<Passed, Refusal>, ApiError> {
    let refuse = |error, challenge_void| {
        Ok(Err(Refusal {
            error,
            challenge_void,
        }))
    };
    let identifier = challenge_identifier(challenge_id);
    let Some((row_id, value)) = verification::lock_live(conn, &identifier, now)? else {
        return refuse(ApiError::Unauthorized("INVALID_TWO_FACTOR_COOKIE"), true);
    };
    let Some(mut pending) = Pending::parse(&value) else {
        verification::delete_by_id(conn, &row_id)?;
        return refuse(ApiError::Unauthorized("INVALID_TWO_FACTOR_COOKIE"), true);
    };
    if pending.tries >= CHALLENGE_ATTEMPTS {
        verification::delete_by_id(conn, &row_id)?;
        return refuse(ApiError::bad("TOO_MANY_ATTEMPTS_REQUEST_NEW_CODE"), true);
    }
    let user_id = pending.user_id.clone();
    if two_factor::locked_until(conn, &user_id)?.is_some_and(|until| until > now) {
        return refuse(ApiError::Locked("ACCOUNT_TEMPORARILY_LOCKED"), false);
    }
    match weigh(conn, key, &user_id, proof, &identifier, now)? {
        Ok(_) => {
            verification::delete_by_id(conn, &row_id)?;
            two_factor::clear_failures(conn, &user_id)?;
            Ok(Ok(Passed {
                user_id,
                remember: pending.remember,
            }))
        }
        Err(error) => {
            if matches!(error, ApiError::Unauthorized(_)) {
                two_factor::record_failure(conn, &user_id, LOCKOUT_FAILURES, now + LOCKOUT)?;
                pending.tries += 1;
                verification::set_value(conn, &row_id, &pending.value(), now)?;
            }
            refuse(error, false)
        }
    }
}

/// Whether the trusted-device id `trust_id` is one `user_id` left; if so it is renewed: the old
/// id stops working and the new one (for the cookie) is answered.
pub fn renew_trust(
    conn: &mut Tx,
    trust_id: &str,
    user_id: &UserId,
    now: DateTime<Utc>,
) -> QueryResult<Option<String>> {
    let identifier = trust_identifier(trust_id);
    match verification::find_live(conn, &identifier, now)? {
        Some(owner) if owner == user_id.as_str() => {
            verification::delete_all(conn, &identifier)?;
            trust(conn, user_id, now).map(Some)
        }
        _ => Ok(None),
    }
}

/// Trusts this device for `user_id` from now on; answers the id for the cookie.
pub fn trust(conn: &mut Tx, user_id: &UserId, now: DateTime<Utc>) -> QueryResult<String> {
    let id = keys::link_token();
    verification::insert(
        conn,
        &trust_identifier(&id),
        user_id.as_str(),
        now + TRUST_LIFETIME,
        now,
    )?;
    Ok(id)
}

/// Turns two-factor off for `user_id`: the secret, the codes and every trusted device go.
pub fn disable(conn: &mut Tx, user_id: &UserId, now: DateTime<Utc>) -> QueryResult<()> {
    two_factor::delete(conn, user_id)?;
    users::set_two_factor(conn, user_id, false, now)?;
    verification::delete_matching(conn, "trust-device-", user_id.as_str())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_32_characters_of_the_alphabet() {
        let s = new_secret();
        assert_eq!(s.len(), 32);
        assert!(s.bytes().all(|b| SECRET_ALPHABET.contains(&b)), "{s}");
        assert_ne!(s, new_secret());
    }

    #[test]
    fn the_uri_names_the_issuer_and_the_key_bytes_in_base32() {
        let uri = uri("12345678901234567890123456789012", "ada@example.com");
        assert!(
            uri.starts_with("otpauth://totp/Digiuno:ada%40example.com?"),
            "{uri}"
        );
        // The RFC 6238 test key "1234567890…" in base32.
        assert!(
            uri.contains("secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZA"),
            "{uri}"
        );
        assert!(uri.contains("issuer=Digiuno"), "{uri}");
    }

    #[test]
    fn codes_follow_rfc_6238_with_one_step_of_drift() {
        // RFC 6238, appendix B, SHA-1 at T = 59 s: 94287082 (its last six digits).
        let key = "12345678901234567890";
        let at = |s| DateTime::from_timestamp(s, 0).unwrap();
        assert!(code_is_current(key, "287082", at(59)));
        assert!(code_is_current(key, "287082", at(59 + 30)), "one step late");
        assert!(
            !code_is_current(key, "287082", at(59 + 60)),
            "two steps late"
        );
        assert!(!code_is_current(key, "28708", at(59)));
        assert!(!code_is_current(key, "2870820", at(59)));
    }

    #[test]
    fn backup_codes_are_ten_distinct_codes_of_two_groups() {
        let codes = new_backup_codes();
        assert_eq!(codes.len(), BACKUP_CODES);
        for c in &codes {
            assert_eq!(c.len(), 11, "{c}");
            assert_eq!(&c[5..6], "-");
        }
        let unique: std::collections::HashSet<_> = codes.iter().collect();
        assert_eq!(unique.len(), BACKUP_CODES);
    }
}
