//! Fixed-window rate limits in Postgres, so that every auth replica counts the same attempts.
//!
//! One atomic upsert per check: the row's window restarts when it has run out, otherwise the
//! count grows. No read-then-write, so parallel requests on several replicas count exactly.

use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::query_builder::AstPass;
use diesel::sql_types::{Integer, Nullable, Text, Timestamptz};
use service_kit::fixed::{PushBind, fixed};
use session::UserId;

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
pub const EMAIL_ROUTES: [&str; 6] = [
    "sign-in",
    "sign-in-failure",
    "sign-up",
    "send-verification-email",
    "request-password-reset",
    "mail-day",
];
pub const USER_ROUTES: [&str; 2] = ["change-password", "delete-user"];

/// Every counter key that can be linked to the person with this address and id, removed when
/// they are erased. The keys are keyed hashes, so only someone who knows both can find them.
pub fn keys_naming(secret: &str, email: &str, user_id: &UserId) -> Vec<String> {
    let by_email = EMAIL_ROUTES
        .iter()
        .map(|r| crate::keys::rate_limit_key(secret, r, "email", email));
    let by_user = USER_ROUTES
        .iter()
        .map(|r| crate::keys::rate_limit_key(secret, r, "user", user_id.as_str()));
    by_email.chain(by_user).collect()
}

/// The upsert that counts one attempt under a key: the row's window restarts when it has run out
/// (binds: the key, then the window's seconds twice).
macro_rules! count_attempt {
    () => {
        "INSERT INTO auth.rate_limit AS r (key, count, window_start) VALUES (?, 1, clock_timestamp())
         ON CONFLICT (key) DO UPDATE SET
           count = CASE WHEN r.window_start <= clock_timestamp() - make_interval(secs => ?)
                        THEN 1 ELSE r.count + 1 END,
           window_start = CASE WHEN r.window_start <= clock_timestamp() - make_interval(secs => ?)
                        THEN clock_timestamp() ELSE r.window_start END
         RETURNING count, window_start"
    };
}

/// The count under a key in its live window, counting nothing (binds: the key, the window's
/// seconds).
macro_rules! live_count {
    () => {
        "SELECT count, window_start FROM auth.rate_limit
         WHERE key = ? AND window_start > clock_timestamp() - make_interval(secs => ?)"
    };
}

/// A sign-in's own checks in one statement: the attempt counted against the client's address,
/// and two live counts read.
const SIGN_IN_GATE: &str = concat!(
    "WITH a AS (",
    count_attempt!(),
    "), p AS (",
    live_count!(),
    "), e AS (",
    live_count!(),
    ") SELECT a.count AS counted, a.window_start AS counted_start,
              p.count AS read, p.window_start AS read_start,
              e.count AS also_read, e.window_start AS also_read_start
       FROM a LEFT JOIN p ON TRUE LEFT JOIN e ON TRUE"
);

/// A value bound into one of this module's statements.
enum Bind {
    Text(String),
    Int(i32),
}

impl PushBind<Pg> for Bind {
    fn push_bind<'b>(&'b self, out: &mut AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        match self {
            Bind::Text(v) => out.push_bind_param::<Text, _>(v),
            Bind::Int(v) => out.push_bind_param::<Integer, _>(v),
        }
    }
}

fn window(secs: u32) -> Bind {
    Bind::Int(i32::try_from(secs).unwrap_or(i32::MAX))
}

/// Counts an attempt under `key`; `Err(seconds)` when it exceeds the limit, with the time until
/// the window ends.
pub fn hit(conn: &mut PgConnection, key: &str, limit: RateLimit) -> QueryResult<Result<(), u64>> {
    let counted: Counted = fixed(
        count_attempt!(),
        vec![
            Bind::Text(key.to_owned()),
            window(limit.window_secs),
            window(limit.window_secs),
        ],
    )
    .get_result(conn)?;
    Ok(verdict(counted.count, counted.window_start, limit))
}

fn verdict(
    count: i32,
    window_start: chrono::DateTime<chrono::Utc>,
    limit: RateLimit,
) -> Result<(), u64> {
    if u32::try_from(count).unwrap_or(u32::MAX) <= limit.max {
        return Ok(());
    }
    Err(seconds_left(window_start, limit.window_secs))
}

fn live(count: i32, window_start: chrono::DateTime<chrono::Utc>, window_secs: u32) -> (u32, u64) {
    let count = u32::try_from(count).unwrap_or(0);
    (count, seconds_left(window_start, window_secs))
}

#[derive(QueryableByName)]
struct GateRow {
    #[diesel(sql_type = Integer)]
    counted: i32,
    #[diesel(sql_type = Timestamptz)]
    counted_start: chrono::DateTime<chrono::Utc>,
    #[diesel(sql_type = Nullable<Integer>)]
    read: Option<i32>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    read_start: Option<chrono::DateTime<chrono::Utc>>,
    #[diesel(sql_type = Nullable<Integer>)]
    also_read: Option<i32>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    also_read_start: Option<chrono::DateTime<chrono::Utc>>,
}

/// What [`count_one_read_two`] found.
pub struct Gate {
    /// [`hit`]'s verdict for the counted key.
    pub counted: Result<(), u64>,
    /// For each read key, in the order given, its count in the live window and the seconds until
    /// that window ends; `None` when there is no live window.
    pub read: [Option<(u32, u64)>; 2],
}

/// [`hit`] on one key and the live counts of two others, read without counting, in one
/// statement and one round trip: a sign-in's checks of its own client. The three keys must differ.
pub fn count_one_read_two(
    conn: &mut PgConnection,
    counted: (&str, RateLimit),
    read: [(&str, u32); 2],
) -> QueryResult<Gate> {
    let mut binds = Vec::with_capacity(7);
    binds.extend([
        Bind::Text(counted.0.to_owned()),
        window(counted.1.window_secs),
        window(counted.1.window_secs),
    ]);
    for (key, window_secs) in read {
        binds.extend([Bind::Text(key.to_owned()), window(window_secs)]);
    }
    let row: GateRow = fixed(SIGN_IN_GATE, binds).get_result(conn)?;
    let read_one = |count: Option<i32>, start, window_secs| Some(live(count?, start?, window_secs));
    Ok(Gate {
        counted: verdict(row.counted, row.counted_start, counted.1),
        read: [
            read_one(row.read, row.read_start, read[0].1),
            read_one(row.also_read, row.also_read_start, read[1].1),
        ],
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use diesel::query_builder::QueryFragment;

    /// Each statement stays prepared on its connection, and every `?` of its text gets a value.
    #[test]
    fn the_statements_are_cacheable_with_a_value_for_each_placeholder() {
        let key = || Bind::Text("k".into());
        let statements = [
            fixed(count_attempt!(), vec![key(), window(60), window(60)]),
            fixed(
                SIGN_IN_GATE,
                vec![
                    key(),
                    window(60),
                    window(60),
                    key(),
                    window(60),
                    key(),
                    window(60),
                ],
            ),
        ];
        for q in statements {
            assert!(matches!(q.is_safe_to_cache_prepared(&Pg), Ok(true)));
        }
    }
}
