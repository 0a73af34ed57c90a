use actix_web::{HttpResponse, web};
use chrono::{Duration, NaiveDate, Utc};
use domain::body::{TREND_DAYS, bmi, hectograms, kilograms, trend};
use serde::{Deserialize, Serialize};
use service_kit::http::Json;
use session::CurrentUser;

use crate::error::{ApiError, invalid};
use crate::input::{Day, MaybeIdempotencyKey, query_day};
use crate::repo::Repo;
use crate::repo::idempotency::Guarded;
use crate::repo::profile;
use crate::repo::weights::{self, Weight};
use crate::routes::retried;

/// Longest note on a weight.
const MAX_WEIGHT_NOTE: usize = 500;
/// Most weights one answer lists: ten years of daily weigh-ins.
const MAX_ITEMS: i64 = 3660;

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RecordWeight {
    /// 20.0 to 400.0, at most one decimal.
    #[schema(minimum = 20.0, maximum = 400.0)]
    kg: f64,
    /// A Rome date not in the future; defaults to today.
    #[schema(value_type = Option<String>, format = Date)]
    measured_on: Option<Day>,
    /// At most 500 characters.
    note: Option<String>,
}

/// `POST /me/weights`: 201 with the weight, or 200 when it replaced that day's.
pub async fn record(
    me: CurrentUser,
    repo: web::Data<Repo>,
    key: MaybeIdempotencyKey,
    body: Json<RecordWeight>,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    let hg = hectograms(body.kg)
        .ok_or_else(|| invalid("kg", "must be 20.0 to 400.0 with at most one decimal"))?;
    let today = domain::rome::local_date(Utc::now());
    let measured_on = body.measured_on.map_or(today, |d| d.0);
    if measured_on > today {
        return Err(invalid("measuredOn", "must not be in the future"));
    }
    if body
        .note
        .as_ref()
        .is_some_and(|n| n.chars().count() > MAX_WEIGHT_NOTE)
    {
        return Err(invalid("note", "must be at most 500 characters"));
    }
    let note = body.note.filter(|n| !n.trim().is_empty());
    match weights::record(&repo, me.id(), measured_on, hg, note, key.0.as_ref()).await? {
        Guarded::Fresh(r) => {
            let weight = Weight::from(r.row);
            Ok(if r.replaced {
                HttpResponse::Ok().json(weight)
            } else {
                HttpResponse::Created().json(weight)
            })
        }
        again => retried(again),
    }
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Range {
    /// First day (included).
    #[param(value_type = Option<String>, format = Date)]
    from: Option<String>,
    /// Last day (included).
    #[param(value_type = Option<String>, format = Date)]
    to: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct TrendPoint {
    #[schema(value_type = String, format = Date)]
    date: NaiveDate,
    kg: f64,
}

#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Weights {
    /// Oldest first.
    items: Vec<Weight>,
    /// For each day with a weight, the mean of the weights of the 7 days ending on it.
    trend: Vec<TrendPoint>,
    #[schema(required = true)]
    goal_kg: Option<f64>,
    #[schema(required = true)]
    height_cm: Option<i16>,
    /// Of the latest weight; null without a height.
    #[schema(required = true)]
    bmi: Option<f64>,
}

/// `GET /me/weights?from=&to=`: the weights of the range with their trend, the goal and the BMI.
pub async fn list(
    me: CurrentUser,
    repo: web::Data<Repo>,
    query: web::Query<Range>,
) -> Result<HttpResponse, ApiError> {
    let from = query_day("from", query.from.as_deref())?;
    let to = query_day("to", query.to.as_deref())?;
    if let (Some(from), Some(to)) = (from, to)
        && from > to
    {
        return Err(invalid("to", "must not be before from"));
    }
    // The first days' trend averages over the six days before the range.
    let reach = from.and_then(|f| f.checked_sub_signed(Duration::days(TREND_DAYS - 1)));
    let user_id = me.id();
    let history = weights::history(&repo, user_id, reach, to, MAX_ITEMS + TREND_DAYS).await?;
    let p = profile::get(&repo, user_id).await?;
    let points: Vec<(NaiveDate, i32)> = history
        .rows
        .iter()
        .map(|r| (r.measured_on, r.weight_hg))
        .collect();
    let shown = |d: &NaiveDate| from.is_none_or(|f| *d >= f);
    let trend = trend(&points)
        .into_iter()
        .filter(|(d, _)| shown(d))
        .map(|(date, kg)| TrendPoint { date, kg })
        .collect();
    let items = history
        .rows
        .into_iter()
        .filter(|r| shown(&r.measured_on))
        .map(Weight::from)
        .collect();
    let bmi = match (&history.latest, p.height_cm) {
        (Some(latest), Some(h)) => Some(bmi(latest.weight_hg, h)),
        _ => None,
    };
    Ok(HttpResponse::Ok().json(Weights {
        items,
        trend,
        goal_kg: p.weight_goal_hg.map(kilograms),
        height_cm: p.height_cm,
        bmi,
    }))
}

/// `DELETE /me/weights/<id>`.
pub async fn delete(
    me: CurrentUser,
    repo: web::Data<Repo>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    if weights::delete(&repo, me.id(), &path.into_inner()).await? {
        Ok(HttpResponse::NoContent().finish())
    } else {
        Err(ApiError::NotFound)
    }
}
