use actix_web::{HttpResponse, web};
use chrono::{NaiveDate, Utc};
use domain::body::WATER_ML;
use serde::{Deserialize, Serialize};
use service_kit::http::Json;
use session::CurrentUser;

use crate::error::{ApiError, invalid};
use crate::input::{MaybeIdempotencyKey, query_day};
use crate::repo::Repo;
use crate::repo::idempotency::Guarded;
use crate::repo::profile;
use crate::repo::water::{self, AddOutcome, Drink};
use crate::routes::retried;

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AddWater {
    /// 50 to 2000.
    #[schema(minimum = 50, maximum = 2000)]
    ml: i64,
}

/// `POST /me/water`: a drink, now.
pub async fn add(
    me: CurrentUser,
    repo: web::Data<Repo>,
    key: MaybeIdempotencyKey,
    body: Json<AddWater>,
) -> Result<HttpResponse, ApiError> {
    let ml = i32::try_from(body.into_inner().ml)
        .ok()
        .filter(|ml| WATER_ML.contains(ml))
        .ok_or_else(|| invalid("ml", "must be a whole number from 50 to 2000"))?;
    match water::add(&repo, me.id(), ml, Utc::now(), key.0.as_ref()).await? {
        Guarded::Fresh(AddOutcome::Added(drink)) => Ok(HttpResponse::Created().json(drink)),
        Guarded::Fresh(AddOutcome::DailyLimit) => Err(ApiError::Unprocessable {
            code: "DAILY_LIMIT_REACHED",
            message: "at most 50 drinks may be recorded on one day",
        }),
        again => retried(again),
    }
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DayQuery {
    /// A Rome date; defaults to today.
    #[param(value_type = Option<String>, format = Date)]
    date: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WaterDay {
    #[schema(value_type = String, format = Date)]
    date: NaiveDate,
    total_ml: i64,
    goal_ml: i32,
    /// Earliest first.
    items: Vec<Drink>,
}

/// `GET /me/water?date=`: the drinks of a day, their total and the goal.
pub async fn day(
    me: CurrentUser,
    repo: web::Data<Repo>,
    query: web::Query<DayQuery>,
) -> Result<HttpResponse, ApiError> {
    let date = query_day("date", query.date.as_deref())?
        .unwrap_or_else(|| domain::rome::local_date(Utc::now()));
    let user_id = me.id();
    let items = water::day(&repo, user_id, date).await?;
    let p = profile::get(&repo, user_id).await?;
    Ok(HttpResponse::Ok().json(WaterDay {
        date,
        total_ml: items.iter().map(|d| i64::from(d.ml)).sum(),
        goal_ml: p.water_goal_ml,
        items,
    }))
}

/// `DELETE /me/water/<id>`.
pub async fn delete(
    me: CurrentUser,
    repo: web::Data<Repo>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    if water::delete(&repo, me.id(), &path.into_inner()).await? {
        Ok(HttpResponse::NoContent().finish())
    } else {
        Err(ApiError::NotFound)
    }
}
