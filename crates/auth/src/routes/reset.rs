//! Forgotten passwords: the request that mails a link, the link itself, and the new password.

use std::time::Duration;

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::Utc;
use serde::Deserialize;
use utoipa::ToSchema;

use session::activity::{Client, Kind};

use crate::activity;
use crate::answers::{Status, StatusMessage};
use crate::body::Body;
use crate::error::ApiError;
use crate::links::{self, Purpose};
use crate::mailbox::{self, LinkMail};
use crate::otp;
use crate::redirect;
use crate::repo::{accounts, sessions, users};
use crate::routes::user::{check_length, valid_email};
use crate::state::AppState;

/// The least time `request-password-reset` and the anonymous `send-verification-email` take,
/// so that a known address (a token and a mail written) cannot be told from an unknown one.
pub const MAIL_ROUTE_MIN_TIME: Duration = Duration::from_millis(300);
/// Where a reset link leads when the request named no page: this service's own form.
pub const DEFAULT_RESET_PAGE: &str = "/reset-password";

pub const RESET_REQUESTED: &str =
    "If this email exists in our system, check your email for the reset link";

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RequestReset {
    email: String,
    /// Where the link in the e-mail leads, with `?token=`.
    redirect_to: Option<String>,
}

/// `POST /api/auth/request-password-reset`: always 200 with the same body, after the same time.
pub async fn request_password_reset(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: Body<RequestReset>,
) -> Result<HttpResponse, ApiError> {
    let form = body.form;
    let typed = body.value.email.trim().to_owned();
    let outcome = request_reset(&req, &state, body.value).await;
    if !form {
        return outcome;
    }
    Ok(match outcome {
        // On to the page that also takes the mailed code.
        Ok(_) => redirect::see_other(&redirect::page_with(
            "/forgot-password?sent=1",
            &[("email", Some(&typed))],
        )),
        Err(e) => redirect::back_to_page("/forgot-password", e.code(), &[]),
    })
}

async fn request_reset(
    req: &HttpRequest,
    state: &AppState,
    input: RequestReset,
) -> Result<HttpResponse, ApiError> {
    if !mailbox::enabled(state) {
        return Err(ApiError::EmailDisabled);
    }
    let email = valid_email(&input.email)?;
    let callback = redirect::callback(&state.settings.auth, input.redirect_to.as_deref())
        .map_err(|_| ApiError::Forbidden("INVALID_REDIRECT_URL"))?
        .unwrap_or_else(|| DEFAULT_RESET_PAGE.to_owned());
    let limit = state.settings.mail_rate_limit;
    // Refused only past this client's own budget: a count per e-mail address would let anyone
    // block someone else's reset.
    state
        .limit(req, "request-password-reset", None, limit)
        .await?;
    let started = tokio::time::Instant::now();
    let allowed = state.mail_allowed(&email).await?;
    let auth = state.settings.auth.clone();
    let queued = state
        .db
        .write(move |conn| {
            let Some(user) = users::find_by_email(conn, &email)? else {
                return Ok(false);
            };
            if !allowed {
                return Ok(false);
            }
            let token = links::issue(conn, Purpose::Reset, &user.id, Utc::now())?;
            let link = links::reset_link(&auth.base_url, &token, &callback);
            let locale = crate::i18n::user_locale(conn, &user.id)?;
            mailbox::queue(
                conn,
                auth.secret.expose(),
                LinkMail::PasswordReset,
                &user.email,
                &user.name,
                &link,
                locale,
            )?;
            Ok::<_, ApiError>(true)
        })
        .await;
    if matches!(queued, Ok(true)) {
        mailbox::wake(state);
    }
    tokio::time::sleep_until(started + MAIL_ROUTE_MIN_TIME).await;
    queued?;
    Ok(HttpResponse::Ok().json(StatusMessage {
        status: true,
        message: RESET_REQUESTED,
    }))
}

#[derive(Debug, Deserialize)]
pub struct LinkQuery {
    #[serde(rename = "callbackURL")]
    callback_url: Option<String>,
}

