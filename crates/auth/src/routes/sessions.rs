//! The user's sessions: list them, end one, end all, end all but this one. Ending a session
//! deletes its row, so it stops working in every service at once.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::Utc;
use serde::Deserialize;
use session::CurrentUser;
use session::MaybeSession;
use session::activity::Kind;
use subtle::ConstantTimeEq;
use utoipa::ToSchema;

use crate::activity;
use crate::answers::{ListedSession, Status};
use crate::body::Body;
use crate::error::ApiError;
use crate::keys;
use crate::repo::sessions;
use crate::state::AppState;

/// The signed-in user, or better-auth's 401.
pub fn signed_in(current: MaybeSession) -> Result<CurrentUser, ApiError> {
    current.0.ok_or(ApiError::Unauthorized("UNAUTHORIZED"))
}

fn status_true() -> HttpResponse {
    HttpResponse::Ok().json(Status::DONE)
}

/// `GET /api/auth/list-sessions`: the live sessions, newest first. `token` is an opaque handle
/// for `revoke-session`, never the bearer token of the cookie.
pub async fn list_sessions(
    state: web::Data<AppState>,
    current: MaybeSession,
) -> Result<HttpResponse, ApiError> {
    let me = signed_in(current)?;
    let user_id = me.user.id.clone();
    let rows = state
        .db
        .read(move |conn| sessions::list_live(conn, &user_id, Utc::now()))
        .await?;
    let secret = state.settings.auth.secret.expose();
    let list: Vec<ListedSession> = rows
        .into_iter()
        .map(|s| ListedSession {
            token: keys::session_handle(secret, s.id.as_str()),
            current: s.id == me.session.id,
            session: s,
        })
        .collect();
    Ok(HttpResponse::Ok().json(list))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RevokeSession {
    /// A handle from list-sessions.
    token: String,
}

/// `GET /api/auth/activity` → `{items: [{kind, at, userAgent, ip}]}`: the account's security
/// events of the last 90 days, newest first.
pub async fn list_activity(
    state: web::Data<AppState>,
    current: MaybeSession,
) -> Result<HttpResponse, ApiError> {
    let me = signed_in(current)?;
    let items = state
        .db
        .read(move |conn| activity::list(conn, &me.user.id, Utc::now()))
        .await?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(activity::Activity { items }))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfirmPassword {
    password: String,
}

/// `POST /api/auth/confirm-password` `{password}` → `{status: true}`: the person at this session
/// proves it is them, which makes the session fresh for five minutes (exporting the data,
/// deleting the account) without signing in again.
pub async fn confirm_password(
    req: HttpRequest,
    state: web::Data<AppState>,
    current: MaybeSession,
    body: Body<ConfirmPassword>,
) -> Result<HttpResponse, ApiError> {
    let me = signed_in(current)?;
    state
        .confirm_password(&req, &me, body.value.password)
        .await?;
    Ok(status_true())
}

/// `POST /api/auth/revoke-session`: ends the session with this handle, if it is one of the
/// user's; like better-auth, an unknown handle is no error.
pub async fn revoke_session(
    req: HttpRequest,
    state: web::Data<AppState>,
    current: MaybeSession,
    body: Body<RevokeSession>,
) -> Result<HttpResponse, ApiError> {
    let me = signed_in(current)?;
    let handle = body.value.token;
    let secret = state.settings.auth.secret.clone();
    let user_id = me.user.id.clone();
    let client = state.activity_client(&req);
    let ended = state
        .db
        .write(move |conn| {
            let live = sessions::list_live(conn, &user_id, Utc::now())?;
            let Some(target) = live.into_iter().find(|s| {
                let h = keys::session_handle(secret.expose(), s.id.as_str());
                bool::from(h.as_bytes().ct_eq(handle.as_bytes()))
            }) else {
                return Ok(None);
            };
            sessions::delete_one(conn, &user_id, &target.id)?;
            activity::record(conn, &user_id, Kind::SessionsRevoked, &client, Utc::now())?;
            Ok::<_, ApiError>(Some(target.id))
        })
        .await?;
    let mut resp = status_true();
    if ended.as_ref() == Some(&me.session.id) {
        clear_cookie(&state, &mut resp);
    }
    Ok(resp)
}

/// `POST /api/auth/revoke-sessions`: ends every session of the user, this one included.
pub async fn revoke_sessions(
    req: HttpRequest,
    state: web::Data<AppState>,
    current: MaybeSession,
) -> Result<HttpResponse, ApiError> {
    let me = signed_in(current)?;
    end_sessions(&req, &state, &me, false).await?;
    let mut resp = status_true();
    clear_cookie(&state, &mut resp);
    Ok(resp)
}

/// `POST /api/auth/revoke-other-sessions`: ends every session of the user but this one.
pub async fn revoke_other_sessions(
    req: HttpRequest,
    state: web::Data<AppState>,
    current: MaybeSession,
) -> Result<HttpResponse, ApiError> {
    let me = signed_in(current)?;
    end_sessions(&req, &state, &me, true).await?;
    Ok(status_true())
}

/// Ends every session of the user, or every one but this when `keep_this`, recorded as
/// `sessions_revoked` in the same transaction.
async fn end_sessions(
    req: &HttpRequest,
    state: &AppState,
    me: &CurrentUser,
    keep_this: bool,
) -> Result<(), ApiError> {
    let client = state.activity_client(req);
    let (user_id, this) = (me.user.id.clone(), me.session.id.clone());
    state
        .db
        .write(move |conn| {
            if keep_this {
                sessions::delete_others(conn, &user_id, &this)?;
            } else {
                sessions::delete_all(conn, &user_id)?;
            }
            activity::record(conn, &user_id, Kind::SessionsRevoked, &client, Utc::now())
        })
        .await
}

fn clear_cookie(state: &AppState, resp: &mut HttpResponse) {
    if let Ok(v) =
        header::HeaderValue::from_str(&session::cookie::clear_session(&state.settings.auth))
    {
        resp.headers_mut().append(header::SET_COOKIE, v);
    }
}
