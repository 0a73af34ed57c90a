//! Rows of `auth.account`: how a user signs in (a password, or a provider's account).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use pg_store::schema::auth::{account, user};
use session::User;
use session::UserId;
use session::ids;

/// Provider id of e-mail and password accounts (better-auth's name).
pub const CREDENTIAL: &str = "credential";
pub const GOOGLE: &str = "google";

pub struct NewAccount<'a> {
    pub user_id: &'a UserId,
    pub provider_id: &'a str,
    pub account_id: &'a str,
    pub password: Option<&'a str>,
    pub access_token: Option<&'a str>,
    pub refresh_token: Option<&'a str>,
    pub id_token: Option<&'a str>,
    pub scope: Option<&'a str>,
}

impl<'a> NewAccount<'a> {
    /// The e-mail and password account of `user_id`: better-auth names it by the user's own id.
    pub fn credential(user_id: &'a UserId, hash: &'a str) -> Self {
        Self {
            user_id,
            provider_id: CREDENTIAL,
            account_id: user_id.as_str(),
            password: Some(hash),
            access_token: None,
            refresh_token: None,
            id_token: None,
            scope: None,
        }
    }
}

pub fn insert(
    conn: &mut PgConnection,
    new: &NewAccount<'_>,
    now: DateTime<Utc>,
) -> QueryResult<()> {
    diesel::insert_into(account::table)
        .values((
            account::id.eq(ids::id()),
            account::user_id.eq(new.user_id),
            account::provider_id.eq(new.provider_id),
            account::account_id.eq(new.account_id),
            account::password.eq(new.password),
            account::access_token.eq(new.access_token),
            account::refresh_token.eq(new.refresh_token),
            account::id_token.eq(new.id_token),
            account::scope.eq(new.scope),
            account::created_at.eq(now),
            account::updated_at.eq(now),
        ))
        .execute(conn)?;
    Ok(())
}

/// The user linked to a provider account.
pub fn find_by_account(
    conn: &mut PgConnection,
    provider: &str,
    account_id: &str,
) -> QueryResult<Option<User>> {
    account::table
        .inner_join(user::table)
        .filter(account::provider_id.eq(provider))
        .filter(account::account_id.eq(account_id))
        .select(User::as_select())
        .first(conn)
        .optional()
}

/// Stores fresh provider tokens on an existing account link.
pub fn update_tokens(
    conn: &mut PgConnection,
    provider: &str,
    account_id: &str,
    access_token: Option<&str>,
    id_token: Option<&str>,
    now: DateTime<Utc>,
) -> QueryResult<usize> {
    diesel::update(
        account::table
            .filter(account::provider_id.eq(provider))
            .filter(account::account_id.eq(account_id)),
    )
    .set((
        account::access_token.eq(access_token),
        account::id_token.eq(id_token),
        account::updated_at.eq(now),
    ))
    .execute(conn)
}

/// An account as the better-auth client lists it: no tokens, no password.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = account, check_for_backend(diesel::pg::Pg))]
pub struct Linked {
    pub id: String,
    pub provider_id: String,
    pub account_id: String,
    pub user_id: UserId,
    pub scope: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// The user's accounts, oldest first.
pub fn list(conn: &mut PgConnection, user_id: &UserId) -> QueryResult<Vec<Linked>> {
    account::table
        .filter(account::user_id.eq(user_id))
        .order((account::created_at.asc(), account::id.asc()))
        .select(Linked::as_select())
        .load(conn)
}

/// Deletes one of the user's accounts.
pub fn delete(conn: &mut PgConnection, user_id: &UserId, id: &str) -> QueryResult<usize> {
    diesel::delete(
        account::table
            .filter(account::id.eq(id))
            .filter(account::user_id.eq(user_id)),
    )
    .execute(conn)
}

/// The password hash of the user's credential account: `None` without such an account,
/// `Some(None)` for one without a password.
pub fn password_of(
    conn: &mut PgConnection,
    user_id: &UserId,
) -> QueryResult<Option<Option<String>>> {
    account::table
        .filter(account::user_id.eq(user_id))
        .filter(account::provider_id.eq(CREDENTIAL))
        .select(account::password)
        .first(conn)
        .optional()
}

/// Stores a new password hash on the user's credential account, creating the account when the
/// user had none (someone who signed up with Google sets a password through a reset).
pub fn set_password(
    conn: &mut PgConnection,
    user_id: &UserId,
    hash: &str,
    now: DateTime<Utc>,
) -> QueryResult<()> {
    let updated = diesel::update(
        account::table
            .filter(account::user_id.eq(user_id))
            .filter(account::provider_id.eq(CREDENTIAL)),
    )
    .set((account::password.eq(hash), account::updated_at.eq(now)))
    .execute(conn)?;
    if updated == 0 {
        insert(conn, &NewAccount::credential(user_id, hash), now)?;
    }
    Ok(())
}

/// Deletes every account of the user: the password and every provider link.
pub fn delete_all(conn: &mut PgConnection, user_id: &UserId) -> QueryResult<usize> {
    diesel::delete(account::table.filter(account::user_id.eq(user_id))).execute(conn)
}
