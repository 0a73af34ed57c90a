//! `/api/auth/passkey/*`, as better-auth's passkey plugin answers them (docs/api.md,
//! "Passkeys"). The rules are in [`crate::passkey`]; webauthn-rs checks every signature.
//!
//! A ceremony is two requests: the options (which leave its state in `auth.verification` and
//! its name in the challenge cookie) and the answer, which takes that state once, whatever the
//! outcome, so that a challenge is never answered twice.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::Utc;
use serde::Deserialize;
use serde_json::Value;
use session::activity::Kind as Event;
use session::{CurrentUser, MaybeSession, UserId};
use utoipa::ToSchema;
use webauthn_rs::prelude::{PublicKeyCredential, RegisterPublicKeyCredential, Webauthn};

use crate::answers::{SessionAndUser, Status};
use crate::body::Body;
use crate::error::ApiError;
use crate::keys;
use crate::passkey::{self, Attachment, CEREMONY_LIFETIME, CHALLENGE_COOKIE, Ceremony, Registered};
use crate::repo::{passkeys, users, verification};
use crate::routes::sessions::signed_in;
use crate::state::AppState;

#[derive(Debug, Deserialize, ToSchema, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct RegisterOptionsQuery {
    #[param(inline)]
    authenticator_attachment: Option<Attachment>,
    /// The name the authenticator shows for the account (the address otherwise).
    name: Option<String>,
    /// better-auth's passkey-first registration; unused here, where registration needs a session.
    context: Option<String>,
}

/// `GET /passkey/generate-register-options`: the options of a new passkey for the signed-in
/// user, whose session must be fresh. Sets the challenge cookie.
pub async fn generate_register_options(
    req: HttpRequest,
    state: web::Data<AppState>,
    current: MaybeSession,
    query: web::Query<RegisterOptionsQuery>,
) -> Result<HttpResponse, ApiError> {
    let me = fresh(current)?;
    let query = query.into_inner();
    let _ = query.context;
    let name = optional_name(query.name.as_deref())?;
    let rp = relying_party(&state)?;
    limit_for_user(&req, &state, &me.user.id, "passkey-register").await?;
    let user_id = me.user.id.clone();
    let existing = state
        .db
        .read(move |conn| passkeys::credentials(conn, &user_id))
        .await?
        .into_iter()
        .filter_map(|(id, _)| decode_id(&id))
        .collect();
    let (options, ceremony) = passkey::start_registration(
        &rp,
        &me.user,
        name.as_deref(),
        query.authenticator_attachment,
        existing,
    )
    .map_err(ApiError::internal)?;
    begin(&state, ceremony, options).await
}

