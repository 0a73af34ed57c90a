//! `auth import-better-auth --from <postgres url>`: brings the users of a better-auth 1.x
//! application over, with their accounts and live sessions, so that people sign in here with the
//! password they had there.
//!
//! better-auth's tables (`user`, `account`, `session`, `verification`, camelCase columns) are read
//! from the source; its scrypt password hashes are copied as they are: `password::verify`
//! understands them and sign-in replaces each with argon2id. Verification values are not copied:
//! they are short-lived links and OAuth states that the old site issued and this one cannot
//! honour.
//!
//! Idempotent: rows are copied by their better-auth id and a row already here is left alone, so
//! a second run copies only what is new and never puts back a hash that sign-in has upgraded. A
//! user whose address already belongs to another user here is skipped with their rows, and
//! counted as a conflict.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Bool, Nullable, Text, Timestamptz};
use pg_store::schema::auth::user;
use serde::Serialize;

#[derive(QueryableByName)]
struct SourceUser {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Text)]
    email: String,
    #[diesel(sql_type = Bool)]
    email_verified: bool,
    #[diesel(sql_type = Nullable<Text>)]
    image: Option<String>,
    #[diesel(sql_type = Timestamptz)]
    created_at: DateTime<Utc>,
    #[diesel(sql_type = Timestamptz)]
    updated_at: DateTime<Utc>,
}

#[derive(QueryableByName)]
struct SourceAccount {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Text)]
    account_id: String,
    #[diesel(sql_type = Text)]
    provider_id: String,
    #[diesel(sql_type = Text)]
    user_id: String,
    #[diesel(sql_type = Nullable<Text>)]
    access_token: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    refresh_token: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    id_token: Option<String>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    access_token_expires_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    refresh_token_expires_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Text>)]
    scope: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    password: Option<String>,
    #[diesel(sql_type = Timestamptz)]
    created_at: DateTime<Utc>,
    #[diesel(sql_type = Timestamptz)]
    updated_at: DateTime<Utc>,
}

#[derive(QueryableByName)]
struct SourceSession {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Text)]
    token: String,
    #[diesel(sql_type = Text)]
    user_id: String,
    #[diesel(sql_type = Timestamptz)]
    expires_at: DateTime<Utc>,
    #[diesel(sql_type = Timestamptz)]
    created_at: DateTime<Utc>,
    #[diesel(sql_type = Timestamptz)]
    updated_at: DateTime<Utc>,
    #[diesel(sql_type = Nullable<Text>)]
    ip_address: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    user_agent: Option<String>,
}

/// Rows copied and rows already here, per table.
#[derive(Debug, Default, Serialize, PartialEq, Eq)]
pub struct Counts {
    pub copied: usize,
    pub existing: usize,
}

#[derive(Debug, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub users: Counts,
    /// Users skipped because their address belongs to another user here.
    pub conflicts: usize,
    pub accounts: Counts,
    pub sessions: Counts,
}

