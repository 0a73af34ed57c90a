use actix_web::web;
use serde::Serialize;

use super::{AppState, Claims, authorise};
use crate::error::ApiError;
use crate::repo::{Db, usage};
use crate::wire::UsageReport;

#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = UsageStatus)]
pub struct Answer {
    #[schema(value_type = Vec<String>)]
    features: &'static [&'static str],
    #[serde(flatten)]
    usage: UsageReport,
}

/// `GET /api/usage/status`: today's usage against the plan, with the plan's features.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn status(
    state: web::Data<AppState>,
    db: web::Data<Db>,
    Claims(claims): Claims,
) -> Result<web::Json<Answer>, ApiError> {
    let auth = authorise(&state, &db, claims).await?;
    let now = state.clock.now();
    let plan = auth.licence.plan();
    let day = domain::licensing::quota_day(now);
    let used = usage::used(&db, &auth.licence.id, day).await?;
    Ok(web::Json(Answer {
        features: plan.features(),
        usage: UsageReport::new(plan, used, now),
    }))
}
