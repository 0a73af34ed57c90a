use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::{Duration, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::answers::SocialRedirect;
use crate::body::Body;
use crate::error::ApiError;
use crate::google;
use crate::redirect;
use crate::repo::verification;
use crate::state::AppState;

/// How long a started sign-in may take at the provider.
pub const STATE_LIFETIME_SECS: i64 = 600;
/// Name suffix of the cookie binding the OAuth state to the browser that started the flow.
pub const STATE_COOKIE: &str = "oauth_state";

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SignInSocial {
    provider: String,
    #[serde(rename = "callbackURL")]
    callback_url: Option<String>,
    #[serde(rename = "errorCallbackURL")]
    error_callback_url: Option<String>,
    #[serde(rename = "newUserCallbackURL")]
    new_user_callback_url: Option<String>,
    disable_redirect: Option<bool>,
}

/// What the callback needs to finish the flow, stored server-side under the state value.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FlowState {
    pub code_verifier: String,
    pub callback_url: Option<String>,
    pub error_url: Option<String>,
    pub new_user_url: Option<String>,
}

/// `POST /api/auth/sign-in/social`: starts Google sign-in.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn sign_in_social(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: Body<SignInSocial>,
) -> Result<HttpResponse, ApiError> {
    let form = body.form;
    let input = body.value;
    let google = match (&state.settings.google, input.provider.as_str()) {
        (Some(g), "google") => g.clone(),
        _ => return Err(ApiError::ProviderNotFound),
    };
    let auth = &state.settings.auth;
    let flow = FlowState {
        code_verifier: session::ids::random_alphanumeric(64),
        callback_url: redirect::callback(auth, input.callback_url.as_deref())?,
        error_url: redirect::callback(auth, input.error_callback_url.as_deref())?,
        new_user_url: redirect::callback(auth, input.new_user_callback_url.as_deref())?,
    };
    state.social_start_gate(&req).await?;
    let state_value = session::ids::random_alphanumeric(32);
    let url = google::authorization_url(&google, &auth.base_url, &state_value, &flow.code_verifier);
    let stored = serde_json::to_string(&flow).map_err(ApiError::internal)?;
    let key = state_value.clone();
    state
        .db
        .read(move |conn| {
            let now = Utc::now();
            verification::insert(
                conn,
                &format!("oauth:{key}"),
                &stored,
                now + Duration::seconds(STATE_LIFETIME_SECS),
                now,
            )
        })
        .await?;
    let name = session::cookie::cookie_name(auth, STATE_COOKIE);
    let cookie = session::cookie::set_signed(auth, &name, &state_value, STATE_LIFETIME_SECS);
    if form {
        return Ok(redirect::see_other_with_cookie(&url, &cookie));
    }
    Ok(HttpResponse::Ok()
        .insert_header((header::SET_COOKIE, cookie))
        .json(SocialRedirect {
            url,
            redirect: !input.disable_redirect.unwrap_or(false),
        }))
}
