//! Single-use tokens for e-mailed links (password reset, address verification): 256 random bits
//! in the link, only their SHA-256 in `auth.verification`, the user's id as the value.

use chrono::{DateTime, Duration, Utc};
use diesel::QueryResult;
use session::UserId;
use url::Url;

use crate::keys;
use crate::redirect::q;
use crate::repo::Tx;
use crate::repo::verification;

/// A reset link works for an hour.
pub const RESET_LIFETIME: Duration = Duration::hours(1);
/// A verification link works for a day.
pub const VERIFY_LIFETIME: Duration = Duration::hours(24);
/// The "this was not me" link of a new-device mail works for a week.
pub const NOT_ME_LIFETIME: Duration = Duration::days(7);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    Reset,
    Verify,
    /// "This was not me": ends every session of the user and leads to a new password.
    NotMe,
}

impl Purpose {
    pub fn prefix(self) -> &'static str {
        match self {
            Self::Reset => "reset-password:",
            Self::Verify => "verify-email:",
            Self::NotMe => "not-me:",
        }
    }

    fn lifetime(self) -> Duration {
        match self {
            Self::Reset => RESET_LIFETIME,
            Self::Verify => VERIFY_LIFETIME,
            Self::NotMe => NOT_ME_LIFETIME,
        }
    }

    fn identifier(self, token: &str) -> String {
        format!("{}{}", self.prefix(), keys::token_digest(token))
    }

    /// What to look a token from a link up by; `None` for a value no link of ours carries
    /// (empty, or so long that hashing it is only a cost), which is not looked up at all.
    fn lookup(self, token: &str) -> Option<String> {
        (!token.is_empty() && token.len() <= MAX_TOKEN).then(|| self.identifier(token))
    }
}

/// Longest token looked up; ours are 43 characters.
const MAX_TOKEN: usize = 128;

/// Stores a new token for `user_id`; returns it (the only copy in clear).
pub fn issue(
    conn: &mut Tx,
    purpose: Purpose,
    user_id: &UserId,
    now: DateTime<Utc>,
) -> QueryResult<String> {
    let token = keys::link_token();
    verification::insert(
        conn,
        &purpose.identifier(&token),
        user_id.as_str(),
        now + purpose.lifetime(),
        now,
    )?;
    Ok(token)
}

/// A change of address waits for its link at most this long (better-auth's hour).
pub const CHANGE_LIFETIME: Duration = Duration::hours(1);
const CHANGE_PREFIX: &str = "change-email:";

/// Stores a token for moving `user_id` to `new_email`, voiding the user's earlier ones; returns
/// it (the only copy in clear). The value names the user and the new address as JSON, as
/// erasure expects of a value that names an address.
pub fn issue_change(
    conn: &mut Tx,
    user_id: &UserId,
    new_email: &str,
    now: DateTime<Utc>,
) -> QueryResult<String> {
    verification::delete_prefixed_containing(conn, CHANGE_PREFIX, user_id.as_str())?;
    let token = keys::link_token();
    let value = serde_json::json!({ "userId": user_id.as_str(), "email": new_email }).to_string();
    verification::insert(
        conn,
        &format!("{CHANGE_PREFIX}{}", keys::token_digest(&token)),
        &value,
        now + CHANGE_LIFETIME,
        now,
    )?;
    Ok(token)
}

/// Uses a change-of-address token up: the user and the address it moves them to, if it was
/// live.
pub fn redeem_change(
    conn: &mut Tx,
    token: &str,
    now: DateTime<Utc>,
) -> QueryResult<Option<(UserId, String)>> {
    if token.is_empty() || token.len() > MAX_TOKEN {
        return Ok(None);
    }
    let identifier = format!("{CHANGE_PREFIX}{}", keys::token_digest(token));
    let Some(value) = verification::consume(conn, &identifier, now)? else {
        return Ok(None);
    };
    let parsed: Option<(String, String)> = serde_json::from_str::<serde_json::Value>(&value)
        .ok()
        .and_then(|v| {
            Some((
                v["userId"].as_str()?.to_owned(),
                v["email"].as_str()?.to_owned(),
            ))
        });
    Ok(parsed.map(|(id, email)| (UserId::from(id), email)))
}

