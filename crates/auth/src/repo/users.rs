//! Rows of `auth.user`.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error};
use pg_store::schema::auth::{account, user};
use session::UserId;

use super::accounts::CREDENTIAL;
use session::User;
use session::ids;

/// A user with the password hash of their credential account, if they have one.
pub fn find_with_password(
    conn: &mut PgConnection,
    email: &str,
) -> QueryResult<Option<(User, Option<String>)>> {
    // One statement whether or not the user exists or has a password, so that the database
    // work of a sign-in does not tell a known address from an unknown one.
    let found: Option<(User, Option<String>)> = user::table
        .left_join(
            account::table.on(account::user_id
                .eq(user::id)
                .and(account::provider_id.eq(CREDENTIAL))),
        )
        .filter(user::email.eq(email))
        .select((User::as_select(), account::password.nullable()))
        .first(conn)
        .optional()?;
    Ok(found)
}

pub struct NewUser<'a> {
    pub name: &'a str,
    pub email: &'a str,
    pub email_verified: bool,
    pub image: Option<&'a str>,
    /// The language the account's mails, pages and pushes use: the browser's at sign-up.
    pub locale: domain::locale::Locale,
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
            user::locale.eq(new.locale.as_str()),
            user::created_at.eq(now),
            user::updated_at.eq(now),
        ))
        .returning(User::as_returning())
        .get_result(conn);
    unless_address_taken(inserted)
}

/// A written user, or `None` when the write was refused because the address is taken.
fn unless_address_taken(written: QueryResult<User>) -> QueryResult<Option<User>> {
    match written {
        Ok(u) => Ok(Some(u)),
        Err(Error::DatabaseError(DatabaseErrorKind::UniqueViolation, _)) => Ok(None),
        Err(e) => Err(e),
    }
}

pub fn find_by_email(conn: &mut PgConnection, email: &str) -> QueryResult<Option<User>> {
    user::table
        .filter(user::email.eq(email))
        .select(User::as_select())
        .first(conn)
        .optional()
}

/// Marks a user's e-mail address verified (a provider vouched for it).
pub fn mark_verified(
    conn: &mut PgConnection,
    user_id: &UserId,
    now: DateTime<Utc>,
) -> QueryResult<usize> {
    diesel::update(user::table.filter(user::id.eq(user_id)))
        .set((user::email_verified.eq(true), user::updated_at.eq(now)))
        .execute(conn)
}

/// Moves the user to `email`, verified or not; `Ok(None)` when the address is taken (also by a
/// concurrent request).
pub fn set_email(
    conn: &mut PgConnection,
    id: &UserId,
    email: &str,
    verified: bool,
    now: DateTime<Utc>,
) -> QueryResult<Option<User>> {
    let updated = diesel::update(user::table.find(id))
        .set((
            user::email.eq(email),
            user::email_verified.eq(verified),
            user::updated_at.eq(now),
        ))
        .returning(User::as_returning())
        .get_result(conn);
    unless_address_taken(updated)
}

/// Whether signing in as `id` asks for a second factor.
pub fn two_factor_on(conn: &mut PgConnection, id: &UserId) -> QueryResult<bool> {
    Ok(user::table
        .find(id)
        .select(user::two_factor_enabled)
        .first(conn)
        .optional()?
        .unwrap_or(false))
}

pub fn set_two_factor(
    conn: &mut PgConnection,
    id: &UserId,
    enabled: bool,
    now: DateTime<Utc>,
) -> QueryResult<usize> {
    diesel::update(user::table.find(id))
        .set((
            user::two_factor_enabled.eq(enabled),
            user::updated_at.eq(now),
        ))
        .execute(conn)
}

pub fn find_by_id(conn: &mut PgConnection, id: &UserId) -> QueryResult<Option<User>> {
    user::table
        .find(id)
        .select(User::as_select())
        .first(conn)
        .optional()
}

/// Changes the name and/or the image (`Some(None)` removes it); returns the user as stored.
pub fn update_profile(
    conn: &mut PgConnection,
    id: &UserId,
    name: Option<&str>,
    image: Option<Option<&str>>,
    now: DateTime<Utc>,
) -> QueryResult<User> {
    let target = user::table.find(id);
    match (name, image) {
        (Some(n), Some(i)) => diesel::update(target)
            .set((
                user::name.eq(n),
                user::image.eq(i),
                user::updated_at.eq(now),
            ))
            .returning(User::as_returning())
            .get_result(conn),
        (Some(n), None) => diesel::update(target)
            .set((user::name.eq(n), user::updated_at.eq(now)))
            .returning(User::as_returning())
            .get_result(conn),
        (None, Some(i)) => diesel::update(target)
            .set((user::image.eq(i), user::updated_at.eq(now)))
            .returning(User::as_returning())
            .get_result(conn),
        (None, None) => target.select(User::as_select()).first(conn),
    }
}

/// Locks the user's row until the end of the transaction, so that changes which depend on the
/// user's other rows (the number of accounts) happen one after another.
pub fn lock(conn: &mut PgConnection, id: &UserId) -> QueryResult<()> {
    user::table
        .find(id)
        .select(user::id)
        .for_update()
        .first::<String>(conn)
        .optional()?;
    Ok(())
}
