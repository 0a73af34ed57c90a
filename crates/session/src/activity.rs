//! The security activity of an account (`GET /api/auth/activity`): what is recorded, how long,
//! and how much of the client's address. auth records the account events, nutrition-api the
//! exports; both write through [`record`], so the rules live here once.

use std::net::IpAddr;

use chrono::{DateTime, Duration, Utc};
use diesel::prelude::*;
use pg_store::ids::UserId;
use pg_store::schema::auth::activity;

/// How long an event is kept and listed.
pub const KEEP: Duration = Duration::days(90);
/// Events kept per user at most: failed sign-ins can be caused by anyone who knows the address,
/// so the log of one account cannot grow without bound. The oldest go first.
pub const MAX_PER_USER: i64 = 1000;

/// What happened. The names are the wire's (`kind`) and the database's check constraint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    SignIn,
    SignInFailed,
    PasswordChanged,
    EmailChanged,
    TwoFactorEnabled,
    TwoFactorDisabled,
    PasskeyAdded,
    PasskeyRemoved,
    SessionsRevoked,
    Export,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SignIn => "sign_in",
            Self::SignInFailed => "sign_in_failed",
            Self::PasswordChanged => "password_changed",
            Self::EmailChanged => "email_changed",
            Self::TwoFactorEnabled => "two_factor_enabled",
            Self::TwoFactorDisabled => "two_factor_disabled",
            Self::PasskeyAdded => "passkey_added",
            Self::PasskeyRemoved => "passkey_removed",
            Self::SessionsRevoked => "sessions_revoked",
            Self::Export => "export",
        }
    }
}

/// The part of the client's address an event keeps: the /24 of an IPv4 address, the /48 of an
/// IPv6 one. Enough to tell a home from a phone network, not enough to find a house.
pub fn network(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4_network(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4_network(v4),
            None => {
                let prefix = u128::from(v6) & !(u128::MAX >> 48);
                format!("{}/48", std::net::Ipv6Addr::from(prefix))
            }
        },
    }
}

fn v4_network(v4: std::net::Ipv4Addr) -> String {
    let [a, b, c, _] = v4.octets();
    format!("{a}.{b}.{c}.0/24")
}

/// Who did it: the browser and the network, as kept on an event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Client {
    pub user_agent: Option<String>,
    pub network: Option<String>,
}

impl Client {
    pub fn new(ip: Option<IpAddr>, user_agent: Option<&str>) -> Self {
        Self {
            user_agent: user_agent
                .map(|ua| ua.chars().take(service_kit::http::MAX_USER_AGENT).collect()),
            network: ip.map(network),
        }
    }
}

impl From<&crate::store::Origin> for Client {
    fn from(origin: &crate::store::Origin) -> Self {
        Self::new(
            origin.ip_address.as_deref().and_then(|ip| ip.parse().ok()),
            origin.user_agent.as_deref(),
        )
    }
}

/// One event as inserted, by auth through [`record`] and by nutrition-api (whose connections are
/// asynchronous) directly; the next [`record`] of the user trims what nutrition-api added.
#[derive(Debug, Insertable)]
#[diesel(table_name = activity)]
pub struct Event<'a> {
    id: String,
    user_id: &'a str,
    kind: &'static str,
    at: DateTime<Utc>,
    user_agent: Option<&'a str>,
    ip: Option<&'a str>,
}

impl<'a> Event<'a> {
    pub fn new(user_id: &'a UserId, kind: Kind, client: &'a Client, now: DateTime<Utc>) -> Self {
        Self {
            id: crate::ids::id(),
            user_id: user_id.as_str(),
            kind: kind.as_str(),
            at: now,
            user_agent: client.user_agent.as_deref(),
            ip: client.network.as_deref(),
        }
    }
}