/// The user a live token belongs to, leaving the token usable.
pub fn peek(
    conn: &mut Tx,
    purpose: Purpose,
    token: &str,
    now: DateTime<Utc>,
) -> QueryResult<Option<UserId>> {
    match purpose.lookup(token) {
        Some(identifier) => Ok(verification::find_live(conn, &identifier, now)?.map(UserId::from)),
        None => Ok(None),
    }
}

/// Uses a token up: the user it belonged to if it was live, and every other token of the same
/// purpose for that user is dropped too.
pub fn redeem(
    conn: &mut Tx,
    purpose: Purpose,
    token: &str,
    now: DateTime<Utc>,
) -> QueryResult<Option<UserId>> {
    let Some(identifier) = purpose.lookup(token) else {
        return Ok(None);
    };
    let user_id = verification::consume(conn, &identifier, now)?.map(UserId::from);
    if let Some(id) = &user_id {
        drop_others(conn, purpose, id)?;
    }
    Ok(user_id)
}

/// A token taken out of use by [`take`], with what [`put_back`] needs to restore it.
pub struct Taken {
    pub user_id: UserId,
    expires_at: DateTime<Utc>,
}

/// Takes a live token out of use, alone (the user's other tokens stay until the work it was
/// taken for is done): of parallel callers only one gets it, so that slow work done for a
/// token, a password hash, is done once per token.
pub fn take(
    conn: &mut Tx,
    purpose: Purpose,
    token: &str,
    now: DateTime<Utc>,
) -> QueryResult<Option<Taken>> {
    let Some(identifier) = purpose.lookup(token) else {
        return Ok(None);
    };
    let taken = verification::take(conn, &identifier, now)?;
    Ok(taken.map(|(user_id, expires_at)| Taken {
        user_id: user_id.into(),
        expires_at,
    }))
}

/// Makes a token [`take`]n usable again, with its own expiry, when the work it was taken for
/// could not be done (the server was busy): the person's link keeps working.
pub fn put_back(
    conn: &mut Tx,
    purpose: Purpose,
    token: &str,
    taken: &Taken,
    now: DateTime<Utc>,
) -> QueryResult<()> {
    verification::insert(
        conn,
        &purpose.identifier(token),
        taken.user_id.as_str(),
        taken.expires_at,
        now,
    )
}

/// Drops the other tokens of `purpose` for `user_id`, once one of them was used.
pub fn drop_others(conn: &mut Tx, purpose: Purpose, user_id: &UserId) -> QueryResult<()> {
    verification::delete_matching(conn, purpose.prefix(), user_id.as_str())?;
    Ok(())
}

fn base(base_url: &Url) -> String {
    base_url.as_str().trim_end_matches('/').to_owned()
}

/// The reset link of the mail: auth checks the token, then sends the browser to `callback`.
pub fn reset_link(base_url: &Url, token: &str, callback: &str) -> String {
    format!(
        "{}/api/auth/reset-password/{token}?callbackURL={}",
        base(base_url),
        q(callback)
    )
}

/// The verification link of the mail.
pub fn verify_link(base_url: &Url, token: &str, callback: &str) -> String {
    format!(
        "{}/api/auth/verify-email?token={token}&callbackURL={}",
        base(base_url),
        q(callback)
    )
}

/// The "this was not me" link of a new-device mail: a page that asks before it acts, since mail
/// scanners open links. The token is in the query, which no access log of ours keeps.
pub fn not_me_link(base_url: &Url, token: &str) -> String {
    format!("{}/api/auth/not-me?token={token}", base(base_url))
}

/// `target` with one more query parameter.
pub fn with_param(target: &str, name: &str, value: &str) -> String {
    let sep = if target.contains('?') { '&' } else { '?' };
    format!("{target}{sep}{name}={}", q(value))
}
