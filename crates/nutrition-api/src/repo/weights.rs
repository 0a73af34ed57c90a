//! `nutrition.weight`: one weight per person and Rome day.

use chrono::{DateTime, NaiveDate, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use pg_store::schema::nutrition::weight;
use serde::Serialize;
use service_kit::db::DbError;
use session::UserId;

use crate::input::IdempotencyKey;
use crate::repo::idempotency::{Answer, Guarded, run};
use crate::repo::{Conn, Repo};

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = weight, check_for_backend(diesel::pg::Pg))]
pub struct WeightRow {
    pub id: String,
    pub measured_on: NaiveDate,
    pub weight_hg: i32,
    pub note: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// A weight on the wire.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Weight {
    pub id: String,
    /// Kilograms, one decimal.
    pub kg: f64,
    #[schema(value_type = String, format = Date)]
    pub measured_on: NaiveDate,
    #[schema(required = true)]
    pub note: Option<String>,
    #[serde(serialize_with = "service_kit::time::serialize")]
    pub created_at: DateTime<Utc>,
}

impl From<WeightRow> for Weight {
    fn from(r: WeightRow) -> Self {
        Self {
            id: r.id,
            kg: domain::body::kilograms(r.weight_hg),
            measured_on: r.measured_on,
            note: r.note,
            created_at: r.created_at,
        }
    }
}

/// A recorded weight, and whether it replaced that day's earlier one.
pub struct Recorded {
    pub row: WeightRow,
    pub replaced: bool,
}

/// Records the weight of a day; a second one on the same day replaces the first (a new id, so
/// that a client holding the old one cannot delete the new).
pub async fn record(
    repo: &Repo,
    user_id: &UserId,
    measured_on: NaiveDate,
    weight_hg: i32,
    note: Option<String>,
    key: Option<&IdempotencyKey>,
) -> Result<Guarded<Recorded>, DbError> {
    let now = Utc::now();
    run(
        repo,
        user_id,
        key,
        now,
        async |conn| {
            conn.transaction(async |conn| {
                let replaced = diesel::delete(
                    weight::table
                        .filter(weight::user_id.eq(user_id))
                        .filter(weight::measured_on.eq(measured_on)),
                )
                .execute(conn)
                .await?
                    > 0;
                // A parallel record of the same day waits on the unique index and then
                // finds this row: it replaces it in its own turn.
                let row = diesel::insert_into(weight::table)
                    .values((
                        weight::id.eq(session::ids::id()),
                        weight::user_id.eq(user_id),
                        weight::measured_on.eq(measured_on),
                        weight::weight_hg.eq(weight_hg),
                        weight::note.eq(&note),
                        weight::created_at.eq(now),
                    ))
                    .on_conflict((weight::user_id, weight::measured_on))
                    .do_update()
                    .set((
                        weight::id.eq(session::ids::id()),
                        weight::weight_hg.eq(weight_hg),
                        weight::note.eq(&note),
                        weight::created_at.eq(now),
                    ))
                    .returning(WeightRow::as_returning())
                    .get_result(conn)
                    .await?;
                Ok(Recorded { row, replaced })
            })
            .await
        },
        |r| {
            Some(Answer::json(
                if r.replaced { 200 } else { 201 },
                &Weight::from(r.row.clone()),
            ))
        },
    )
    .await
}

/// The user's weights from `from` to `to` (both included, either open), oldest first, at most
/// `limit`.
pub(crate) async fn list_in(
    conn: &mut Conn,
    user_id: &UserId,
    from: Option<NaiveDate>,
    to: Option<NaiveDate>,
    limit: i64,
) -> QueryResult<Vec<WeightRow>> {
    let mut q = weight::table
        .filter(weight::user_id.eq(user_id))
        .select(WeightRow::as_select())
        .order(weight::measured_on.asc())
        .limit(limit)
        .into_boxed();
    if let Some(from) = from {
        q = q.filter(weight::measured_on.ge(from));
    }
    if let Some(to) = to {
        q = q.filter(weight::measured_on.le(to));
    }
    q.load(conn).await
}

/// The weights of a range, the days before it that its first trend points average over, and the
/// latest weight of all.
pub struct History {
    pub rows: Vec<WeightRow>,
    pub latest: Option<WeightRow>,
}

pub async fn history(
    repo: &Repo,
    user_id: &UserId,
    from: Option<NaiveDate>,
    to: Option<NaiveDate>,
    limit: i64,
) -> Result<History, DbError> {
    repo.with(async |conn| {
        let rows = list_in(conn, user_id, from, to, limit).await?;
        let latest = weight::table
            .filter(weight::user_id.eq(user_id))
            .select(WeightRow::as_select())
            .order(weight::measured_on.desc())
            .first(conn)
            .await
            .optional()?;
        Ok(History { rows, latest })
    })
    .await
}

/// Deletes a weight of the user; whether there was one.
pub async fn delete(repo: &Repo, user_id: &UserId, id: &str) -> Result<bool, DbError> {
    repo.with(async |conn| {
        let gone = diesel::delete(
            weight::table
                .filter(weight::id.eq(id))
                .filter(weight::user_id.eq(user_id)),
        )
        .execute(conn)
        .await?;
        Ok(gone > 0)
    })
    .await
}
