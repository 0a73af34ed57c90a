//! Users and sessions as stored, and as the better-auth client receives them.

use chrono::{DateTime, Utc};
use diesel::{Queryable, Selectable};
use pg_store::schema::auth::{session, user};
use serde::Serialize;

use pg_store::ids::{SessionId, UserId};

#[derive(Debug, Clone, Queryable, Selectable, Serialize, utoipa::ToSchema)]
#[diesel(table_name = user, check_for_backend(diesel::pg::Pg))]
#[serde(rename_all = "camelCase")]
pub struct User {
    #[schema(value_type = String)]
    pub id: UserId,
    pub name: String,
    pub email: String,
    pub email_verified: bool,
    #[schema(required = true)]
    pub image: Option<String>,
    #[serde(serialize_with = "service_kit::time::serialize")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "service_kit::time::serialize")]
    pub updated_at: DateTime<Utc>,
    /// Whether signing in with the password also asks for a second factor.
    pub two_factor_enabled: bool,
}

/// A session row. The token is the bearer secret: it never appears in JSON.
#[derive(Debug, Clone, Queryable, Selectable, Serialize, utoipa::ToSchema)]
#[diesel(table_name = session, check_for_backend(diesel::pg::Pg))]
#[serde(rename_all = "camelCase")]
pub struct Session {
    #[schema(value_type = String)]
    pub id: SessionId,
    #[serde(skip)]
    pub token: String,
    #[schema(value_type = String)]
    pub user_id: UserId,
    #[serde(serialize_with = "service_kit::time::serialize")]
    pub expires_at: DateTime<Utc>,
    #[serde(serialize_with = "service_kit::time::serialize")]
    pub created_at: DateTime<Utc>,
    /// Also the time of the last rolling refresh.
    #[serde(serialize_with = "service_kit::time::serialize")]
    pub updated_at: DateTime<Utc>,
    #[schema(required = true)]
    pub ip_address: Option<String>,
    #[schema(required = true)]
    pub user_agent: Option<String>,
    /// When the owner last proved who they are on this session without signing in again.
    #[serde(skip)]
    pub proven_at: Option<DateTime<Utc>>,
}

/// A session this young may delete its account or export its data without another check
/// (better-auth's `session.freshAge`, one day by default).
pub const FRESH_AGE: chrono::Duration = chrono::Duration::hours(24);
/// A password or code checked on an older session makes it fresh for this long.
pub const PROOF_WINDOW: chrono::Duration = chrono::Duration::minutes(5);

impl Session {
    /// Whether the session may do what needs a recent sign-in (deleting the account, exporting
    /// its data): created less than a day ago, or its owner proved who they are on it in the
    /// last five minutes.
    pub fn is_fresh(&self, now: DateTime<Utc>) -> bool {
        now - self.created_at < FRESH_AGE
            || self.proven_at.is_some_and(|at| now - at < PROOF_WINDOW)
    }
}
