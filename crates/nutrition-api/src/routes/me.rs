use ::session::{Session, SessionToken, User};
use actix_web::{HttpResponse, web};
use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::error::ApiError;
use crate::repo::{self, Repo};
use crate::routes::preferences::Preferences;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MeUser {
    #[serde(flatten)]
    user: User,
    #[serde(serialize_with = "service_kit::time::serialize_opt")]
    fasting_paused_until: Option<DateTime<Utc>>,
    preferences: Preferences,
}

/// Serialised straight from the structs: the hottest route builds no intermediate JSON tree.
#[derive(Serialize)]
struct Answer {
    user: MeUser,
    session: Session,
}

/// `GET /me`: the signed-in user with their fasting pause and preferences, and the session.
///
/// The app calls this on every start and focus, so it is the hottest signed-in route: the session,
/// its user and the profile come back in one statement ([`repo::session::me`]) instead of the
/// guard's lookup followed by a profile read. Only an expired session (deleted) or one due for
/// its rolling refresh costs a second statement.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn me(
    token: SessionToken,
    repo: web::Data<Repo>,
) -> Result<HttpResponse, actix_web::Error> {
    let found = repo::session::me(&repo, &token.token, Utc::now())
        .await
        .map_err(ApiError::from)?;
    let (verified, profile) = match found {
        Some((verified, profile, locale)) => (Some(verified), Some((profile, locale))),
        None => (None, None),
    };
    let verified = token.accept(verified).map_err(actix_web::Error::from)?;
    let (profile, locale) = profile.unwrap_or_default();
    Ok(HttpResponse::Ok().json(Answer {
        user: MeUser {
            user: verified.user,
            fasting_paused_until: profile.fasting_paused_until,
            preferences: Preferences::new(&profile, locale),
        },
        session: verified.session,
    }))
}
