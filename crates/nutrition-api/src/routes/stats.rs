use actix_web::{HttpResponse, web};
use chrono::Utc;
use domain::stats::{FastSpan, compute};
use session::CurrentUser;

use crate::error::ApiError;
use crate::repo::{Repo, fasts};

/// `GET /me/fasting/stats`: see `domain::stats` for every rule.
pub async fn stats(me: CurrentUser, repo: web::Data<Repo>) -> Result<HttpResponse, ApiError> {
    let user_id = me.id();
    let (rows, pauses) = fasts::history(&repo, user_id).await?;
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
