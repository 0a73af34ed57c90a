use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::Utc;
use serde::Deserialize;

use crate::body::Body;
use crate::error::ApiError;
use crate::redirect;
use crate::state::AppState;
use crate::users::{self, CREDENTIAL, NewAccount, NewUser};
use crate::{client, password};

/// Longest display name kept.
const MAX_NAME: usize = 200;
const MAX_IMAGE: usize = 2048;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SignUp {
    name: String,
    email: String,
    password: String,
    image: Option<String>,
    remember_me: Option<bool>,
    #[serde(rename = "callbackURL")]
    callback_url: Option<String>,
}

/// `POST /api/auth/sign-up/email`: creates the user with a credential account and signs them in.
#[tracing::instrument(skip_all)]
pub async fn sign_up(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: Body<SignUp>,
) -> Result<HttpResponse, ApiError> {
    let form = body.form;
    let input = body.value;
    let outcome = handle(&req, &state, &input, form).await;
    if !form {
        return outcome;
    }
    // The page posts a form: answer with redirects, the error back to the page to show inline.
    Ok(outcome.unwrap_or_else(|err| {
        let callback = input.callback_url.as_deref().filter(|c| !c.is_empty());
        redirect::back_to_page(
            "/sign-up",
            err.code(),
            &[
                ("name", Some(input.name.trim())),
                ("email", Some(input.email.trim())),
                ("callbackURL", callback),
            ],
        )
    }))
}

async fn handle(
    req: &HttpRequest,
    state: &AppState,
    input: &SignUp,
    form: bool,
) -> Result<HttpResponse, ApiError> {
    let email = domain::email::normalise(&input.email)
        .ok_or_else(|| ApiError::bad_request("INVALID_EMAIL", "the e-mail address is not valid"))?;
    let length = input.password.chars().count();
    if length < password::MIN_LENGTH {
        return Err(ApiError::bad_request(
            "PASSWORD_TOO_SHORT",
            "the password must have at least 8 characters",
        ));
    }
    if length > password::MAX_LENGTH {
        return Err(ApiError::bad_request(
            "PASSWORD_TOO_LONG",
            "the password must have at most 128 characters",
        ));
    }
    let name = input.name.trim().to_owned();
    if name.chars().count() > MAX_NAME || name.chars().any(char::is_control) {
        return Err(ApiError::bad_request(
            "VALIDATION_ERROR",
            "name: at most 200 printable characters",
        ));
    }
    let image = input
        .image
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    if image
        .as_ref()
        .is_some_and(|i| i.len() > MAX_IMAGE || service_kit::config::parse_http_url(i).is_err())
    {
        return Err(ApiError::bad_request(
            "VALIDATION_ERROR",
            "image: must be an http(s) URL",
        ));
    }
    let callback = redirect::callback(&state.settings.auth, input.callback_url.as_deref())?;
    state.rate_limit(req, "sign-up", Some(&email)).await?;

    let plain = input.password.clone();
    let hash = web::block(move || password::hash(&plain))
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::internal)?;
    let remember = input.remember_me.unwrap_or(!form);
    let origin = client::origin(req, &state.settings.trusted_proxies);
    let (user, session) = nutrition_store::run(&state.pool, move |conn| {
        use diesel::Connection;
        conn.transaction(|conn| {
            let now = Utc::now();
            let new = NewUser {
                name: &name,
                email: &email,
                email_verified: false,
                image: image.as_deref(),
            };
            let user = users::insert(conn, &new, now)?.ok_or(ApiError::UserExists)?;
            users::insert_account(
                conn,
                &NewAccount {
                    user_id: &user.id,
                    provider_id: CREDENTIAL,
                    account_id: &user.id,
                    password: Some(&hash),
                    access_token: None,
                    refresh_token: None,
                    id_token: None,
                    scope: None,
                },
                now,
            )?;
            let session = session::store::create(conn, &user.id, remember, &origin, now)?;
            Ok::<_, ApiError>((user, session))
        })
    })
    .await?;
    tracing::info!(user_id = %user.id, "user signed up");
    let cookie = session::cookie::set_session(&state.settings.auth, &session.token, remember);
    if form {
        return Ok(redirect::see_other_with_cookie(
            callback.as_deref().unwrap_or("/"),
            &cookie,
        ));
    }
    Ok(HttpResponse::Ok()
        .insert_header((header::SET_COOKIE, cookie))
        .json(serde_json::json!({ "token": session.token, "user": user })))
}
