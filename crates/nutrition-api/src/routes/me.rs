use ::session::store::Verified;
use ::session::{Session, SessionToken, User};
use actix_web::{HttpResponse, web};
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use nutrition_store::schema::auth::{session, user};
use nutrition_store::schema::nutrition::profile;
use serde::Serialize;

use crate::direct::{ProfileColumns, Reader};
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
/// its user and the profile come back in one statement, on one pooled connection, instead of the
/// guard's lookup followed by a profile read. Only an expired session (deleted) or one due for
/// its rolling refresh costs a second statement. The statement goes over the worker's own
/// asynchronous connection when it has one ([`crate::direct`]), and through the pool otherwise.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn me(
    token: SessionToken,
    state: web::Data<AppState>,
    reader: web::Data<Reader>,
) -> Result<HttpResponse, actix_web::Error> {
    let direct = match reader.me(&token.token).await {
        Some(None) => Some(None),
        // A session to delete or extend goes the pool's way, which does both.
        Some(Some((current, user, profile))) => {
            ::session::store::steady(current, user, Utc::now()).map(|v| Some((v, profile)))
        }
        None => None,
    };
    let found = match direct {
        Some(found) => {
            crate::direct::DIRECT_READS.inc();
            found
        }
        None => {
            crate::direct::POOL_READS.inc();
            through_pool(&state, token.token.clone()).await?
        }
    };
    let (verified, profile) = match found {
        Some((verified, profile)) => (Some(verified), profile),
        None => (None, None),
    };
    let verified = token.accept(verified).map_err(actix_web::Error::from)?.0;
    let (fasting_protocol, fasting_milestones, fasting_paused_until) =
        profile.unwrap_or((None, false, None));
    Ok(HttpResponse::Ok().json(Answer {
        user: MeUser {
            user: verified.user,
            fasting_paused_until,
            preferences: Preferences {
                fasting_protocol,
                fasting_milestones,
            },
        },
        session: verified.session,
    }))
}

type Found = Option<(Verified, Option<ProfileColumns>)>;

/// The read on a pooled connection, with the session's deletion or extension when it is due.
async fn through_pool(state: &AppState, lookup: String) -> Result<Found, ApiError> {
    nutrition_store::run(&state.pool, move |conn| {
        let now = Utc::now();
        let row: Option<(Session, User, Option<ProfileColumns>)> = session::table
            .inner_join(user::table)
            .left_join(profile::table.on(profile::user_id.eq(session::user_id)))
            .filter(session::token.eq(&lookup))
            .select((
                Session::as_select(),
                User::as_select(),
                (
                    profile::fasting_protocol,
                    profile::fasting_milestones,
                    profile::fasting_paused_until,
                )
                    .nullable(),
            ))
            .first(conn)
            .optional()
            .map_err(ApiError::from)?;
        let Some((current, user, profile)) = row else {
            return Ok(None);
        };
        let settled = ::session::store::settle(conn, current, user, now).map_err(ApiError::from)?;
        Ok::<_, ApiError>(settled.map(|verified| (verified, profile)))
    })
    .await
}
