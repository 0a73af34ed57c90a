use actix_web::web;

use super::{AppState, Claims, authorise};
use crate::error::ApiError;
use crate::repo::usage;
use crate::wire::UsageReport;

/// `POST /api/usage/consume`: takes one unit of today's (Europe/Rome) quota of the licence's
/// current plan, or answers 429 with the same report once it is used up.
#[tracing::instrument(skip_all)]
pub async fn consume(
    state: web::Data<AppState>,
    Claims(claims): Claims,
) -> Result<web::Json<UsageReport>, ApiError> {
    let auth = authorise(&state, claims).await?;
    let now = state.clock.now();
    let plan = auth.licence.plan();
    let day = domain::licensing::quota_day(now);
    let (taken, used) = service_kit::db::run(&state.pool, move |conn| {
        usage::consume(conn, &auth.licence.id, day, plan.daily_quota()).map_err(ApiError::from)
    })
    .await?;
    let report = UsageReport::new(plan, used, now);
    if taken {
        Ok(web::Json(report))
    } else {
        Err(ApiError::QuotaExceeded(report))
    }
}