/// One event as listed (`GET /api/auth/activity`) and exported (`GET /me/export`).
#[derive(Debug, serde::Serialize, Queryable, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Listed {
    /// `sign_in`, `sign_in_failed`, `password_changed`, `email_changed`, `two_factor_enabled`,
    /// `two_factor_disabled`, `passkey_added`, `passkey_removed`, `sessions_revoked`, `export`.
    pub kind: String,
    #[serde(serialize_with = "service_kit::time::serialize")]
    pub at: DateTime<Utc>,
    #[schema(required = true)]
    pub user_agent: Option<String>,
    /// The network of the address: its /24 (IPv4) or /48 (IPv6).
    #[schema(required = true)]
    pub ip: Option<String>,
}

/// The columns of [`Listed`].
type ListedColumns = (
    diesel::sql_types::Text,
    diesel::sql_types::Timestamptz,
    diesel::sql_types::Nullable<diesel::sql_types::Text>,
    diesel::sql_types::Nullable<diesel::sql_types::Text>,
);

/// The statement listing a user's events of the last [`KEEP`], newest first, for each service
/// to run on its own kind of connection.
pub fn listing(
    user_id: &UserId,
    now: DateTime<Utc>,
) -> activity::BoxedQuery<'static, diesel::pg::Pg, ListedColumns> {
    activity::table
        .filter(activity::user_id.eq(user_id.clone()))
        .filter(activity::at.gt(now - KEEP))
        .order((activity::at.desc(), activity::id.desc()))
        .limit(MAX_PER_USER)
        .select((
            activity::kind,
            activity::at,
            activity::user_agent,
            activity::ip,
        ))
        .into_boxed()
}

/// Records `kind` for `user_id`, and lets the oldest events of that user go beyond
/// [`MAX_PER_USER`] and [`KEEP`]: one statement, since it runs in every sign-in.
pub fn record(
    conn: &mut PgConnection,
    user_id: &UserId,
    kind: Kind,
    client: &Client,
    now: DateTime<Utc>,
) -> QueryResult<()> {
    use diesel::sql_types::{BigInt, Nullable, Text, Timestamptz};
    // The delete does not see the row inserted beside it, so it keeps one event fewer.
    diesel::sql_query(
        "WITH added AS (INSERT INTO auth.activity (id, user_id, kind, at, user_agent, ip) \
             VALUES ($1, $2, $3, $4, $5, $6)) \
         DELETE FROM auth.activity WHERE user_id = $2 AND (at < $7 OR id IN \
             (SELECT id FROM auth.activity WHERE user_id = $2 \
              ORDER BY at DESC, id DESC OFFSET $8))",
    )
    .bind::<Text, _>(crate::ids::id())
    .bind::<Text, _>(user_id.as_str())
    .bind::<Text, _>(kind.as_str())
    .bind::<Timestamptz, _>(now)
    .bind::<Nullable<Text>, _>(client.user_agent.as_deref())
    .bind::<Nullable<Text>, _>(client.network.as_deref())
    .bind::<Timestamptz, _>(now - KEEP)
    .bind::<BigInt, _>(MAX_PER_USER - 1)
    .execute(conn)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_kept_as_their_network() {
        let net = |s: &str| network(s.parse().expect("ip"));
        assert_eq!(net("203.0.113.9"), "203.0.113.0/24");
        assert_eq!(net("::ffff:203.0.113.9"), "203.0.113.0/24");
        assert_eq!(net("2001:db8:1:2:aaaa::1"), "2001:db8:1::/48");
        assert_eq!(net("2001:db8:1:ffff::1"), "2001:db8:1::/48");
        assert_ne!(net("2001:db8:2::1"), net("2001:db8:1::1"));
    }

    #[test]
    fn long_user_agents_are_cut() {
        let c = Client::new(None, Some(&"x".repeat(2000)));
        assert_eq!(
            c.user_agent.map(|u| u.len()),
            Some(service_kit::http::MAX_USER_AGENT)
        );
    }
}
