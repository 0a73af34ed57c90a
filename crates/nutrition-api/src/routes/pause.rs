use actix_web::{HttpResponse, web};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use service_kit::http::JsonOrEmpty;
use session::CurrentUser;

use crate::error::{ApiError, invalid};
use crate::input::Instant;
use crate::repo::Repo;
use crate::repo::profile;

#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PauseBody {
    /// Absent: the next day at 06:00 Rome; `null`: the pause ends now.
    #[serde(default, deserialize_with = "service_kit::http::double_option")]
    #[schema(value_type = Option<chrono::DateTime<chrono::Utc>>)]
    until: Option<Option<Instant>>,
}

fn view(until: Option<DateTime<Utc>>, now: DateTime<Utc>) -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({
        "fastingPausedUntil": until.map(|t| service_kit::time::format(&t)),
        "paused": until.is_some_and(|t| t > now),
    }))
}

/// `POST /me/fasting/pause`: a free day. Fasting notifications are skipped while paused, and
/// paused days neither break nor extend a streak.
pub async fn set(
    me: CurrentUser,
    repo: web::Data<Repo>,
    body: JsonOrEmpty<PauseBody>,
) -> Result<HttpResponse, ApiError> {
    let now = Utc::now();
    let until = match body.0.until {
        Some(None) => None,
        requested => Some(
            domain::fasting::pause_until(now, requested.flatten().map(|t| t.0))
                .map_err(|e| invalid("until", e))?,
        ),
    };
    let user_id = me.id();
    let p = profile::set_pause(&repo, user_id, until, now).await?;
    Ok(view(p.fasting_paused_until, now))
}

/// `GET /me/fasting/pause`.
pub async fn get(me: CurrentUser, repo: web::Data<Repo>) -> Result<HttpResponse, ApiError> {
    let user_id = me.id();
    let p = profile::get(&repo, user_id).await?;
    Ok(view(p.fasting_paused_until, Utc::now()))
}
