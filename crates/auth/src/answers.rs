//! The bodies auth answers with, one type per shape of better-auth's wire format: the handlers
//! serialise these and the OpenAPI document describes the same types, so the two cannot drift.

use chrono::{DateTime, Utc};
use serde::Serialize;
use session::{Session, User};
use utoipa::ToSchema;

/// `{status: true}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Status {
    pub status: bool,
}

impl Status {
    pub const DONE: Self = Self { status: true };
}

/// `{status, message}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct StatusMessage {
    pub status: bool,
    pub message: &'static str,
}

/// `{success: true}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Success {
    pub success: bool,
}

/// `{success, message}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SuccessMessage {
    pub success: bool,
    pub message: &'static str,
}

/// `{ok: true}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Ok {
    pub ok: bool,
}

/// A new user, with the session token (also in the cookie).
#[derive(Debug, Serialize, ToSchema)]
pub struct SignedUp {
    /// Null when the address must be verified first.
    #[schema(required = true)]
    pub token: Option<String>,
    pub user: User,
}

/// A signed-in user.
#[derive(Debug, Serialize, ToSchema)]
pub struct SignedIn {
    /// Whether the client should go to `url`.
    pub redirect: bool,
    pub token: String,
    /// The callbackURL, when one was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    pub user: User,
}

/// The answer of change-password.
#[derive(Debug, Serialize, ToSchema)]
pub struct PasswordChanged {
    /// The new session's token when the other sessions were revoked, else null.
    #[schema(required = true)]
    pub token: Option<String>,
    pub user: User,
}

/// The answer of verify-email without a callbackURL.
#[derive(Debug, Serialize, ToSchema)]
pub struct EmailVerified {
    pub status: bool,
    /// Null for a verification (verifying does not sign in); the user as it is now for a change
    /// of address, as better-auth answers it.
    #[schema(required = true)]
    pub user: Option<User>,
}

/// A signed-in user, as a sign-in by e-mail code answers: `{token, user}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenAndUser {
    pub token: String,
    pub user: User,
}

/// An address verified with a code: `{status: true, token: null, user}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CodeVerified {
    pub status: bool,
    /// Always null: verifying does not sign in.
    #[schema(required = true)]
    pub token: Option<String>,
    pub user: User,
}

/// `{session, user}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionAndUser<'a> {
    pub session: &'a Session,
    pub user: &'a User,
}

/// The configured social providers.
#[derive(Debug, Serialize, ToSchema)]
pub struct Providers {
    /// `google` when it is configured.
    pub providers: Vec<&'static str>,
}

/// Where the browser goes for a social sign-in.
#[derive(Debug, Serialize, ToSchema)]
pub struct SocialRedirect {
    /// The provider's authorisation address.
    pub url: String,
    pub redirect: bool,
}

/// A live session of the user, as list-sessions gives it: the session as get-session shows it
/// (never its token), and beside it a handle for revoke-session.
#[derive(Debug, Serialize, ToSchema)]
pub struct ListedSession {
    #[serde(flatten)]
    pub session: Session,
    /// An opaque handle for revoke-session, never the cookie's token.
    pub token: String,
    /// Whether this is the session of the request.
    pub current: bool,
}

/// A way to sign in: the password (`credential`) or a provider.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Account {
    pub id: String,
    pub provider_id: String,
    pub account_id: String,
    #[schema(value_type = String)]
    pub user_id: session::UserId,
    pub scopes: Vec<String>,
    #[serde(serialize_with = "service_kit::time::serialize")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "service_kit::time::serialize")]
    pub updated_at: DateTime<Utc>,
}
