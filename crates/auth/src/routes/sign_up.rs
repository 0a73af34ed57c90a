use actix_web::{HttpRequest, HttpResponse, web};
use chrono::Utc;
use serde::Deserialize;
use utoipa::ToSchema;

use crate::answers::SignedUp;
use crate::body::Body;
use crate::client;
use crate::error::ApiError;
use crate::mailbox;
use crate::redirect;
use crate::repo::accounts::{self, NewAccount};
use crate::repo::users::{self, NewUser};
use crate::routes::user::{check_length, valid_email, valid_image, valid_name};
use crate::routes::verify::send_verification;
use crate::state::AppState;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SignUp {
    name: String,
    email: String,
    /// 8 to 128 characters.
    #[schema(min_length = 8, max_length = 128)]
    password: String,
    image: Option<String>,
    remember_me: Option<bool>,
    #[serde(rename = "callbackURL")]
    callback_url: Option<String>,
}

/// `POST /api/auth/sign-up/email`: creates the user with a credential account and signs them in.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn sign_up(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: Body<SignUp>,
) -> Result<HttpResponse, ApiError> {
    let form = body.form;
    let input = body.value;
    let outcome = handle(&req, &state, &input, form).await;
    redirect::answer(
        form,
        outcome,
        "/sign-up",
        &[("name", input.name.trim()), ("email", input.email.trim())],
        input.callback_url.as_deref(),
    )
}

async fn handle(
    req: &HttpRequest,
    state: &AppState,
    input: &SignUp,
    form: bool,
) -> Result<HttpResponse, ApiError> {
    let email = valid_email(&input.email)?;
    check_length(&input.password)?;
    let name = valid_name(&input.name)?;
    let image = valid_image(input.image.as_deref())?;
    let callback = redirect::callback(&state.settings.auth, input.callback_url.as_deref())?;
    state.rate_limit(req, "sign-up", Some(&email)).await?;
    state
        .global_limit("sign-up", state.settings.sign_up_global)
        .await?;

    let hash = state
        .hashes
        .hash(input.password.clone())
        .await?
        .map_err(ApiError::internal)?;
    let remember = input.remember_me.unwrap_or(!form);
    let origin = client::origin(req, &state.settings.trusted_proxies);
    // With verification required, the new user is signed in only once the address is confirmed.
    let verify_first = state.settings.require_email_verification;
    let mail = mailbox::enabled(state);
    let auth = state.settings.auth.clone();
    let verify_callback = callback.clone().unwrap_or_else(|| "/".to_owned());
    let locale = crate::i18n::request_locale(req);
    let (user, session) = state
        .db
        .write(move |conn| {
            let now = Utc::now();
            let new = NewUser {
                name: &name,
                email: &email,
                email_verified: false,
                image: image.as_deref(),
                locale,
            };
            let user = users::insert(conn, &new, now)?.ok_or(ApiError::UserExists)?;
            accounts::insert(conn, &NewAccount::credential(&user.id, &hash), now)?;
            if verify_first {
                if mail {
                    send_verification(conn, &auth, &user, &verify_callback)?;
                }
                return Ok::<_, ApiError>((user, None));
            }
            // An account's first session: recorded, never a new device.
            let (session, _) =
                crate::activity::signed_in(conn, &user.id, remember, &origin, &auth.base_url, now)?;
            Ok((user, Some(session)))
        })
        .await?;
    tracing::info!(user_id = %user.id, "user signed up");
    if verify_first && mail {
        mailbox::wake(state);
    }
    let Some(session) = session else {
        if form {
            return Ok(redirect::back_to_page(
                "/sign-in",
                "EMAIL_NOT_VERIFIED",
                &[("email", Some(user.email.as_str()))],
            ));
        }
        return Ok(HttpResponse::Ok().json(SignedUp { token: None, user }));
    };
    let cookie = session::cookie::set_session(&state.settings.auth, &session.token, remember);
    Ok(redirect::signed_in(
        form,
        callback.as_deref(),
        &cookie,
        SignedUp {
            token: Some(session.token),
            user,
        },
    ))
}
