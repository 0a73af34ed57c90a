use actix_web::http::header;
use actix_web::{HttpResponse, web};
use chrono::Utc;
use serde::Deserialize;
use session::CurrentUser;

use crate::answers::SuccessMessage;
use crate::error::ApiError;
use crate::redirect;
use crate::repo::rate_limits;
use crate::state::AppState;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeleteUser {
    password: Option<String>,
    #[serde(rename = "callbackURL")]
    callback_url: Option<String>,
}

/// `POST /api/auth/delete-user`: erases the signed-in user everywhere (auth, nutrition and the
/// scheduler's queue) in one transaction, after checking the password when one is sent, or else
/// that the session is fresh ([`session::Session::is_fresh`]); expires the cookie. As in better-auth, an empty password counts as
/// none.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn delete_user(
    req: actix_web::HttpRequest,
    current: CurrentUser,
    state: web::Data<AppState>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    // The client may send no body at all: that is `{}`.
    let input: DeleteUser = if body.iter().all(u8::is_ascii_whitespace) {
        DeleteUser::default()
    } else {
        service_kit::http::parse_json(&body)?
    };
    // Only used by better-auth's e-mail confirmation flow, which is off here; still refused when
    // it points off-site, like every other callbackURL.
    redirect::callback(&state.settings.auth, input.callback_url.as_deref())?;
    let verified = current;
    let user_id = verified.user.id.clone();

    match input.password.filter(|p| !p.is_empty()) {
        Some(plain) => {
            // A password check costs a hash and answers whether the password is right: limited
            // like sign-in, per address and per user.
            state
                .limit(
                    &req,
                    "delete-user",
                    Some(("user", user_id.as_str())),
                    state.settings.rate_limit,
                )
                .await?;
            match state.password_matches(&user_id, plain).await? {
                None => return Err(ApiError::bad("CREDENTIAL_ACCOUNT_NOT_FOUND")),
                Some(false) => return Err(ApiError::bad("INVALID_PASSWORD")),
                Some(true) => {}
            }
        }
        None => {
            if !verified.session.is_fresh(Utc::now()) {
                return Err(ApiError::bad_request(
                    "SESSION_EXPIRED",
                    "Session expired. Re-authenticate to perform this action.",
                ));
            }
        }
    }

    let keys = rate_limits::keys_naming(
        state.settings.auth.secret.expose(),
        &verified.user.email,
        &verified.user.id,
    );
    let erased = state
        .db
        .read(move |conn| pg_store::erase::erase_user(conn, &user_id, &keys))
        .await?;
    if let Some(erased) = erased {
        tracing::info!(rows = erased.total(), "user erased");
    }
    Ok(HttpResponse::Ok()
        .insert_header((
            header::SET_COOKIE,
            session::cookie::clear_session(&state.settings.auth),
        ))
        .json(SuccessMessage {
            success: true,
            message: "User deleted",
        }))
}
