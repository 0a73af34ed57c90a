//! Confirming an e-mail address: the request that mails a link, and the link itself.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::Utc;
use serde::Deserialize;
use session::{MaybeSession, User};
use utoipa::ToSchema;

use crate::answers::{EmailVerified, Status};
use crate::body::Body;
use crate::error::ApiError;
use crate::links::{self, Purpose};
use crate::mailbox::{self, LinkMail};
use crate::otp;
use crate::redirect;
use crate::repo::{Tx, users};
use crate::routes::reset::MAIL_ROUTE_MIN_TIME;
use crate::routes::user::{move_address, valid_email};
use crate::state::AppState;

/// Issues a verification token for `user` and queues its mail, in the caller's transaction.
pub fn send_verification(
    conn: &mut Tx,
    auth: &session::AuthSettings,
    user: &User,
    callback: &str,
) -> Result<(), ApiError> {
    let token = links::issue(conn, Purpose::Verify, &user.id, Utc::now())?;
    let link = links::verify_link(&auth.base_url, &token, callback);
    let locale = crate::i18n::user_locale(conn, &user.id)?;
    mailbox::queue(
        conn,
        auth.secret.expose(),
        LinkMail::EmailVerification,
        &user.email,
        &user.name,
        &link,
        locale,
    )
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SendVerification {
    email: String,
    #[serde(rename = "callbackURL")]
    callback_url: Option<String>,
}

/// `POST /api/auth/send-verification-email` `{email, callbackURL?}`. Signed in, the address must
/// be the user's own and not yet verified. Without a session (someone whose sign-in was refused
/// for an unverified address) the answer is 200 whether or not the address is known, after the
/// same time.
pub async fn send_verification_email(
    req: HttpRequest,
    state: web::Data<AppState>,
    current: MaybeSession,
    body: Body<SendVerification>,
) -> Result<HttpResponse, ApiError> {
    if !mailbox::enabled(&state) {
        return Err(ApiError::EmailDisabled);
    }
    let input = body.value;
    let email = valid_email(&input.email)?;
    let callback = redirect::callback(&state.settings.auth, input.callback_url.as_deref())?
        .unwrap_or_else(|| "/".to_owned());
    let limit = state.settings.mail_rate_limit;
    // Refused only past this client's own budget (see request-password-reset).
    state
        .limit(&req, "send-verification-email", None, limit)
        .await?;
    let allowed = state.mail_allowed(&email).await?;
    let auth = state.settings.auth.clone();
    if let Some(me) = current.0 {
        if me.user.email != email {
            return Err(ApiError::bad("EMAIL_MISMATCH"));
        }
        if me.user.email_verified {
            return Err(ApiError::bad("EMAIL_ALREADY_VERIFIED"));
        }
        if allowed {
            state
                .db
                .write(move |conn| send_verification(conn, &auth, &me.user, &callback))
                .await?;
            mailbox::wake(&state);
        }
        return Ok(HttpResponse::Ok().json(Status::DONE));
    }
    let started = tokio::time::Instant::now();
    let outcome = state
        .db
        .write(move |conn| match users::find_by_email(conn, &email)? {
            Some(user) if !user.email_verified && allowed => {
                send_verification(conn, &auth, &user, &callback)
            }
            _ => Ok(()),
        })
        .await;
    if outcome.is_ok() {
        mailbox::wake(&state);
    }
    tokio::time::sleep_until(started + MAIL_ROUTE_MIN_TIME).await;
    outcome?;
    Ok(HttpResponse::Ok().json(Status::DONE))
}

#[derive(Debug, Deserialize)]
pub struct VerifyQuery {
    token: Option<String>,
    #[serde(rename = "callbackURL")]
    callback_url: Option<String>,
}

/// `GET /api/auth/verify-email?token=&callbackURL=`: marks the address verified and goes on to
/// `callbackURL` (or answers `{status: true}` without one); a bad token goes to
/// `callbackURL?error=INVALID_TOKEN` (or is a 401).
pub async fn verify_email(
    req: actix_web::HttpRequest,
    state: web::Data<AppState>,
    query: web::Query<VerifyQuery>,
) -> Result<HttpResponse, ApiError> {
    let query = query.into_inner();
    let callback = redirect::callback(&state.settings.auth, query.callback_url.as_deref())?;
    let token = query.token.unwrap_or_default();
    let client = state.activity_client(&req);
    let verified = state
        .db
        .write(move |conn| {
            let now = Utc::now();
            let Some(user_id) = links::redeem(conn, Purpose::Verify, &token, now)? else {
                // A change of address: the link proves the new one.
                let Some((user_id, email)) = links::redeem_change(conn, &token, now)? else {
                    return Ok(None);
                };
                // Taken meanwhile by a sign-up: the statement failed, so the transaction ends
                // and the link stays as it was.
                let moved = move_address(conn, &user_id, &email, true, &client, now)?
                    .ok_or(ApiError::Unauthorized("INVALID_TOKEN"))?;
                tracing::info!(%user_id, "address changed through the mailed link");
                // As better-auth answers a change: the user as it is now.
                return Ok(Some(Some(moved)));
            };
            users::mark_verified(conn, &user_id, now)?;
            // The code mailed with the link is spent with it.
            if let Some(user) = users::find_by_id(conn, &user_id)? {
                otp::void(conn, otp::Kind::EmailVerification, &user.email)?;
            }
            Ok::<_, ApiError>(Some(None))
        })
        .await?;
    let found = |location: String| {
        HttpResponse::Found()
            .insert_header((header::LOCATION, location))
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .finish()
    };
    match (verified, callback) {
        (Some(_), Some(cb)) => Ok(found(cb)),
        (Some(user), None) => Ok(HttpResponse::Ok().json(EmailVerified { status: true, user })),
        (None, Some(cb)) => Ok(found(links::with_param(&cb, "error", "INVALID_TOKEN"))),
        (None, None) => Err(ApiError::Unauthorized("INVALID_TOKEN")),
    }
}