/// Reads the better-auth tables of `source` and copies them into `target`'s `auth` schema in
/// one transaction.
pub fn import(source: &mut PgConnection, target: &mut PgConnection) -> anyhow::Result<Report> {
    let users: Vec<SourceUser> = diesel::sql_query(
        r#"SELECT id, name, lower(email) AS email, "emailVerified" AS email_verified, image,
                  "createdAt" AS created_at, "updatedAt" AS updated_at
             FROM "user" ORDER BY "createdAt", id"#,
    )
    .load(source)?;
    let accounts: Vec<SourceAccount> = diesel::sql_query(
        r#"SELECT id, "accountId" AS account_id, "providerId" AS provider_id, "userId" AS user_id,
                  "accessToken" AS access_token, "refreshToken" AS refresh_token,
                  "idToken" AS id_token, "accessTokenExpiresAt" AS access_token_expires_at,
                  "refreshTokenExpiresAt" AS refresh_token_expires_at, scope, password,
                  "createdAt" AS created_at, "updatedAt" AS updated_at
             FROM account ORDER BY "createdAt", id"#,
    )
    .load(source)?;
    // Only live sessions: an expired one would be deleted at its first use anyway.
    let sessions: Vec<SourceSession> = diesel::sql_query(
        r#"SELECT id, token, "userId" AS user_id, "expiresAt" AS expires_at,
                  "createdAt" AS created_at, "updatedAt" AS updated_at,
                  "ipAddress" AS ip_address, "userAgent" AS user_agent
             FROM session WHERE "expiresAt" > now() ORDER BY "createdAt", id"#,
    )
    .load(source)?;

    target.transaction(|conn| {
        let mut report = Report::default();
        let mut skipped = std::collections::HashSet::new();
        for u in &users {
            let inserted = diesel::sql_query(
                r#"INSERT INTO auth."user" (id, name, email, email_verified, image, created_at, updated_at)
                   VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING"#,
            )
            .bind::<Text, _>(&u.id)
            .bind::<Text, _>(&u.name)
            .bind::<Text, _>(&u.email)
            .bind::<Bool, _>(u.email_verified)
            .bind::<Nullable<Text>, _>(&u.image)
            .bind::<Timestamptz, _>(u.created_at)
            .bind::<Timestamptz, _>(u.updated_at)
            .execute(conn)?;
            if inserted == 1 {
                report.users.copied += 1;
                continue;
            }
            let same: i64 = user::table
                .filter(user::id.eq(&u.id))
                .filter(user::email.eq(&u.email))
                .count()
                .get_result(conn)?;
            if same == 1 {
                report.users.existing += 1;
            } else {
                report.conflicts += 1;
                skipped.insert(u.id.clone());
            }
        }
        for a in accounts.iter().filter(|a| !skipped.contains(&a.user_id)) {
            let inserted = diesel::sql_query(
                "INSERT INTO auth.account (id, account_id, provider_id, user_id, access_token,
                        refresh_token, id_token, access_token_expires_at, refresh_token_expires_at,
                        scope, password, created_at, updated_at)
                 SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13
                  WHERE EXISTS (SELECT 1 FROM auth.\"user\" WHERE id = $4)
                 ON CONFLICT DO NOTHING",
            )
            .bind::<Text, _>(&a.id)
            .bind::<Text, _>(&a.account_id)
            .bind::<Text, _>(&a.provider_id)
            .bind::<Text, _>(&a.user_id)
            .bind::<Nullable<Text>, _>(&a.access_token)
            .bind::<Nullable<Text>, _>(&a.refresh_token)
            .bind::<Nullable<Text>, _>(&a.id_token)
            .bind::<Nullable<Timestamptz>, _>(a.access_token_expires_at)
            .bind::<Nullable<Timestamptz>, _>(a.refresh_token_expires_at)
            .bind::<Nullable<Text>, _>(&a.scope)
            .bind::<Nullable<Text>, _>(&a.password)
            .bind::<Timestamptz, _>(a.created_at)
            .bind::<Timestamptz, _>(a.updated_at)
            .execute(conn)?;
            if inserted == 1 {
                report.accounts.copied += 1;
            } else {
                report.accounts.existing += 1;
            }
        }
        for s in sessions.iter().filter(|s| !skipped.contains(&s.user_id)) {
            let inserted = diesel::sql_query(
                "INSERT INTO auth.session (id, token, user_id, expires_at, created_at, updated_at,
                        ip_address, user_agent)
                 SELECT $1, $2, $3, $4, $5, $6, $7, $8
                  WHERE EXISTS (SELECT 1 FROM auth.\"user\" WHERE id = $3)
                 ON CONFLICT DO NOTHING",
            )
            .bind::<Text, _>(&s.id)
            .bind::<Text, _>(&s.token)
            .bind::<Text, _>(&s.user_id)
            .bind::<Timestamptz, _>(s.expires_at)
            .bind::<Timestamptz, _>(s.created_at)
            .bind::<Timestamptz, _>(s.updated_at)
            .bind::<Nullable<Text>, _>(&s.ip_address)
            .bind::<Nullable<Text>, _>(&s.user_agent)
            .execute(conn)?;
            if inserted == 1 {
                report.sessions.copied += 1;
            } else {
                report.sessions.existing += 1;
            }
        }
        Ok(report)
    })
}