/// `GET /api/auth/reset-password/{token}?callbackURL=`: the link of the mail. A live token goes
/// on to the page with `?token=`, anything else with `?error=INVALID_TOKEN`; the token stays
/// usable until the new password is set.
pub async fn reset_link(
    state: web::Data<AppState>,
    token: web::Path<String>,
    query: web::Query<LinkQuery>,
) -> Result<HttpResponse, ApiError> {
    let callback = redirect::callback(&state.settings.auth, query.callback_url.as_deref())?
        .unwrap_or_else(|| DEFAULT_RESET_PAGE.to_owned());
    let token = token.into_inner();
    let lookup = token.clone();
    let live = state
        .db
        .read(move |conn| links::peek(conn, Purpose::Reset, &lookup, Utc::now()))
        .await?;
    let location = match live {
        Some(_) => links::with_param(&callback, "token", &token),
        None => links::with_param(&callback, "error", "INVALID_TOKEN"),
    };
    Ok(HttpResponse::Found()
        .insert_header((header::LOCATION, location))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .finish())
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResetPassword {
    #[schema(min_length = 8, max_length = 128)]
    new_password: String,
    token: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct TokenQuery {
    token: Option<String>,
}

/// `POST /api/auth/reset-password` `{newPassword, token}`: sets the password (creating the
/// credential account of a Google-only user) and ends every session of the user.
pub async fn reset_password(
    req: HttpRequest,
    state: web::Data<AppState>,
    query: web::Query<TokenQuery>,
    body: Body<ResetPassword>,
) -> Result<HttpResponse, ApiError> {
    let form = body.form;
    let input = body.value;
    let token = input
        .token
        .clone()
        .or_else(|| query.into_inner().token)
        .unwrap_or_default();
    let client = state.activity_client(&req);
    let outcome = reset(&state, &token, input.new_password, client).await;
    if !form {
        return outcome;
    }
    Ok(match outcome {
        // The form's page put its language on the action: the sign-in page after it keeps it.
        Ok(_) => match crate::i18n::query_locale(&req) {
            Some(lang) => redirect::see_other(&format!("/sign-in?reset=1&lang={}", lang.as_str())),
            None => redirect::see_other("/sign-in?reset=1"),
        },
        Err(e) => {
            let token = Some(token.as_str()).filter(|t| !t.is_empty() && t.len() <= 128);
            redirect::back_to_page("/reset-password", e.code(), &[("token", token)])
        }
    })
}

async fn reset(
    state: &AppState,
    token: &str,
    new_password: String,
    client: Client,
) -> Result<HttpResponse, ApiError> {
    if token.is_empty() {
        return Err(ApiError::bad("INVALID_TOKEN"));
    }
    check_length(&new_password)?;
    // The token is taken before the slow hash, so that parallel posts of one token cost one
    // hash; it goes back if the hash cannot run now, so that the link still works afterwards.
    let lookup = token.to_owned();
    let taken = state
        .db
        .read(move |conn| links::take(conn, Purpose::Reset, &lookup, Utc::now()))
        .await?
        .ok_or_else(|| ApiError::bad("INVALID_TOKEN"))?;
    let hashed = match state.hashes.hash(new_password).await {
        Ok(Ok(hash)) => Ok(hash),
        Ok(Err(e)) => Err(ApiError::internal(e)),
        Err(busy) => Err(ApiError::from(busy)),
    };
    let hash = match hashed {
        Ok(hash) => hash,
        Err(e) => {
            let token = token.to_owned();
            state
                .db
                .read(move |conn| links::put_back(conn, Purpose::Reset, &token, &taken, Utc::now()))
                .await?;
            return Err(e);
        }
    };
    let user_id = state
        .db
        .write(move |conn| {
            let now = Utc::now();
            links::drop_others(conn, Purpose::Reset, &taken.user_id)?;
            // The code mailed with the link is spent with it.
            if let Some(user) = users::find_by_id(conn, &taken.user_id)? {
                otp::void(conn, otp::Kind::ForgetPassword, &user.email)?;
            }
            accounts::set_password(conn, &taken.user_id, &hash, now)?;
            sessions::delete_all(conn, &taken.user_id)?;
            activity::record(conn, &taken.user_id, Kind::PasswordChanged, &client, now)?;
            Ok::<_, ApiError>(taken.user_id)
        })
        .await?;
    tracing::info!(%user_id, "password reset; every session ended");
    Ok(HttpResponse::Ok().json(Status::DONE))
}
