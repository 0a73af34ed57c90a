//! Fixed-window rate limits in Postgres, so that every nutrition-api replica counts the same
//! requests: one atomic upsert per check, no read-then-write.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use session::UserId;

use crate::repo::Conn;
use diesel::sql_types::{Integer, Text, Timestamptz};

#[derive(QueryableByName)]
struct Counted {
    #[diesel(sql_type = Integer)]
    count: i32,
    #[diesel(sql_type = Timestamptz)]
    window_start: DateTime<Utc>,
}

/// Counts a test push of `user_id`; `Err(seconds)` when it is over `max` in the current window of
/// `window_secs`, with the time until that window ends (rounded up, so that a client waiting that
/// long finds it over).
pub(crate) async fn hit_test_push_in(
    conn: &mut Conn,
    user_id: &UserId,
    max: u32,
    window_secs: u32,
) -> QueryResult<Result<(), u64>> {
    let counted: Counted = diesel::sql_query(
        "INSERT INTO nutrition.test_push_limit AS r (user_id, count, window_start)
         VALUES ($1, 1, clock_timestamp())
         ON CONFLICT (user_id) DO UPDATE SET
           count = CASE WHEN r.window_start <= clock_timestamp() - make_interval(secs => $2)
                        THEN 1 ELSE r.count + 1 END,
           window_start = CASE WHEN r.window_start <= clock_timestamp() - make_interval(secs => $2)
                        THEN clock_timestamp() ELSE r.window_start END
         RETURNING count, window_start",
    )
    .bind::<Text, _>(user_id)
    .bind::<Integer, _>(i32::try_from(window_secs).unwrap_or(i32::MAX))
    .get_result(conn)
    .await?;
    if u32::try_from(counted.count).unwrap_or(u32::MAX) <= max {
        return Ok(Ok(()));
    }
    let ends = counted.window_start + chrono::Duration::seconds(i64::from(window_secs));
    let left = (ends - Utc::now()).num_milliseconds().max(0);
    Ok(Err(u64::try_from((left + 999) / 1000).unwrap_or(1).max(1)))
}
