//! Rows of `auth.passkey`: the WebAuthn credentials a user registered, each as the verifier
//! keeps it (`credential`) and as the list shows it (the other columns).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use pg_store::schema::auth::passkey;
use serde::Serialize;
use session::UserId;
use utoipa::ToSchema;

use crate::passkey::Registered;

/// A passkey as better-auth's `list-user-passkeys` answers it.
#[derive(Debug, Queryable, Selectable, Serialize, ToSchema)]
#[diesel(table_name = passkey, check_for_backend(diesel::pg::Pg))]
#[serde(rename_all = "camelCase")]
#[schema(as = Passkey)]
pub struct Listed {
    pub id: String,
    #[schema(required = true)]
    pub name: Option<String>,
    /// The public key's raw bytes, base64.
    pub public_key: String,
    #[schema(value_type = String)]
    pub user_id: UserId,
    /// The credential's id, base64url as WebAuthn sends it.
    #[serde(rename = "credentialID")]
    pub credential_id: String,
    pub counter: i64,
    /// `singleDevice`, or `multiDevice` for a key a backup can carry to other devices.
    pub device_type: String,
    pub backed_up: bool,
    /// Comma-separated (`internal`, `hybrid`, `usb`, …), as the browser reported them.
    #[schema(required = true)]
    pub transports: Option<String>,
    #[serde(serialize_with = "service_kit::time::serialize")]
    pub created_at: DateTime<Utc>,
    /// Not kept: attestation is not asked for, so the authenticator's model is unknown.
    #[schema(required = true)]
    pub aaguid: Option<String>,
}

/// The user's passkeys, oldest first.
pub fn list(conn: &mut PgConnection, user_id: &UserId) -> QueryResult<Vec<Listed>> {
    passkey::table
        .filter(passkey::user_id.eq(user_id))
        .order((passkey::created_at, passkey::id))
        .select(Listed::as_select())
        .load(conn)
}

/// The user's credential ids and transports: what a ceremony's options name.
pub fn credentials(
    conn: &mut PgConnection,
    user_id: &UserId,
) -> QueryResult<Vec<(String, Option<String>)>> {
    passkey::table
        .filter(passkey::user_id.eq(user_id))
        .order(passkey::created_at)
        .select((passkey::credential_id, passkey::transports))
        .load(conn)
}

/// Stores a registered passkey for `user_id`, unless the account already holds
/// [`crate::passkey::MAX_PER_USER`] (`Ok(Err(()))`) or the credential is registered already
/// (`Ok(Ok(None))`). Callers run it in a transaction, and the user's row is locked first, so that
/// parallel registrations cannot pass the limit together.
pub fn insert(
    conn: &mut PgConnection,
    user_id: &UserId,
    name: Option<&str>,
    key: &Registered,
    now: DateTime<Utc>,
) -> QueryResult<Result<Option<Listed>, ()>> {
    use pg_store::schema::auth::user;
    user::table
        .find(user_id)
        .select(user::id)
        .for_update()
        .first::<String>(conn)
        .optional()?;
    let held: i64 = passkey::table
        .filter(passkey::user_id.eq(user_id))
        .count()
        .get_result(conn)?;
    if held >= crate::passkey::MAX_PER_USER {
        return Ok(Err(()));
    }
    let row = diesel::insert_into(passkey::table)
        .values((
            passkey::id.eq(session::ids::id()),
            passkey::user_id.eq(user_id),
            passkey::name.eq(name),
            passkey::credential_id.eq(&key.credential_id),
            passkey::public_key.eq(&key.public_key),
            passkey::credential.eq(&key.credential),
            passkey::counter.eq(key.counter),
            passkey::device_type.eq(key.device_type),
            passkey::backed_up.eq(key.backed_up),
            passkey::transports.eq(key.transports.as_deref()),
            passkey::created_at.eq(now),
        ))
        .on_conflict(passkey::credential_id)
        .do_nothing()
        .returning(Listed::as_returning())
        .get_result(conn)
        .optional()?;
    Ok(Ok(row))
}

/// The passkey with `credential_id`: its id, owner and the verifier's record, locked until the
/// transaction ends, so that parallel sign-ins with one key update its counter one after the
/// other.
pub fn find_for_sign_in(
    conn: &mut PgConnection,
    credential_id: &str,
) -> QueryResult<Option<(String, UserId, serde_json::Value)>> {
    passkey::table
        .filter(passkey::credential_id.eq(credential_id))
        .select((passkey::id, passkey::user_id, passkey::credential))
        .for_update()
        .first(conn)
        .optional()
}

/// What a sign-in taught the verifier about the key (its counter, its backup state).
pub fn update_after_sign_in(
    conn: &mut PgConnection,
    id: &str,
    key: &Registered,
) -> QueryResult<usize> {
    diesel::update(passkey::table.find(id))
        .set((
            passkey::credential.eq(&key.credential),
            passkey::counter.eq(key.counter),
            passkey::backed_up.eq(key.backed_up),
        ))
        .execute(conn)
}

/// Renames the user's passkey `id`; none when the user has no such passkey.
pub fn rename(
    conn: &mut PgConnection,
    user_id: &UserId,
    id: &str,
    name: &str,
) -> QueryResult<Option<Listed>> {
    diesel::update(
        passkey::table
            .filter(passkey::id.eq(id))
            .filter(passkey::user_id.eq(user_id)),
    )
    .set(passkey::name.eq(name))
    .returning(Listed::as_returning())
    .get_result(conn)
    .optional()
}

/// Deletes the user's passkey `id`; whether there was one.
pub fn delete(conn: &mut PgConnection, user_id: &UserId, id: &str) -> QueryResult<bool> {
    diesel::delete(
        passkey::table
            .filter(passkey::id.eq(id))
            .filter(passkey::user_id.eq(user_id)),
    )
    .execute(conn)
    .map(|n| n > 0)
}
