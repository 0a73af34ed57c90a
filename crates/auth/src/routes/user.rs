//! The signed-in user changes their name, picture or password.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer};
use session::activity::Kind;
use session::{MaybeSession, UserId};
use utoipa::ToSchema;

use crate::answers::{PasswordChanged, Status};
use crate::body::Body;
use crate::error::ApiError;
use crate::links::{self, Purpose};
use crate::repo::{QueryResult, Tx, accounts, sessions, users};
use crate::routes::sessions::signed_in;
use crate::state::AppState;
use crate::{client, password};

/// Longest display name kept (as at sign-up).
pub const MAX_NAME: usize = 200;
pub const MAX_IMAGE: usize = 2048;

/// `Some(None)` for an explicit `null`, `None` for an absent field.
fn nullable<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateUser {
    name: Option<String>,
    /// null removes the picture.
    #[serde(default, deserialize_with = "nullable")]
    image: Option<Option<String>>,
    /// Accepted only to be refused with better-auth's own error.
    email: Option<serde_json::Value>,
}

/// An e-mail address as stored, or better-auth's `INVALID_EMAIL`.
pub fn valid_email(raw: &str) -> Result<String, ApiError> {
    domain::email::normalise(raw).ok_or_else(|| ApiError::bad("INVALID_EMAIL"))
}

/// The address a change moves `current` to: an address, and not the one it has.
pub fn new_address(current: &session::User, raw: &str) -> Result<String, ApiError> {
    let new_email = domain::email::normalise(raw).ok_or_else(|| {
        ApiError::bad_request("VALIDATION_ERROR", "newEmail: not an e-mail address")
    })?;
    if new_email == current.email {
        return Err(ApiError::bad_request(
            "EMAIL_IS_THE_SAME",
            "Email is the same",
        ));
    }
    Ok(new_email)
}

/// Moves the user to `email`, verified or not, at the request of `client`. Links mailed to the
/// old address stop working, so that none of them verifies the new one. `Ok(None)` when the
/// address is taken: the statement failed, and the caller's transaction must end.
pub fn move_address(
    conn: &mut Tx,
    user_id: &UserId,
    email: &str,
    verified: bool,
    client: &session::activity::Client,
    now: DateTime<Utc>,
) -> QueryResult<Option<session::User>> {
    let moved = users::set_email(conn, user_id, email, verified, now)?;
    if moved.is_some() {
        links::drop_others(conn, Purpose::Verify, user_id)?;
        crate::activity::record(conn, user_id, Kind::EmailChanged, client, now)?;
    }
    Ok(moved)
}

/// A display name as stored: trimmed, bounded, printable.
pub fn valid_name(raw: &str) -> Result<String, ApiError> {
    let name = raw.trim().to_owned();
    if name.chars().count() > MAX_NAME || name.chars().any(char::is_control) {
        return Err(ApiError::bad_request(
            "VALIDATION_ERROR",
            "name: at most 200 printable characters",
        ));
    }
    Ok(name)
}

/// A picture address as stored: an http(s) URL, or nothing when empty.
pub fn valid_image(raw: Option<&str>) -> Result<Option<String>, ApiError> {
    let image = raw
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
    Ok(image)
}

/// The 400 better-auth answers for a password outside its length bounds.
pub fn check_length(password: &str) -> Result<(), ApiError> {
    let length = password.chars().count();
    if length < password::MIN_LENGTH {
        return Err(ApiError::bad("PASSWORD_TOO_SHORT"));
    }
    if length > password::MAX_LENGTH {
        return Err(ApiError::bad("PASSWORD_TOO_LONG"));
    }
    Ok(())
}

