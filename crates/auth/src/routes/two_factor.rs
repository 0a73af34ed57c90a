//! `/api/auth/two-factor/*`, as better-auth's `twoFactor` plugin answers them (docs/api.md,
//! "Two-factor"). The rules are in [`crate::two_factor`].

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, HttpResponseBuilder, web};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use session::activity::{Client, Kind as Event};
use session::{CurrentUser, MaybeSession, User, UserId};
use utoipa::ToSchema;

use crate::answers::{Status, TokenAndUser};
use crate::body::Body;
use crate::error::ApiError;
use crate::otp::Kind;
use crate::repo::{QueryResult, Tx, users};
use crate::routes::sessions::signed_in;
use crate::state::AppState;
use crate::two_factor::{self, CHALLENGE_COOKIE, Passed, Proof, TRUST_COOKIE};
use crate::{client, mailbox, redirect};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Enable {
    password: String,
    /// `totp` (the default): an authenticator app. `otp` (codes by e-mail) is not offered.
    method: Option<String>,
    /// Ignored: the issuer is the product's name.
    issuer: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Enabled {
    method: &'static str,
    /// The `otpauth://` URI for the authenticator app (a QR code of it).
    #[serde(rename = "totpURI", skip_serializing_if = "Option::is_none")]
    totp_uri: Option<String>,
    /// Ten single-use codes, shown this once.
    #[serde(skip_serializing_if = "Option::is_none")]
    backup_codes: Option<Vec<String>>,
}

/// `POST /two-factor/enable` `{password}` → `{method, totpURI, backupCodes}`. Two-factor is on
/// once a first code from the app is verified (`verify-totp` with the session).
pub async fn enable(
    req: HttpRequest,
    state: web::Data<AppState>,
    current: MaybeSession,
    body: Body<Enable>,
) -> Result<HttpResponse, ApiError> {
    let me = signed_in(current)?;
    let input = body.value;
    let _ = input.issuer;
    let mailed = match input.method.as_deref() {
        None | Some("totp") => false,
        Some("otp") if mailbox::enabled(&state) => true,
        Some(_) => return Err(ApiError::bad("OTP_NOT_CONFIGURED")),
    };
    state.confirm_password(&req, &me, input.password).await?;
    if mailed {
        return enable_mailed(&req, &state, me).await;
    }
    let key = state.settings.auth.secret.expose().to_owned();
    let user = me.user.clone();
    let setup = state
        .db
        .write(move |conn| {
            if user.two_factor_enabled {
                return Err(ApiError::bad("TOTP_ALREADY_ENABLED"));
            }
            Ok(two_factor::begin(conn, &key, &user, Utc::now())?)
        })
        .await?;
    Ok(HttpResponse::Ok().json(Enabled {
        method: "totp",
        totp_uri: Some(setup.totp_uri),
        backup_codes: Some(setup.backup_codes),
    }))
}

/// Two-factor by mailed codes only: on at once, the session renewed.
async fn enable_mailed(
    req: &HttpRequest,
    state: &AppState,
    me: CurrentUser,
) -> Result<HttpResponse, ApiError> {
    let renewed = renewing(
        req,
        state,
        &me,
        two_factor::enable_mailed,
        Some(Event::TwoFactorEnabled),
    )
    .await?;
    tracing::info!(user_id = %me.user.id, "two-factor by e-mailed codes turned on");
    Ok(HttpResponse::Ok()
        .append_header((
            header::SET_COOKIE,
            session::cookie::set_session(&state.settings.auth, &renewed.token, true),
        ))
        .json(Enabled {
            method: "otp",
            totp_uri: None,
            backup_codes: None,
        }))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VerifyCode {
    code: String,
    /// Skip the code on this browser for 30 days.
    trust_device: Option<bool>,
    /// verify-backup-code's: a code spent while signed in never opens another session anyway.
    disable_session: Option<bool>,
    /// Where the two-factor page's form leads once signed in.
    #[serde(rename = "callbackURL")]
    callback_url: Option<String>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SendOtp {
    /// Accepted as better-auth's client sends it; the device is trusted when the code is
    /// verified with `trustDevice`.
    trust_device: Option<bool>,
}

/// `POST /two-factor/send-otp` → `{status: true}`: mails a code of 6 digits (3 minutes, 5
/// tries) to the user of the session, or of the sign-in waiting for its second factor.
pub async fn send_otp(
    req: HttpRequest,
    state: web::Data<AppState>,
    current: MaybeSession,
    body: Option<web::Json<SendOtp>>,
) -> Result<HttpResponse, ApiError> {
    let _ = body.map(|b| b.into_inner().trust_device);
    if !mailbox::enabled(&state) {
        return Err(ApiError::bad("OTP_NOT_CONFIGURED"));
    }
    let auth = &state.settings.auth;
    let challenge = session::cookie::get_signed(
        auth,
        &session::guard::cookie_header(&req),
        &named(auth, CHALLENGE_COOKIE),
    );
    let asker = match (current.0, challenge) {
        (Some(me), _) => Asker::Session(me.user.id.clone(), me.session.id.as_str().to_owned()),
        (None, Some(id)) => Asker::Challenge(id),
        (None, None) => return Err(ApiError::Unauthorized("INVALID_TWO_FACTOR_COOKIE")),
    };
    state
        .limit(
            &req,
            "two-factor-send-otp",
            None,
            state.settings.mail_rate_limit,
        )
        .await?;
    let key = auth.secret.expose().to_owned();
    let state_for_budget = state.clone();
    let user = state
        .db
        .read(move |conn| {
            let now = Utc::now();
            let (user_id, subject) = match asker {
                Asker::Session(user_id, session_id) => {
                    let subject = two_factor::session_subject(&user_id, &session_id);
                    (Some(user_id), subject)
                }
                Asker::Challenge(id) => (
                    two_factor::challenge_user(conn, &id, now)?,
                    two_factor::challenge_subject(&id),
                ),
            };
            let user = match user_id {
                Some(id) => users::find_by_id(conn, &id)?,
                None => None,
            };
            Ok::<_, ApiError>(user.map(|u| (u, subject)))
        })
        .await?;
    let Some((user, subject)) = user else {
        return Err(ApiError::Unauthorized("INVALID_TWO_FACTOR_COOKIE"));
    };
    if state_for_budget.mail_allowed(&user.email).await? {
        state
            .db
            .write(move |conn| {
                let locale = crate::i18n::user_locale(conn, &user.id)?;
                mailbox::queue_code(
                    conn,
                    &key,
                    Kind::TwoFactor,
                    &subject,
                    &user.email,
                    &user.name,
                    locale,
                )
            })
            .await?;
        mailbox::wake(&state);
    }
    Ok(HttpResponse::Ok().json(Status::DONE))
}

/// Who asks for a mailed code: someone signed in, or a sign-in waiting for its second factor.
enum Asker {
    Session(UserId, String),
    Challenge(String),
}

/// `POST /two-factor/verify-totp`, `/verify-backup-code` and `/verify-otp` `{code,
/// trustDevice?}` → `{token, user}`: the code of `body`, read as `kind` (`Proof::Totp`, ...).
/// With a session it finishes a set-up (the session is renewed) or spends a backup code; with
/// the challenge cookie of a password sign-in it opens the session. A form (the two-factor
/// page's) is answered with a redirect.
pub async fn verify(
    req: HttpRequest,
    state: web::Data<AppState>,
    current: MaybeSession,
    body: Body<VerifyCode>,
    kind: fn(String) -> Proof,
) -> Result<HttpResponse, ApiError> {
    let (form, input) = (body.form, body.value);
    let _ = input.disable_session;
    let callback = redirect::callback(&state.settings.auth, input.callback_url.as_deref())?;
    let proof = kind(input.code);
    // A refusal of the limit too goes back to the page, not to a JSON body in the browser.
    let outcome = match (
        state.rate_limit(&req, "two-factor-verify", None).await,
        current.0,
    ) {
        (Err(limited), _) => Err(Refused::from(limited)),
        (Ok(()), Some(me)) => verify_signed_in(&req, &state, me, proof).await,
        (Ok(()), None) => {
            let trust = input.trust_device.unwrap_or(false);
            verify_challenge(&req, &state, proof, trust).await
        }
    };
    Ok(match (outcome, form) {
        (Ok(resp), false) => resp,
        (Err(refused), false) => refused.answer(),
        (Ok(resp), true) => see_other(callback.as_deref().unwrap_or("/"), &resp),
        (Err(refused), true) => {
            let code = refused.error.code();
            let params = [("error", Some(code)), ("callbackURL", callback.as_deref())];
            let page = redirect::page_with("/two-factor", &params);
            see_other(&page, &refused.answer())
        }
    })
}

/// A refused second factor: the error, and the cookies its answer still sets.
struct Refused {
    error: ApiError,
    cookies: Vec<String>,
}

impl From<ApiError> for Refused {
    fn from(error: ApiError) -> Self {
        Self {
            error,
            cookies: Vec::new(),
        }
    }
}

impl Refused {
    fn answer(&self) -> HttpResponse {
        let mut resp = actix_web::ResponseError::error_response(&self.error);
        for cookie in &self.cookies {
            if let Ok(v) = header::HeaderValue::from_str(cookie) {
                resp.headers_mut().append(header::SET_COOKIE, v);
            }
        }
        resp
    }
}

/// 303 to `location`, carrying the cookies `answer` set.
fn see_other(location: &str, answer: &HttpResponse) -> HttpResponse {
    let mut resp = HttpResponse::SeeOther()
        .insert_header((header::LOCATION, location))
        .finish();
    for cookie in answer.headers().get_all(header::SET_COOKIE) {
        resp.headers_mut()
            .append(header::SET_COOKIE, cookie.clone());
    }
    resp
}

async fn verify_signed_in(
    req: &HttpRequest,
    state: &AppState,
    me: CurrentUser,
    proof: Proof,
) -> Result<HttpResponse, Refused> {
    let key = state.settings.auth.secret.expose().to_owned();
    let origin = client::origin(req, &state.settings.trusted_proxies);
    let (user_id, old_token) = (me.user.id.clone(), me.session.token.clone());
    let session_id = me.session.id.as_str().to_owned();
    let proven = me.session.id.clone();
    let (outcome, renewed) = state
        .db
        .write(move |conn| {
            let now = Utc::now();
            let outcome =
                two_factor::verify_signed_in(conn, &key, &user_id, &session_id, &proof, now)?;
            // A session that turned two-factor on is replaced by one proven with it.
            let renewed = match outcome {
                Ok(true) => {
                    let client = Client::from(&origin);
                    crate::activity::record(conn, &user_id, Event::TwoFactorEnabled, &client, now)?;
                    session::store::delete_by_token(conn, &old_token)?;
                    Some(session::store::create(conn, &user_id, true, &origin, now)?)
                }
                // A code checked on this session makes it fresh for a while.
                Ok(false) => {
                    session::store::prove(conn, &proven, now)?;
                    None
                }
                Err(_) => None,
            };
            Ok::<_, ApiError>((outcome, renewed))
        })
        .await?;
    outcome?;
    let mut resp = HttpResponse::Ok();
    // Only a set-up changed the user (its flag and `updatedAt`); a spent backup code did not.
    let (token, user) = match renewed {
        Some(s) => {
            resp.insert_header((
                header::SET_COOKIE,
                session::cookie::set_session(&state.settings.auth, &s.token, true),
            ));
            (s.token, current_user(state, me.user.id.clone()).await?)
        }
        None => (me.session.token, me.user),
    };
    Ok(resp.json(TokenAndUser { token, user }))
}

async fn verify_challenge(
    req: &HttpRequest,
    state: &AppState,
    proof: Proof,
    trust: bool,
) -> Result<HttpResponse, Refused> {
    let auth = &state.settings.auth;
    let header = session::guard::cookie_header(req);
    let Some(challenge_id) =
        session::cookie::get_signed(auth, &header, &named(auth, CHALLENGE_COOKIE))
    else {
        return Err(ApiError::Unauthorized("INVALID_TWO_FACTOR_COOKIE").into());
    };
    let key = auth.secret.expose().to_owned();
    let origin = client::origin(req, &state.settings.trusted_proxies);
    let base_url = auth.base_url.clone();
    let outcome = state
        .db
        .write(move |conn| {
            let now = Utc::now();
            let passed = match two_factor::verify_challenge(conn, &key, &challenge_id, &proof, now)?
            {
                Ok(passed) => passed,
                Err(refusal) => return Ok::<_, ApiError>(Err(refusal)),
            };
            let Passed { user_id, remember } = passed;
            let (session, mailed) =
                crate::activity::signed_in(conn, &user_id, remember, &origin, &base_url, now)?;
            let trusted = if trust {
                Some(two_factor::trust(conn, &user_id, now)?)
            } else {
                None
            };
            Ok(Ok((user_id, remember, session, trusted, mailed)))
        })
        .await?;
    let (user_id, remember, session, trusted) = match outcome {
        Ok((user_id, remember, session, trusted, mailed)) => {
            if mailed {
                state.wake_mailer();
            }
            (user_id, remember, session, trusted)
        }
        Err(refusal) => {
            let cookies = if refusal.challenge_void {
                vec![session::cookie::clear(auth, &named(auth, CHALLENGE_COOKIE))]
            } else {
                Vec::new()
            };
            return Err(Refused {
                error: refusal.error,
                cookies,
            });
        }
    };
    tracing::info!(%user_id, trusted = trusted.is_some(), "signed in with a second factor");
    let user = current_user(state, user_id).await?;
    let mut resp = HttpResponse::Ok();
    resp.append_header((
        header::SET_COOKIE,
        session::cookie::set_session(auth, &session.token, remember),
    ));
    resp.append_header((
        header::SET_COOKIE,
        session::cookie::clear(auth, &named(auth, CHALLENGE_COOKIE)),
    ));
    if let Some(id) = trusted {
        resp.append_header((header::SET_COOKIE, trust_cookie(state, &id)));
    }
    Ok(resp.json(TokenAndUser {
        token: session.token,
        user,
    }))
}

/// What a right password leads to for a user with two-factor on.
pub enum Gate {
    /// The device is trusted: sign in as usual, renewing its cookie with this id.
    Trusted(String),
    /// The answer that asks for the second factor (its cookies, and the body it will carry),
    /// no session.
    Challenge(HttpResponseBuilder, TwoFactorRedirect),
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TwoFactorRedirect {
    two_factor_redirect: bool,
    two_factor_methods: Vec<&'static str>,
}

/// The second step of a password sign-in of `user_id` with two-factor on: a trusted device
/// passes, anyone else is asked for a code.
pub async fn gate(
    req: &HttpRequest,
    state: &AppState,
    user_id: &UserId,
    remember: bool,
) -> Result<Gate, ApiError> {
    let auth = &state.settings.auth;
    let header = session::guard::cookie_header(req);
    let shown = session::cookie::get_signed(auth, &header, &named(auth, TRUST_COOKIE));
    let had_trust_cookie = shown.is_some();
    let mail = mailbox::enabled(state);
    let user_id = user_id.clone();
    let (trusted, challenge) = state
        .db
        .write(move |conn| {
            let now = Utc::now();
            if let Some(id) = shown
                && let Some(renewed) = two_factor::renew_trust(conn, &id, &user_id, now)?
            {
                return Ok::<_, ApiError>((Some(renewed), None));
            }
            let methods = two_factor::methods(conn, &user_id, mail)?;
            let challenge = two_factor::challenge(conn, &user_id, remember, now)?;
            Ok((None, Some((challenge, methods))))
        })
        .await?;
    let Some((challenge, methods)) = challenge else {
        return Ok(Gate::Trusted(trusted.unwrap_or_default()));
    };
    let mut resp = HttpResponse::Ok();
    let seconds = two_factor::CHALLENGE_LIFETIME.num_seconds();
    resp.append_header((
        header::SET_COOKIE,
        session::cookie::set_signed(auth, &named(auth, CHALLENGE_COOKIE), &challenge, seconds),
    ));
    resp.append_header((header::SET_COOKIE, session::cookie::clear_session(auth)));
    if had_trust_cookie {
        // Signed by us but no longer trusted (expired, renewed elsewhere, another person's).
        resp.append_header((
            header::SET_COOKIE,
            session::cookie::clear(auth, &named(auth, TRUST_COOKIE)),
        ));
    }
    Ok(Gate::Challenge(
        resp,
        TwoFactorRedirect {
            two_factor_redirect: true,
            two_factor_methods: methods,
        },
    ))
}

/// The `trust_device` cookie carrying `id`.
pub fn trust_cookie(state: &AppState, id: &str) -> String {
    let seconds = two_factor::TRUST_LIFETIME.num_seconds();
    let auth = &state.settings.auth;
    session::cookie::set_signed(auth, &named(auth, TRUST_COOKIE), id, seconds)
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Password {
    password: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TotpUri {
    #[serde(rename = "totpURI")]
    totp_uri: String,
}

/// `POST /two-factor/get-totp-uri` `{password}` → `{totpURI}`, to add the account to another
/// authenticator app.
pub async fn get_totp_uri(
    req: HttpRequest,
    state: web::Data<AppState>,
    current: MaybeSession,
    body: Body<Password>,
) -> Result<HttpResponse, ApiError> {
    let me = signed_in(current)?;
    let key = state.settings.auth.secret.expose().to_owned();
    let user_id = me.user.id.clone();
    let secret = state
        .db
        .read(move |conn| two_factor::secret_of(conn, &key, &user_id))
        .await?
        .ok_or_else(|| ApiError::bad("TOTP_NOT_ENABLED"))?;
    state
        .confirm_password(&req, &me, body.value.password)
        .await?;
    Ok(HttpResponse::Ok().json(TotpUri {
        totp_uri: two_factor::uri(&secret, &me.user.email),
    }))
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupCodes {
    status: bool,
    backup_codes: Vec<String>,
}

/// `POST /two-factor/generate-backup-codes` `{password}` → `{status: true, backupCodes}`: ten
/// new codes; the old ones stop working.
pub async fn generate_backup_codes(
    req: HttpRequest,
    state: web::Data<AppState>,
    current: MaybeSession,
    body: Body<Password>,
) -> Result<HttpResponse, ApiError> {
    let me = signed_in(current)?;
    if !me.user.two_factor_enabled {
        return Err(ApiError::bad("TWO_FACTOR_NOT_ENABLED"));
    }
    state
        .confirm_password(&req, &me, body.value.password)
        .await?;
    let key = state.settings.auth.secret.expose().to_owned();
    let user_id = me.user.id.clone();
    let codes = state
        .db
        .write(move |conn| two_factor::renew_backup_codes(conn, &key, &user_id))
        .await?;
    Ok(HttpResponse::Ok().json(BackupCodes {
        status: true,
        backup_codes: codes,
    }))
}

/// `POST /two-factor/disable` `{password}` → `{status: true}`. The secret, the backup codes and
/// every trusted device go; the session is renewed.
pub async fn disable(
    req: HttpRequest,
    state: web::Data<AppState>,
    current: MaybeSession,
    body: Body<Password>,
) -> Result<HttpResponse, ApiError> {
    let me = signed_in(current)?;
    state
        .confirm_password(&req, &me, body.value.password)
        .await?;
    let renewed = renewing(
        &req,
        &state,
        &me,
        two_factor::disable,
        Some(Event::TwoFactorDisabled),
    )
    .await?;
    tracing::info!(user_id = %me.user.id, "two-factor turned off");
    let auth = &state.settings.auth;
    Ok(HttpResponse::Ok()
        .append_header((
            header::SET_COOKIE,
            session::cookie::set_session(auth, &renewed.token, true),
        ))
        .append_header((
            header::SET_COOKIE,
            session::cookie::clear(auth, &named(auth, TRUST_COOKIE)),
        ))
        .json(Status::DONE))
}

/// Applies `change` to the user of `me` and replaces `me`'s session by a new one, in one
/// transaction: a change to how the account signs in leaves no session from before it.
async fn renewing(
    req: &HttpRequest,
    state: &AppState,
    me: &CurrentUser,
    change: fn(&mut Tx, &UserId, DateTime<Utc>) -> QueryResult<()>,
    event: Option<Event>,
) -> Result<session::Session, ApiError> {
    let origin = client::origin(req, &state.settings.trusted_proxies);
    let (user_id, old_token) = (me.user.id.clone(), me.session.token.clone());
    state
        .db
        .write(move |conn| {
            let now = Utc::now();
            change(conn, &user_id, now)?;
            if let Some(kind) = event {
                crate::activity::record(conn, &user_id, kind, &Client::from(&origin), now)?;
            }
            session::store::delete_by_token(conn, &old_token)?;
            session::store::create(conn, &user_id, true, &origin, now)
        })
        .await
}

/// The full name of one of the two-factor cookies.
fn named(auth: &session::AuthSettings, suffix: &str) -> String {
    session::cookie::cookie_name(auth, suffix)
}

/// The user as stored now (after a change of its two-factor flag).
async fn current_user(state: &AppState, user_id: UserId) -> Result<User, ApiError> {
    state
        .db
        .read(move |conn| users::find_by_id(conn, &user_id))
        .await?
        .ok_or(ApiError::Unauthorized("UNAUTHORIZED"))
}
