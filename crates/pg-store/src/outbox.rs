//! What `/metrics` reports of an outbox table: how many rows wait and for how long the oldest
//! has waited. auth's mail outbox and push-scheduler's push outbox are read the same way and
//! differ only in which rows count as waiting.

use std::time::Duration;

use diesel::RunQueryDsl;
use diesel::sql_types::{Double, Int8};
use service_kit::metrics::OutboxState;

use crate::PgPool;

/// Depth and oldest age of the rows that `waiting` selects: its `FROM … WHERE …`, over a table
/// with a `created_at` column. A scrape waits at most a second for a connection, so that a
/// drained pool shows as a failed probe instead of a hung `/metrics`.
pub fn state(pool: &PgPool, waiting: &str) -> Result<OutboxState, String> {
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = Int8)]
        pending: i64,
        #[diesel(sql_type = Double)]
        age: f64,
    }
    let mut conn = pool
        .get_timeout(Duration::from_secs(1))
        .map_err(|e| e.to_string())?;
    let row: Row = diesel::sql_query(format!(
        "SELECT count(*)::int8 AS pending,
                COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8 AS age
           {waiting}"
    ))
    .get_result(&mut conn)
    .map_err(|e| e.to_string())?;
    Ok(OutboxState {
        pending: row.pending,
        oldest_age_seconds: row.age.max(0.0),
    })
}
