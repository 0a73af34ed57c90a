use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::Utc;
use serde::Deserialize;

use crate::body::Body;
use crate::error::ApiError;
use crate::redirect;
use crate::state::AppState;
use crate::{client, password, users};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SignIn {
    email: String,
    password: String,
    remember_me: Option<bool>,
    #[serde(rename = "callbackURL")]
    callback_url: Option<String>,
}

/// `POST /api/auth/sign-in/email`. Every credential failure is the same 401, after the same
/// amount of work, whether or not the address exists.
#[tracing::instrument(skip_all)]
pub async fn sign_in(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: Body<SignIn>,
) -> Result<HttpResponse, ApiError> {
    let form = body.form;
    let input = body.value;
    let outcome = handle(&req, &state, &input, form).await;
    if !form {
        return outcome;
    }
    Ok(outcome.unwrap_or_else(|err| {
        let callback = input.callback_url.as_deref().filter(|c| !c.is_empty());
        redirect::back_to_page(
            "/sign-in",
            err.code(),
            &[
                ("email", Some(input.email.trim())),
                ("callbackURL", callback),
            ],
        )
    }))
}

async fn handle(
    req: &HttpRequest,
    state: &AppState,
    input: &SignIn,
    form: bool,
) -> Result<HttpResponse, ApiError> {
    let callback = redirect::callback(&state.settings.auth, input.callback_url.as_deref())?;
    // A malformed address cannot belong to anyone: same answer as a wrong password.
    let email = domain::email::normalise(&input.email);
    state.rate_limit(req, "sign-in", email.as_deref()).await?;

    let lookup_email = email.clone().unwrap_or_default();
    let found = nutrition_store::run(&state.pool, move |conn| {
        users::find_with_password(conn, &lookup_email).map_err(ApiError::from)
    })
    .await?;
    let plain = input.password.clone();
    let decoy = state.decoy_hash.clone();
    let (user, hash) = match found {
        Some((user, Some(hash))) => (Some(user), hash),
        // Unknown address, or an account without a password (Google only): verify against the
        // decoy so that the response takes as long as for a wrong password.
        _ => (None, decoy.to_string()),
    };
    let outdated = user.is_some() && !password::is_current(&hash);
    let (matches, plain) = web::block(move || (password::verify(&plain, &hash), plain))
        .await
        .map_err(ApiError::internal)?;
    let Some(user) = user.filter(|_| matches) else {
        return Err(ApiError::InvalidCredentials);
    };
    if outdated {
        upgrade_hash(state, &user.id, plain).await?;
    }

    let remember = input.remember_me.unwrap_or(!form);
    let origin = client::origin(req, &state.settings.trusted_proxies);
    let user_id = user.id.clone();
    let session = nutrition_store::run(&state.pool, move |conn| {
        session::store::create(conn, &user_id, remember, &origin, Utc::now())
            .map_err(ApiError::from)
    })
    .await?;
    let cookie = session::cookie::set_session(&state.settings.auth, &session.token, remember);
    if form {
        return Ok(redirect::see_other_with_cookie(
            callback.as_deref().unwrap_or("/"),
            &cookie,
        ));
    }
    let mut body = serde_json::json!({
        "redirect": callback.is_some(),
        "token": session.token,
        "user": user,
    });
    if let Some(url) = callback {
        body["url"] = serde_json::Value::String(url);
    }
    Ok(HttpResponse::Ok()
        .insert_header((header::SET_COOKIE, cookie))
        .json(body))
}

/// Replaces an imported (scrypt) hash with argon2id, now that the password is known to be right.
async fn upgrade_hash(state: &AppState, user_id: &str, plain: String) -> Result<(), ApiError> {
    let phc = web::block(move || password::hash(&plain))
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::internal)?;
    let user_id = user_id.to_owned();
    nutrition_store::run(&state.pool, move |conn| {
        users::set_password(conn, &user_id, &phc, Utc::now()).map_err(ApiError::from)
    })
    .await?;
    Ok(())
}
