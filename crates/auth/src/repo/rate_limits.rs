//! Fixed-window rate limits in Postgres, so that every auth replica counts the same attempts.
//!
//! One atomic upsert per check: the row's window restarts when it has run out, otherwise the
//! count grows. No read-then-write, so parallel requests on several replicas count exactly.

use diesel::prelude::*;
use diesel::sql_types::{Integer, Text, Timestamptz};

use crate::settings::RateLimit;

#[derive(QueryableByName)]
struct Counted {
    #[diesel(sql_type = Integer)]
    count: i32,
    #[diesel(sql_type = Timestamptz)]
    window_start: chrono::DateTime<chrono::Utc>,
}

/// The routes whose attempts are also counted per e-mail address (`AppState::limit` with an
/// `"email"` subject), and those counted per user id. A route added there belongs here too, so
/// that erasure finds its counters.
/// (Failed sign-ins per address and e-mail address are keyed on both, so they cannot be found
/// without the address; like every counter they are deleted a day after their window.)
pub const EMAIL_ROUTES: [&str; 5] = [
    "sign-in",
    "sign-in-failure",
    "sign-up",
    "send-verification-email",
    "request-password-reset",
];
pub const USER_ROUTES: [&str; 1] = ["change-password"];

/// Every counter key that can be linked to the person with this address and id, removed when
/// they are erased. The keys are keyed hashes, so only someone who knows both can find them.
pub fn keys_naming(secret: &str, email: &str, user_id: &str) -> Vec<String> {
    let by_email = EMAIL_ROUTES
        .iter()
        .map(|r| crate::keys::rate_limit_key(secret, r, "email", email));
    let by_user = USER_ROUTES
        .iter()
        .map(|r| crate::keys::rate_limit_key(secret, r, "user", user_id));
    by_email.chain(by_user).collect()
}

/// Counts an attempt under `key`; `Err(seconds)` when it exceeds the limit, with the time until
/// the window ends.
pub fn hit(conn: &mut PgConnection, key: &str, limit: RateLimit) -> QueryResult<Result<(), u64>> {
    let counted: Counted = diesel::sql_query(
        "INSERT INTO auth.rate_limit AS r (key, count, window_start) VALUES ($1, 1, clock_timestamp())
         ON CONFLICT (key) DO UPDATE SET
           count = CASE WHEN r.window_start <= clock_timestamp() - make_interval(secs => $2)
                        THEN 1 ELSE r.count + 1 END,
           window_start = CASE WHEN r.window_start <= clock_timestamp() - make_interval(secs => $2)
                        THEN clock_timestamp() ELSE r.window_start END
         RETURNING count, window_start",
    )
    .bind::<Text, _>(key)
    .bind::<Integer, _>(i32::try_from(limit.window_secs).unwrap_or(i32::MAX))
    .get_result(conn)?;
    if u32::try_from(counted.count).unwrap_or(u32::MAX) <= limit.max {
        return Ok(Ok(()));
    }
    Ok(Err(seconds_left(counted.window_start, limit.window_secs)))
}

/// The count under `key` in its current window, and the seconds until that window ends; without
/// counting anything. `None` when there is no live window.
pub fn peek(
    conn: &mut PgConnection,
    key: &str,
    window_secs: u32,
) -> QueryResult<Option<(u32, u64)>> {
    let counted: Option<Counted> = diesel::sql_query(
        "SELECT count, window_start FROM auth.rate_limit
         WHERE key = $1 AND window_start > clock_timestamp() - make_interval(secs => $2)",
    )
    .bind::<Text, _>(key)
    .bind::<Integer, _>(i32::try_from(window_secs).unwrap_or(i32::MAX))
    .get_result(conn)
    .optional()?;
    Ok(counted.map(|c| {
        let count = u32::try_from(c.count).unwrap_or(0);
        (count, seconds_left(c.window_start, window_secs))
    }))
}

fn seconds_left(window_start: chrono::DateTime<chrono::Utc>, window_secs: u32) -> u64 {
    let ends = window_start + chrono::Duration::seconds(i64::from(window_secs));
    let left = (ends - chrono::Utc::now()).num_milliseconds().max(0);
    // Round up: a client waiting the advertised time must find the window over.
    u64::try_from((left + 999) / 1000).unwrap_or(1).max(1)
}

/// Drops counters whose window ended long ago.
pub fn prune(conn: &mut PgConnection) -> QueryResult<usize> {
    diesel::sql_query("DELETE FROM auth.rate_limit WHERE window_start < now() - interval '1 day'")
        .execute(conn)
}
