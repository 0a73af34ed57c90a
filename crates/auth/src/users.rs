//! User and account rows of the `auth` schema.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error};
use nutrition_store::schema::auth::{account, user};
use session::User;
use session::ids;

/// Provider id of e-mail and password accounts (better-auth's name).
pub const CREDENTIAL: &str = "credential";
pub const GOOGLE: &str = "google";

/// A user with the password hash of their credential account, if they have one.
pub fn find_with_password(
    conn: &mut PgConnection,
    email: &str,
) -> QueryResult<Option<(User, Option<String>)>> {
    let Some(found) = user::table
        .filter(user::email.eq(email))
        .select(User::as_select())
        .first(conn)
        .optional()?
    else {
        return Ok(None);
    };
    let hash: Option<Option<String>> = account::table
        .filter(account::user_id.eq(&found.id))
        .filter(account::provider_id.eq(CREDENTIAL))
        .select(account::password)
        .first(conn)
        .optional()?;
    Ok(Some((found, hash.flatten())))
}

pub struct NewUser<'a> {
    pub name: &'a str,
    pub email: &'a str,
    pub email_verified: bool,
    pub image: Option<&'a str>,
}

/// Inserts a user; `Ok(None)` when the e-mail address is taken (also by a concurrent request).
pub fn insert(
    conn: &mut PgConnection,
    new: &NewUser<'_>,
    now: DateTime<Utc>,
) -> QueryResult<Option<User>> {
    let inserted = diesel::insert_into(user::table)
        .values((
            user::id.eq(ids::id()),
            user::name.eq(new.name),
            user::email.eq(new.email),
            user::email_verified.eq(new.email_verified),
            user::image.eq(new.image),
            user::created_at.eq(now),
            user::updated_at.eq(now),
        ))
        .returning(User::as_returning())
        .get_result(conn);
    match inserted {
        Ok(u) => Ok(Some(u)),
        Err(Error::DatabaseError(DatabaseErrorKind::UniqueViolation, _)) => Ok(None),
        Err(e) => Err(e),
    }
}

pub struct NewAccount<'a> {
    pub user_id: &'a str,
    pub provider_id: &'a str,
    pub account_id: &'a str,
    pub password: Option<&'a str>,
    pub access_token: Option<&'a str>,
    pub refresh_token: Option<&'a str>,
    pub id_token: Option<&'a str>,
    pub scope: Option<&'a str>,
}

pub fn insert_account(
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

pub fn find_by_email(conn: &mut PgConnection, email: &str) -> QueryResult<Option<User>> {
    user::table
        .filter(user::email.eq(email))
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

/// Marks a user's e-mail address verified (a provider vouched for it).
pub fn mark_verified(
    conn: &mut PgConnection,
    user_id: &str,
    now: DateTime<Utc>,
) -> QueryResult<usize> {
    diesel::update(user::table.filter(user::id.eq(user_id)))
        .set((user::email_verified.eq(true), user::updated_at.eq(now)))
        .execute(conn)
}

/// Stores a new password hash on the user's credential account.
pub fn set_password(
    conn: &mut PgConnection,
    user_id: &str,
    phc: &str,
    now: DateTime<Utc>,
) -> QueryResult<usize> {
    diesel::update(
        account::table
            .filter(account::user_id.eq(user_id))
            .filter(account::provider_id.eq(CREDENTIAL)),
    )
    .set((account::password.eq(phc), account::updated_at.eq(now)))
    .execute(conn)
}
