use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::Utc;
use serde::Deserialize;
use session::UserId;
use utoipa::ToSchema;

use crate::answers::SignedIn;
use crate::body::Body;
use crate::password;

use crate::error::ApiError;
use crate::mailbox;
use crate::redirect;
use crate::repo::{accounts, users};
use crate::routes::two_factor::{self, Gate};
use crate::routes::user::valid_email;
use crate::routes::verify::send_verification;
use crate::state::AppState;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SignIn {
    email: String,
    password: String,
    /// false: the cookie lasts for the browser session only.
    remember_me: Option<bool>,
    #[serde(rename = "callbackURL")]
    callback_url: Option<String>,
}

/// `POST /api/auth/sign-in/email`. Every credential failure is the same 401, after the same
/// amount of work, whether or not the address exists.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn sign_in(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: Body<SignIn>,
) -> Result<HttpResponse, ApiError> {
    let form = body.form;
    let input = body.value;
    let outcome = handle(&req, &state, &input, form).await;
    redirect::answer(
        form,
        outcome,
        "/sign-in",
        &[("email", input.email.trim())],
        input.callback_url.as_deref(),
    )
}

async fn handle(
    req: &HttpRequest,
    state: &AppState,
    input: &SignIn,
    form: bool,
) -> Result<HttpResponse, ApiError> {
    let callback = redirect::callback(&state.settings.auth, input.callback_url.as_deref())?;
    let email = valid_email(&input.email)?;
    let lookup_email = email.clone();
    let (failure_keys, found) = state
        .sign_in_gate(req, &email, move |conn| {
            users::find_with_password(conn, &lookup_email).map_err(ApiError::from)
        })
        .await?;
    let (user, hash) = match found {
        Some((user, Some(hash))) => (Some(user), hash.into()),
        // Unknown address, or an account without a password (Google only): verify against the
        // decoy so that the response takes as long as for a wrong password.
        _ => (None, state.decoy_hash.clone()),
    };
    let outdated = user.is_some() && !password::is_current(&hash);
    let matches = state.hashes.verify(input.password.clone(), hash).await?;
    let Some(user) = user.filter(|_| matches) else {
        state.sign_in_failed(req, &email, failure_keys).await?;
        return Err(ApiError::InvalidCredentials);
    };
    if outdated {
        upgrade_hash(state, &user.id, input.password.clone()).await?;
    }
    if state.settings.require_email_verification && !user.email_verified {
        resend_verification(req, state, &user, callback.as_deref()).await?;
        return Err(ApiError::Forbidden("EMAIL_NOT_VERIFIED"));
    }

    let remember = input.remember_me.unwrap_or(!form);
    let mut trusted = None;
    if user.two_factor_enabled {
        match two_factor::gate(req, state, &user.id, remember).await? {
            Gate::Trusted(id) => trusted = Some(id),
            Gate::Challenge(mut resp, _) if form => {
                return Ok(resp
                    .status(StatusCode::SEE_OTHER)
                    .insert_header((
                        header::LOCATION,
                        redirect::page_with("/two-factor", &[("callbackURL", callback.as_deref())]),
                    ))
                    .finish());
            }
            Gate::Challenge(mut resp, answer) => return Ok(resp.json(answer)),
        }
    }
    let session = state.open_session(req, &user, remember).await?;
    let cookie = session::cookie::set_session(&state.settings.auth, &session.token, remember);
    let then = callback.clone();
    let mut resp = redirect::signed_in(
        form,
        then.as_deref(),
        &cookie,
        SignedIn {
            redirect: callback.is_some(),
            token: session.token,
            url: callback,
            user,
        },
    );
    if let Some(value) = trusted
        .map(|id| two_factor::trust_cookie(state, &id))
        .and_then(|c| header::HeaderValue::from_str(&c).ok())
    {
        resp.headers_mut().append(header::SET_COOKIE, value);
    }
    Ok(resp)
}

/// Replaces an imported (scrypt) hash with argon2id, now that the password is known to be right.
async fn upgrade_hash(state: &AppState, user_id: &UserId, plain: String) -> Result<(), ApiError> {
    let phc = state
        .hashes
        .hash(plain)
        .await?
        .map_err(ApiError::internal)?;
    let user_id = user_id.to_owned();
    state
        .db
        .read(move |conn| accounts::set_password(conn, &user_id, &phc, Utc::now()))
        .await
}

/// A new verification mail for someone refused for an unverified address, at most as often as
/// `send-verification-email` allows; beyond that the refusal alone is the answer.
async fn resend_verification(
    req: &HttpRequest,
    state: &AppState,
    user: &session::User,
    callback: Option<&str>,
) -> Result<(), ApiError> {
    if !mailbox::enabled(state) {
        return Ok(());
    }
    let limit = state.settings.mail_rate_limit;
    if state
        .limit(
            req,
            "send-verification-email",
            Some(("email", &user.email)),
            limit,
        )
        .await
        .is_err()
    {
        return Ok(());
    }
    let auth = state.settings.auth.clone();
    let user = user.clone();
    let callback = callback.unwrap_or("/").to_owned();
    state
        .db
        .write(move |conn| send_verification(conn, &auth, &user, &callback))
        .await?;
    mailbox::wake(state);
    Ok(())
}