/// `GET /passkey/generate-authenticate-options`: the options of a sign-in with a passkey. Any
/// discoverable passkey may answer; a signed-in user's own are listed, as better-auth does.
pub async fn generate_authenticate_options(
    req: HttpRequest,
    state: web::Data<AppState>,
    current: MaybeSession,
) -> Result<HttpResponse, ApiError> {
    let rp = relying_party(&state)?;
    // Each answer leaves a row for five minutes: counted per client, as every route that
    // writes before anyone has signed in.
    state
        .rate_limit(&req, "passkey-authenticate-options", None)
        .await?;
    let allowed = match current.0 {
        Some(me) => {
            let user_id = me.user.id;
            state
                .db
                .read(move |conn| passkeys::credentials(conn, &user_id))
                .await?
        }
        None => Vec::new(),
    };
    let (options, ceremony) =
        passkey::start_authentication(&rp, &allowed).map_err(ApiError::internal)?;
    begin(&state, ceremony, options).await
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VerifyRegistration {
    /// The browser's `PublicKeyCredential` as JSON (`toJSON()`).
    #[schema(value_type = Object)]
    response: Value,
    name: Option<String>,
    /// better-auth's: a new session beside the passkey. Accepted; the passkey is added to the
    /// session that asked for it and no other session is opened.
    create_session: Option<bool>,
}

/// `POST /passkey/verify-registration` `{response, name?}` → the new passkey.
pub async fn verify_registration(
    req: HttpRequest,
    state: web::Data<AppState>,
    current: MaybeSession,
    body: Body<VerifyRegistration>,
) -> Result<HttpResponse, ApiError> {
    let me = fresh(current)?;
    let input = body.value;
    let _ = input.create_session;
    let name = optional_name(input.name.as_deref())?;
    let rp = relying_party(&state)?;
    limit_for_user(&req, &state, &me.user.id, "passkey-register").await?;
    let Ceremony::Registration {
        user_id,
        state: reg,
    } = take_ceremony(&req, &state).await?
    else {
        return Err(challenge_not_found());
    };
    if user_id != me.user.id.as_str() {
        return Err(ApiError::Unauthorized(
            "YOU_ARE_NOT_ALLOWED_TO_REGISTER_THIS_PASSKEY",
        ));
    }
    let failed = || ApiError::bad("FAILED_TO_VERIFY_REGISTRATION");
    let transports = passkey::reported_transports(&input.response);
    let credential: RegisterPublicKeyCredential =
        serde_json::from_value(input.response).map_err(|_| failed())?;
    let key = rp
        .finish_passkey_registration(&credential, &reg)
        .map_err(|e| {
            tracing::info!(error = %e, "a passkey registration did not verify");
            failed()
        })?;
    let key = Registered::of(&key, Some(transports)).map_err(ApiError::internal)?;
    let client = state.activity_client(&req);
    let user_id = me.user.id.clone();
    let added = state
        .db
        .write(move |conn| {
            let now = Utc::now();
            let added = match passkeys::insert(conn, &user_id, name.as_deref(), &key, now)? {
                Err(()) => return Err(ApiError::bad("TOO_MANY_PASSKEYS")),
                Ok(None) => return Err(ApiError::bad("PREVIOUSLY_REGISTERED")),
                Ok(Some(added)) => added,
            };
            crate::activity::record(conn, &user_id, Event::PasskeyAdded, &client, now)?;
            Ok(added)
        })
        .await?;
    tracing::info!(user_id = %me.user.id, "passkey added");
    Ok(HttpResponse::Ok().json(added))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyAuthentication {
    /// The browser's `PublicKeyCredential` as JSON (`toJSON()`).
    #[schema(value_type = Object)]
    response: Value,
}

/// `POST /passkey/verify-authentication` `{response}` → `{session, user}`: signed in, with the
/// session cookie. A passkey is a second factor in itself: two-factor asks for nothing more.
pub async fn verify_authentication(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: Body<VerifyAuthentication>,
) -> Result<HttpResponse, ApiError> {
    let rp = relying_party(&state)?;
    state.rate_limit(&req, "passkey-sign-in", None).await?;
    let Ceremony::Authentication { state: auth } = take_ceremony(&req, &state).await? else {
        return Err(challenge_not_found());
    };
    let response = body.value.response;
    let credential_id = response
        .get("id")
        .and_then(Value::as_str)
        .filter(|id| id.len() <= 1024)
        .map(str::to_owned)
        .ok_or_else(|| ApiError::bad("AUTHENTICATION_FAILED"))?;
    let failed = || ApiError::bad("AUTHENTICATION_FAILED");
    let credential: Result<PublicKeyCredential, _> = serde_json::from_value(response);
    let origin = crate::client::origin(&req, &state.settings.trusted_proxies);
    let base_url = state.settings.auth.base_url.clone();
    // The key's new counter and the session it opens are committed together.
    let (session, user, mailed) = state
        .db
        .write(move |conn| {
            let Some((id, user_id, stored)) = passkeys::find_for_sign_in(conn, &credential_id)?
            else {
                return Err(ApiError::Unauthorized("PASSKEY_NOT_FOUND"));
            };
            let credential = credential.map_err(|_| failed())?;
            let mut key = passkey::from_stored(stored).map_err(ApiError::internal)?;
            let result = rp
                .finish_discoverable_authentication_v2(&credential, auth, &key)
                .map_err(|e| {
                    tracing::info!(error = %e, "a passkey sign-in did not verify");
                    failed()
                })?;
            if key.update_credential(&result) == Some(true) {
                let updated = Registered::of(&key, None).map_err(ApiError::internal)?;
                passkeys::update_after_sign_in(conn, &id, &updated)?;
            }
            let user = users::find_by_id(conn, &user_id)?
                .ok_or(ApiError::Unauthorized("PASSKEY_NOT_FOUND"))?;
            let (session, mailed) =
                crate::activity::signed_in(conn, &user.id, true, &origin, &base_url, Utc::now())?;
            Ok::<_, ApiError>((session, user, mailed))
        })
        .await?;
    if mailed {
        state.wake_mailer();
    }
    tracing::info!(user_id = %user.id, "signed in with a passkey");
    Ok(HttpResponse::Ok()
        .append_header((
            header::SET_COOKIE,
            session::cookie::set_session(&state.settings.auth, &session.token, true),
        ))
        .json(SessionAndUser {
            session: &session,
            user: &user,
        }))
}

/// `GET /passkey/list-user-passkeys`: the signed-in user's passkeys, oldest first.
pub async fn list(
    state: web::Data<AppState>,
    current: MaybeSession,
) -> Result<HttpResponse, ApiError> {
    let user_id = signed_in(current)?.user.id;
    let listed = state
        .db
        .read(move |conn| passkeys::list(conn, &user_id))
        .await?;
    Ok(HttpResponse::Ok().json(listed))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PasskeyId {
    id: String,
}

/// `POST /passkey/delete-passkey` `{id}` → `{status: true}`; 404 `PASSKEY_NOT_FOUND` for an id
/// that is not one of the user's (whether or not it is someone else's).
pub async fn delete(
    req: HttpRequest,
    state: web::Data<AppState>,
    current: MaybeSession,
    body: Body<PasskeyId>,
) -> Result<HttpResponse, ApiError> {
    let user_id = signed_in(current)?.user.id;
    let id = body.value.id;
    let client = state.activity_client(&req);
    state
        .db
        .write(move |conn| {
            if !passkeys::delete(conn, &user_id, &id)? {
                return Err(not_found());
            }
            crate::activity::record(conn, &user_id, Event::PasskeyRemoved, &client, Utc::now())?;
            Ok(())
        })
        .await?;
    Ok(HttpResponse::Ok().json(Status::DONE))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Rename {
    id: String,
    name: String,
}

#[derive(Debug, serde::Serialize, ToSchema)]
pub struct Renamed {
    passkey: passkeys::Listed,
}

/// `POST /passkey/update-passkey` `{id, name}` → `{passkey}`.
pub async fn update(
    state: web::Data<AppState>,
    current: MaybeSession,
    body: Body<Rename>,
) -> Result<HttpResponse, ApiError> {
    let user_id = signed_in(current)?.user.id;
    let Rename { id, name } = body.value;
    let name = passkey::valid_name(&name).ok_or_else(bad_name)?;
    let renamed = state
        .db
        .read(move |conn| passkeys::rename(conn, &user_id, &id, &name))
        .await?
        .ok_or_else(not_found)?;
    Ok(HttpResponse::Ok().json(Renamed { passkey: renamed }))
}

/// The signed-in user, whose session must be fresh (better-auth's `freshSessionMiddleware`).
fn fresh(current: MaybeSession) -> Result<CurrentUser, ApiError> {
    let me = signed_in(current)?;
    if !me.session.is_fresh(Utc::now()) {
        return Err(ApiError::Forbidden("SESSION_NOT_FRESH"));
    }
    Ok(me)
}

/// The relying party; none when `AUTH_BASE_URL` names its host by an IP address.
fn relying_party(state: &AppState) -> Result<std::sync::Arc<Webauthn>, ApiError> {
    state
        .passkeys
        .clone()
        .ok_or_else(|| ApiError::bad("PASSKEYS_UNAVAILABLE"))
}

/// Counts a registration step against the user's budget and the client's.
async fn limit_for_user(
    req: &HttpRequest,
    state: &AppState,
    user_id: &UserId,
    route: &'static str,
) -> Result<(), ApiError> {
    state
        .limit(
            req,
            route,
            Some(("user", user_id.as_str())),
            state.settings.rate_limit,
        )
        .await
}

/// Leaves the ceremony's state for [`CEREMONY_LIFETIME`] and answers its options with the
/// cookie that names it.
async fn begin(
    state: &AppState,
    ceremony: Ceremony,
    options: Value,
) -> Result<HttpResponse, ApiError> {
    let value = serde_json::to_string(&ceremony).map_err(ApiError::internal)?;
    let token = keys::link_token();
    let identifier = ceremony_identifier(&token);
    state
        .db
        .read(move |conn| {
            let now = Utc::now();
            verification::insert(conn, &identifier, &value, now + CEREMONY_LIFETIME, now)
        })
        .await?;
    let auth = &state.settings.auth;
    let cookie = session::cookie::set_signed(
        auth,
        &session::cookie::cookie_name(auth, CHALLENGE_COOKIE),
        &token,
        CEREMONY_LIFETIME.num_seconds(),
    );
    Ok(HttpResponse::Ok()
        .append_header((header::SET_COOKIE, cookie))
        .json(options))
}

/// Takes the state of the ceremony the challenge cookie names: once, whatever comes of it.
async fn take_ceremony(req: &HttpRequest, state: &AppState) -> Result<Ceremony, ApiError> {
    let auth = &state.settings.auth;
    let token = session::cookie::get_signed(
        auth,
        &session::guard::cookie_header(req),
        &session::cookie::cookie_name(auth, CHALLENGE_COOKIE),
    )
    .ok_or_else(challenge_not_found)?;
    let identifier = ceremony_identifier(&token);
    let value = state
        .db
        .read(move |conn| verification::consume(conn, &identifier, Utc::now()))
        .await?
        .ok_or_else(challenge_not_found)?;
    serde_json::from_str(&value).map_err(|_| challenge_not_found())
}

fn ceremony_identifier(token: &str) -> String {
    format!("passkey-{}", keys::token_digest(token))
}

fn decode_id(id: &str) -> Option<webauthn_rs::prelude::CredentialID> {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(id)
        .ok()
}

fn challenge_not_found() -> ApiError {
    ApiError::bad("CHALLENGE_NOT_FOUND")
}

fn not_found() -> ApiError {
    ApiError::NotFound("PASSKEY_NOT_FOUND")
}

/// A passkey name the client may leave out: when given, valid ([`passkey::valid_name`]).
fn optional_name(name: Option<&str>) -> Result<Option<String>, ApiError> {
    name.map(|n| passkey::valid_name(n).ok_or_else(bad_name))
        .transpose()
}

fn bad_name() -> ApiError {
    ApiError::bad_request(
        "VALIDATION_ERROR",
        format!(
            "a passkey's name is 1 to {} characters",
            passkey::MAX_NAME_CHARS
        ),
    )
}
