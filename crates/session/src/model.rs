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
}
