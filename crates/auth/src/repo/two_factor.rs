//! Rows of `auth.two_factor`: one per user who began setting up two-factor sign-in.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use pg_store::schema::auth::two_factor;
use session::UserId;

#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = two_factor, check_for_backend(diesel::pg::Pg))]
pub struct Row {
    /// Sealed with [`crate::keys::seal`].
    pub secret: String,
    /// Keyed digests of the unused backup codes.
    pub backup_codes: Vec<String>,
    pub verified: bool,
}

pub fn find(conn: &mut PgConnection, user_id: &UserId) -> QueryResult<Option<Row>> {
    two_factor::table
        .filter(two_factor::user_id.eq(user_id))
        .select(Row::as_select())
        .first(conn)
        .optional()
}

/// [`find`], the row locked until the transaction ends: parallel checks of one user's codes
/// are weighed one after the other, so a backup code is spent once.
pub fn find_for_update(conn: &mut PgConnection, user_id: &UserId) -> QueryResult<Option<Row>> {
    two_factor::table
        .filter(two_factor::user_id.eq(user_id))
        .select(Row::as_select())
        .for_update()
        .first(conn)
        .optional()
}

/// Stores a new unverified secret and codes, in place of an unverified set.
pub fn replace_unverified(
    conn: &mut PgConnection,
    user_id: &UserId,
    sealed_secret: &str,
    backup_codes: &[String],
    now: DateTime<Utc>,
) -> QueryResult<()> {
    diesel::insert_into(two_factor::table)
        .values((
            two_factor::id.eq(session::ids::id()),
            two_factor::user_id.eq(user_id),
            two_factor::secret.eq(sealed_secret),
            two_factor::backup_codes.eq(backup_codes),
            two_factor::verified.eq(false),
            two_factor::created_at.eq(now),
        ))
        .on_conflict(two_factor::user_id)
        .do_update()
        .set((
            two_factor::secret.eq(sealed_secret),
            two_factor::backup_codes.eq(backup_codes),
            two_factor::verified.eq(false),
            two_factor::failed_verification_count.eq(0),
            two_factor::locked_until.eq(None::<DateTime<Utc>>),
            two_factor::created_at.eq(now),
        ))
        .execute(conn)?;
    Ok(())
}

pub fn mark_verified(conn: &mut PgConnection, user_id: &UserId) -> QueryResult<usize> {
    diesel::update(two_factor::table.filter(two_factor::user_id.eq(user_id)))
        .set(two_factor::verified.eq(true))
        .execute(conn)
}

pub fn set_backup_codes(
    conn: &mut PgConnection,
    user_id: &UserId,
    backup_codes: &[String],
) -> QueryResult<usize> {
    diesel::update(two_factor::table.filter(two_factor::user_id.eq(user_id)))
        .set(two_factor::backup_codes.eq(backup_codes))
        .execute(conn)
}

/// Until when the user's sign-in verifications are locked, if they ever were.
pub fn locked_until(
    conn: &mut PgConnection,
    user_id: &UserId,
) -> QueryResult<Option<DateTime<Utc>>> {
    Ok(two_factor::table
        .filter(two_factor::user_id.eq(user_id))
        .select(two_factor::locked_until)
        .first(conn)
        .optional()?
        .flatten())
}

/// Counts a wrong code; the `limit`-th in a row locks verifications until `lock_until` and
/// starts the count again.
pub fn record_failure(
    conn: &mut PgConnection,
    user_id: &UserId,
    limit: i32,
    lock_until: DateTime<Utc>,
) -> QueryResult<()> {
    // A user with mailed codes alone has no row, and no lock-out: each code has its own tries.
    let Some(count): Option<i32> =
        diesel::update(two_factor::table.filter(two_factor::user_id.eq(user_id)))
            .set(
                two_factor::failed_verification_count.eq(two_factor::failed_verification_count + 1),
            )
            .returning(two_factor::failed_verification_count)
            .get_result(conn)
            .optional()?
    else {
        return Ok(());
    };
    if count >= limit {
        diesel::update(two_factor::table.filter(two_factor::user_id.eq(user_id)))
            .set((
                two_factor::failed_verification_count.eq(0),
                two_factor::locked_until.eq(lock_until),
            ))
            .execute(conn)?;
    }
    Ok(())
}

pub fn clear_failures(conn: &mut PgConnection, user_id: &UserId) -> QueryResult<usize> {
    diesel::update(two_factor::table.filter(two_factor::user_id.eq(user_id)))
        .set((
            two_factor::failed_verification_count.eq(0),
            two_factor::locked_until.eq(None::<DateTime<Utc>>),
        ))
        .execute(conn)
}

pub fn delete(conn: &mut PgConnection, user_id: &UserId) -> QueryResult<usize> {
    diesel::delete(two_factor::table.filter(two_factor::user_id.eq(user_id))).execute(conn)
}