/// `POST /api/auth/update-user`: `{name?, image?}`; the e-mail address cannot change here.
pub async fn update_user(
    state: web::Data<AppState>,
    current: MaybeSession,
    body: Body<UpdateUser>,
) -> Result<HttpResponse, ApiError> {
    let me = signed_in(current)?;
    let input = body.value;
    if input.email.is_some() {
        return Err(ApiError::bad("EMAIL_CAN_NOT_BE_UPDATED"));
    }
    if input.name.is_none() && input.image.is_none() {
        return Err(ApiError::bad("NO_FIELDS_TO_UPDATE"));
    }
    let name = input.name.as_deref().map(valid_name).transpose()?;
    let image = match input.image {
        None => None,
        Some(raw) => Some(valid_image(raw.as_deref())?),
    };
    state
        .db
        .read(move |conn| {
            users::update_profile(
                conn,
                &me.user.id,
                name.as_deref(),
                image.as_ref().map(Option::as_deref),
                Utc::now(),
            )
        })
        .await?;
    Ok(HttpResponse::Ok().json(Status::DONE))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ChangePassword {
    #[schema(min_length = 8, max_length = 128)]
    new_password: String,
    current_password: String,
    revoke_other_sessions: Option<bool>,
}

/// `POST /api/auth/change-password`. With `revokeOtherSessions`, every session ends and a new
/// one is opened for this browser: `token` is its token, else `null`.
pub async fn change_password(
    req: HttpRequest,
    state: web::Data<AppState>,
    current: MaybeSession,
    body: Body<ChangePassword>,
) -> Result<HttpResponse, ApiError> {
    let me = signed_in(current)?;
    let input = body.value;
    check_length(&input.new_password)?;
    let limit = state.settings.rate_limit;
    state
        .limit(
            &req,
            "change-password",
            Some(("user", me.user.id.as_str())),
            limit,
        )
        .await?;
    let (current_password, new_password) = (input.current_password, input.new_password);
    match state
        .password_matches(&me.user.id, current_password)
        .await?
    {
        None => return Err(ApiError::bad("CREDENTIAL_ACCOUNT_NOT_FOUND")),
        Some(false) => return Err(ApiError::bad("INVALID_PASSWORD")),
        Some(true) => {}
    }
    let hash = state
        .hashes
        .hash(new_password)
        .await?
        .map_err(ApiError::internal)?;

    let revoke = input.revoke_other_sessions.unwrap_or(false);
    let origin = client::origin(&req, &state.settings.trusted_proxies);
    let user_id = me.user.id.clone();
    let session_id = me.session.id.clone();
    let new_session = state
        .db
        .write(move |conn| {
            let now = Utc::now();
            accounts::set_password(conn, &user_id, &hash, now)?;
            let client = session::activity::Client::from(&origin);
            crate::activity::record(conn, &user_id, Kind::PasswordChanged, &client, now)?;
            if !revoke {
                // The password was just checked on this session.
                session::store::prove(conn, &session_id, now)?;
                return Ok(None);
            }
            sessions::delete_all(conn, &user_id)?;
            session::store::create(conn, &user_id, true, &origin, now).map(Some)
        })
        .await?;
    tracing::info!(user_id = %me.user.id, revoke, "password changed");
    let mut resp = HttpResponse::Ok();
    if let Some(s) = &new_session {
        resp.insert_header((
            header::SET_COOKIE,
            session::cookie::set_session(&state.settings.auth, &s.token, true),
        ));
    }
    Ok(resp.json(PasswordChanged {
        token: new_session.map(|s| s.token),
        user: me.user,
    }))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ChangeEmail {
    new_email: String,
    /// Where the link in the e-mail leads once used.
    #[serde(rename = "callbackURL")]
    callback_url: Option<String>,
}

/// `POST /api/auth/change-email` `{newEmail, callbackURL?}` → `{status: true}`, as better-auth's
/// core answers it. An unverified address changes at once (and the new one gets a verification
/// mail); a verified one changes only when the link mailed to the new address is opened. An
/// address that someone else uses gets the same answer and no mail, so that the route tells no
/// one which addresses have accounts.
pub async fn change_email(
    req: HttpRequest,
    state: web::Data<AppState>,
    current: MaybeSession,
    body: Body<ChangeEmail>,
) -> Result<HttpResponse, ApiError> {
    let me = signed_in(current)?;
    let input = body.value;
    let new_email = new_address(&me.user, &input.new_email)?;
    let callback = crate::redirect::callback(&state.settings.auth, input.callback_url.as_deref())?
        .unwrap_or_else(|| "/".to_owned());
    if !crate::mailbox::enabled(&state) {
        return Err(ApiError::EmailDisabled);
    }
    state
        .limit(
            &req,
            "change-email",
            Some(("user", me.id().as_str())),
            state.settings.mail_rate_limit,
        )
        .await?;
    let auth = state.settings.auth.clone();
    let user = me.user;
    let client = state.activity_client(&req);
    let queued = state
        .db
        .write(move |conn| {
            let now = Utc::now();
            users::lock(conn, &user.id)?;
            if users::find_by_email(conn, &new_email)?.is_some() {
                return Ok::<_, ApiError>(false);
            }
            if !user.email_verified {
                // Taken meanwhile by a sign-up: the statement failed, so the transaction ends.
                let moved = move_address(conn, &user.id, &new_email, false, &client, now)?
                    .ok_or(ApiError::UserExists)?;
                crate::routes::verify::send_verification(conn, &auth, &moved, &callback)?;
                tracing::info!(user_id = %user.id, "unverified address changed");
                return Ok(true);
            }
            let token = links::issue_change(conn, &user.id, &new_email, now)?;
            let link = links::verify_link(&auth.base_url, &token, &callback);
            let locale = crate::i18n::user_locale(conn, &user.id)?;
            crate::mailbox::queue(
                conn,
                auth.secret.expose(),
                crate::mailbox::LinkMail::ChangeEmail,
                &new_email,
                &user.name,
                &link,
                locale,
            )?;
            Ok(true)
        })
        .await?;
    if queued {
        crate::mailbox::wake(&state);
    }
    Ok(HttpResponse::Ok().json(Status::DONE))
}
