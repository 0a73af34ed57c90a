//! `nutrition.water`: the drinks of each Rome day.

use chrono::{DateTime, NaiveDate, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use domain::body::MAX_WATER_PER_DAY;
use pg_store::schema::nutrition::water;
use serde::Serialize;
use service_kit::db::DbError;
use session::UserId;

use crate::input::IdempotencyKey;
use crate::repo::Repo;
use crate::repo::idempotency::{Answer, Guarded, run};

#[derive(Debug, Clone, Queryable, Selectable, Serialize, utoipa::ToSchema)]
#[diesel(table_name = water, check_for_backend(diesel::pg::Pg))]
pub struct Drink {
    pub id: String,
    pub ml: i32,
    #[serde(serialize_with = "service_kit::time::serialize")]
    pub at: DateTime<Utc>,
}

/// What adding a drink came to.
pub enum AddOutcome {
    Added(Drink),
    /// [`MAX_WATER_PER_DAY`] drinks already on that day.
    DailyLimit,
}

/// Records a drink of `ml` at `at`. The count of the day and the insert are one transaction
/// under the user's lock, so that parallel requests cannot pass the daily limit together.
pub async fn add(
    repo: &Repo,
    user_id: &UserId,
    ml: i32,
    at: DateTime<Utc>,
    key: Option<&IdempotencyKey>,
) -> Result<Guarded<AddOutcome>, DbError> {
    let day = domain::rome::local_date(at);
    run(
        repo,
        user_id,
        key,
        at,
        async |conn| {
            conn.transaction(async |conn| {
                crate::repo::lock_user(conn, user_id).await?;
                let that_day: i64 = water::table
                    .filter(water::user_id.eq(user_id))
                    .filter(water::day.eq(day))
                    .count()
                    .get_result(conn)
                    .await?;
                if that_day >= MAX_WATER_PER_DAY {
                    return Ok(AddOutcome::DailyLimit);
                }
                let drink = diesel::insert_into(water::table)
                    .values((
                        water::id.eq(session::ids::id()),
                        water::user_id.eq(user_id),
                        water::ml.eq(ml),
                        water::at.eq(at),
                        water::day.eq(day),
                        water::created_at.eq(at),
                    ))
                    .returning(Drink::as_returning())
                    .get_result(conn)
                    .await?;
                Ok(AddOutcome::Added(drink))
            })
            .await
        },
        |o| match o {
            AddOutcome::Added(d) => Some(Answer::json(201, d)),
            AddOutcome::DailyLimit => None,
        },
    )
    .await
}

/// The drinks of a Rome day, earliest first.
pub async fn day(repo: &Repo, user_id: &UserId, day: NaiveDate) -> Result<Vec<Drink>, DbError> {
    repo.with(async |conn| {
        water::table
            .filter(water::user_id.eq(user_id))
            .filter(water::day.eq(day))
            .select(Drink::as_select())
            .order((water::at.asc(), water::id.asc()))
            .load(conn)
            .await
    })
    .await
}

/// Deletes a drink of the user; whether there was one.
pub async fn delete(repo: &Repo, user_id: &UserId, id: &str) -> Result<bool, DbError> {
    repo.with(async |conn| {
        let gone = diesel::delete(
            water::table
                .filter(water::id.eq(id))
                .filter(water::user_id.eq(user_id)),
        )
        .execute(conn)
        .await?;
        Ok(gone > 0)
    })
    .await
}
