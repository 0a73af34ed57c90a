use actix_web::{HttpResponse, web};
use chrono::Utc;
use domain::stats::{FastSpan, compute};
use session::CurrentSession;

use crate::error::ApiError;
use crate::repo::{fasts, profile};
use crate::state::AppState;

/// `GET /me/fasting/stats`: see `domain::stats` for every rule.
pub async fn stats(
    current: CurrentSession,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let user_id = current.0.user.id;
    let (rows, pauses) = nutrition_store::run(&state.pool, move |conn| {
        Ok::<_, ApiError>((
            fasts::spans(conn, &user_id)?,
            profile::pauses(conn, &user_id)?,
        ))
    })
    .await?;
    let spans: Vec<FastSpan> = rows
        .iter()
        .filter_map(|(status, started_at, ended_at)| {
            Some(FastSpan {
                status: status.parse().ok()?,
                started_at: *started_at,
                ended_at: *ended_at,
            })
        })
        .collect();
    Ok(HttpResponse::Ok().json(compute(&spans, &pauses, Utc::now())))
}
