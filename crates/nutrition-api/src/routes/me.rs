use actix_web::{HttpResponse, web};
use diesel::prelude::*;
use nutrition_store::schema::nutrition::profile;
use serde::Serialize;
use session::{CurrentSession, User};

use crate::error::ApiError;
use crate::state::AppState;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Preferences {
    fasting_protocol: Option<String>,
    fasting_milestones: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MeUser {
    #[serde(flatten)]
    user: User,
    #[serde(serialize_with = "service_kit::time::serialize_opt")]
    fasting_paused_until: Option<chrono::DateTime<chrono::Utc>>,
    preferences: Preferences,
}

/// `GET /me`: the signed-in user with their fasting pause and preferences, and the session.
#[tracing::instrument(skip_all)]
pub async fn me(
    current: CurrentSession,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let verified = current.0;
    let user_id = verified.user.id.clone();
    let row: Option<(Option<String>, bool, Option<chrono::DateTime<chrono::Utc>>)> =
        nutrition_store::run(&state.pool, move |conn| {
            profile::table
                .find(user_id)
                .select((
                    profile::fasting_protocol,
                    profile::fasting_milestones,
                    profile::fasting_paused_until,
                ))
                .first(conn)
                .optional()
                .map_err(ApiError::from)
        })
        .await?;
    let (fasting_protocol, fasting_milestones, fasting_paused_until) =
        row.unwrap_or((None, false, None));
    Ok(HttpResponse::Ok().json(serde_json::json!({
        "user": MeUser {
            user: verified.user,
            fasting_paused_until,
            preferences: Preferences { fasting_protocol, fasting_milestones },
        },
        "session": verified.session,
    })))
}
