//! E-mail codes, as better-auth's `emailOTP` plugin serves them: sending a code, signing in with
//! one, verifying the address, checking a code, and resetting the password with one. The rules
//! of a code (length, lifetime, tries) are [`crate::otp`]'s.

use actix_web::{HttpRequest, HttpResponse, web};
use chrono::Utc;
use serde::Deserialize;
use session::{MaybeSession, User};
use utoipa::ToSchema;

use crate::answers::{CodeVerified, Success, TokenAndUser};
use crate::body::Body;
use crate::client;
use crate::error::ApiError;
use crate::links::{self, Purpose};
use crate::mailbox;
use crate::otp::{Kind, OnSuccess};
use crate::redirect;
use crate::repo::users::{self, NewUser};
use crate::repo::{QueryResult, Tx, accounts, sessions};
use crate::routes::reset::MAIL_ROUTE_MIN_TIME;
use crate::routes::sessions::signed_in;
use crate::routes::user::{
    check_length, move_address, new_address, valid_email, valid_image, valid_name,
};
use crate::state::AppState;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SendCode {
    email: String,
    #[serde(rename = "type")]
    kind: Kind,
    /// Carried on by the sign-in page's form to the code form.
    #[serde(rename = "callbackURL")]
    callback_url: Option<String>,
}

/// `POST /api/auth/email-otp/send-verification-otp` `{email, type}`: always `{success: true}`,
/// after the same time, whether or not the address is known. A sign-in code also goes to an
/// unknown address (signing in with it creates the account); the other kinds only to users.
pub async fn send_verification_otp(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: Body<SendCode>,
) -> Result<HttpResponse, ApiError> {
    let (form, input) = (body.form, body.value);
    let outcome = send_code(
        &req,
        &state,
        &input.email,
        input.kind,
        "send-verification-otp",
    )
    .await;
    if !form {
        return outcome;
    }
    // The sign-in page's form: on to the code's form, or back with the error.
    let email = input.email.trim();
    let callback = input.callback_url.as_deref();
    Ok(match outcome {
        Ok(_) => redirect::see_other(&code_page(email, callback, None)),
        Err(e) => redirect::back_to_page(
            "/sign-in?with=code",
            e.code(),
            &[("email", Some(email)), ("callbackURL", callback)],
        ),
    })
}

/// The sign-in page's form for the code mailed to `email`.
fn code_page(email: &str, callback: Option<&str>, error: Option<&str>) -> String {
    redirect::page_with(
        "/sign-in?with=code&sent=1",
        &[
            ("email", Some(email)),
            ("callbackURL", callback),
            ("error", error),
        ],
    )
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EmailOnly {
    email: String,
}

/// `POST /api/auth/email-otp/request-password-reset` and its older name
/// `POST /api/auth/forget-password/email-otp` `{email}`: a reset code, as
/// `send-verification-otp` with `type: "forget-password"`.
pub async fn request_password_reset(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: Body<EmailOnly>,
) -> Result<HttpResponse, ApiError> {
    send_code(
        &req,
        &state,
        &body.value.email,
        Kind::ForgetPassword,
        "request-password-reset-otp",
    )
    .await
}

async fn send_code(
    req: &HttpRequest,
    state: &AppState,
    email: &str,
    kind: Kind,
    route: &'static str,
) -> Result<HttpResponse, ApiError> {
    if !mailbox::enabled(state) {
        return Err(ApiError::EmailDisabled);
    }
    let email = valid_email(email)?;
    // The client's own budget only: a count per address would let anyone stop someone else's
    // codes. The address's daily mail budget is counted whoever asks and refuses nothing.
    state
        .limit(req, route, None, state.settings.mail_rate_limit)
        .await?;
    let started = tokio::time::Instant::now();
    let allowed = state.mail_allowed(&email).await?;
    let secret = state.settings.auth.secret.expose().to_owned();
    // For an address without an account (a sign-up by code), the language of the browser that
    // asked: the one the account will keep.
    let browser = crate::i18n::request_locale(req);
    let queued = state
        .db
        .write(move |conn| {
            let user = users::find_by_email(conn, &email)?;
            if !allowed || (user.is_none() && kind != Kind::SignIn) {
                return Ok::<_, ApiError>(false);
            }
            let locale = match &user {
                Some(u) => crate::i18n::user_locale(conn, &u.id)?,
                None => browser,
            };
            let name = user.map(|u| u.name).unwrap_or_default();
            mailbox::queue_code(conn, &secret, kind, &email, &email, &name, locale)?;
            Ok(true)
        })
        .await;
    if matches!(queued, Ok(true)) {
        mailbox::wake(state);
    }
    tokio::time::sleep_until(started + MAIL_ROUTE_MIN_TIME).await;
    queued?;
    Ok(HttpResponse::Ok().json(Success { success: true }))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SignInWithCode {
    email: String,
    /// The six digits of the mail.
    otp: String,
    /// The name of an account the sign-in creates.
    name: Option<String>,
    image: Option<String>,
    /// Where the sign-in page's form goes afterwards.
    #[serde(rename = "callbackURL")]
    callback_url: Option<String>,
}

/// `POST /api/auth/sign-in/email-otp` `{email, otp, name?, image?}` → `{token, user}` and the
/// session cookie. An unknown address gets a new, verified account. A known address whose owner
/// never proved it loses every other way in (password, Google link, sessions) before it is
/// marked verified: whoever signed up with someone else's address before that person arrived
/// keeps nothing.
pub async fn sign_in_email_otp(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: Body<SignInWithCode>,
) -> Result<HttpResponse, ApiError> {
    let (form, input) = (body.form, body.value);
    let typed_email = input.email.trim().to_owned();
    let callback_url = input.callback_url.clone();
    let outcome = sign_in_with_code(&req, &state, input, form).await;
    if !form {
        return outcome;
    }
    Ok(outcome.unwrap_or_else(|e| {
        redirect::see_other(&code_page(
            &typed_email,
            callback_url.as_deref(),
            Some(e.code()),
        ))
    }))
}

async fn sign_in_with_code(
    req: &HttpRequest,
    state: &AppState,
    input: SignInWithCode,
    form: bool,
) -> Result<HttpResponse, ApiError> {
    let callback = redirect::callback(&state.settings.auth, input.callback_url.as_deref())?;
    let email = valid_email(&input.email)?;
    let name = valid_name(input.name.as_deref().unwrap_or(""))?;
    let image = valid_image(input.image.as_deref())?;
    state.rate_limit(req, "sign-in-email-otp", None).await?;
    state
        .codes()
        .verify(Kind::SignIn, &email, &input.otp, OnSuccess::Spend)
        .await?;
    let origin = client::origin(req, &state.settings.trusted_proxies);
    let base_url = state.settings.auth.base_url.clone();
    let locale = crate::i18n::request_locale(req);
    let (session, user, mailed) = state
        .db
        .write(move |conn| {
            let now = Utc::now();
            let user = match users::find_by_email(conn, &email)? {
                Some(user) if user.email_verified => user,
                Some(user) => claim_unproven(conn, user, now)?,
                None => {
                    let new = NewUser {
                        name: &name,
                        email: &email,
                        email_verified: true,
                        image: image.as_deref(),
                        locale,
                    };
                    // Taken meanwhile by a sign-up.
                    users::insert(conn, &new, now)?.ok_or(ApiError::UserExists)?
                }
            };
            let (session, mailed) =
                crate::activity::signed_in(conn, &user.id, true, &origin, &base_url, now)?;
            Ok::<_, ApiError>((session, user, mailed))
        })
        .await?;
    if mailed {
        state.wake_mailer();
    }
    tracing::info!(user_id = %user.id, "signed in with an e-mailed code");
    let cookie = session::cookie::set_session(&state.settings.auth, &session.token, true);
    Ok(redirect::signed_in(
        form,
        callback.as_deref(),
        &cookie,
        TokenAndUser {
            token: session.token,
            user,
        },
    ))
}

/// The user's address is proven now; whatever reached the account before without that proof
/// (its password, its provider links, its sessions) is ended.
fn claim_unproven(conn: &mut Tx, user: User, now: chrono::DateTime<Utc>) -> QueryResult<User> {
    users::lock(conn, &user.id)?;
    accounts::delete_all(conn, &user.id)?;
    sessions::delete_all(conn, &user.id)?;
    users::mark_verified(conn, &user.id, now)?;
    Ok(User {
        email_verified: true,
        updated_at: now,
        ..user
    })
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyWithCode {
    email: String,
    otp: String,
}

/// `POST /api/auth/email-otp/verify-email` `{email, otp}` → `{status: true, token: null, user}`.
pub async fn verify_email(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: Body<VerifyWithCode>,
) -> Result<HttpResponse, ApiError> {
    let input = body.value;
    let email = valid_email(&input.email)?;
    state.rate_limit(&req, "verify-email-otp", None).await?;
    state
        .codes()
        .verify(
            Kind::EmailVerification,
            &email,
            &input.otp,
            OnSuccess::Spend,
        )
        .await?;
    let user = state
        .db
        .write(move |conn| {
            let now = Utc::now();
            let user = users::find_by_email(conn, &email)?
                .ok_or_else(|| ApiError::bad("USER_NOT_FOUND"))?;
            users::mark_verified(conn, &user.id, now)?;
            // The link mailed with this code is spent with it.
            links::drop_others(conn, Purpose::Verify, &user.id)?;
            Ok::<_, ApiError>(User {
                email_verified: true,
                updated_at: now,
                ..user
            })
        })
        .await?;
    Ok(HttpResponse::Ok().json(CodeVerified {
        status: true,
        token: None,
        user,
    }))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckCode {
    email: String,
    #[serde(rename = "type")]
    kind: Kind,
    otp: String,
}

/// `POST /api/auth/email-otp/check-verification-otp` `{email, type, otp}` → `{success: true}`.
/// A right code stays usable; a wrong one counts as a try.
pub async fn check_verification_otp(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: Body<CheckCode>,
) -> Result<HttpResponse, ApiError> {
    let input = body.value;
    let email = valid_email(&input.email)?;
    state
        .rate_limit(&req, "check-verification-otp", None)
        .await?;
    state
        .codes()
        .verify(input.kind, &email, &input.otp, OnSuccess::Keep)
        .await?;
    state
        .db
        .read(move |conn| users::find_by_email(conn, &email))
        .await?
        .ok_or_else(|| ApiError::bad("USER_NOT_FOUND"))?;
    Ok(HttpResponse::Ok().json(Success { success: true }))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResetWithCode {
    email: String,
    otp: String,
    #[schema(min_length = 8, max_length = 128)]
    password: String,
}

/// `POST /api/auth/email-otp/reset-password` `{email, otp, password}` → `{success: true}`. As
/// the reset by link: the password is set (a Google-only user gets one), the address counts as
/// verified, the reset link mailed with the code stops working, and every session ends.
pub async fn reset_password(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: Body<ResetWithCode>,
) -> Result<HttpResponse, ApiError> {
    let (form, input) = (body.form, body.value);
    let typed = input.email.trim().to_owned();
    let outcome = reset_with_code(&req, &state, input).await;
    if !form {
        return outcome;
    }
    // The forgotten-password page's form: on to sign-in, or back with the error.
    Ok(match outcome {
        Ok(_) => redirect::see_other("/sign-in?reset=1"),
        Err(e) => redirect::see_other(&redirect::page_with(
            "/forgot-password?sent=1",
            &[("email", Some(&typed)), ("error", Some(e.code()))],
        )),
    })
}

async fn reset_with_code(
    req: &HttpRequest,
    state: &AppState,
    input: ResetWithCode,
) -> Result<HttpResponse, ApiError> {
    check_length(&input.password)?;
    let email = valid_email(&input.email)?;
    state.rate_limit(req, "reset-password-otp", None).await?;
    // The code is checked (and a wrong one counted) before the slow hash, so that guesses cost
    // no hash; a right one stays usable until the hash is done.
    let codes = state.codes();
    codes
        .verify(Kind::ForgetPassword, &email, &input.otp, OnSuccess::Keep)
        .await?;
    let lookup = email.clone();
    let user = state
        .db
        .read(move |conn| users::find_by_email(conn, &lookup))
        .await?
        .ok_or_else(|| ApiError::bad("USER_NOT_FOUND"))?;
    let hash = state
        .hashes
        .hash(input.password)
        .await?
        .map_err(ApiError::internal)?;
    // Of parallel resets with one code, one spends it and stores its password.
    codes
        .verify(Kind::ForgetPassword, &email, &input.otp, OnSuccess::Spend)
        .await?;
    let client = state.activity_client(req);
    let user_id = state
        .db
        .write(move |conn| {
            let now = Utc::now();
            links::drop_others(conn, Purpose::Reset, &user.id)?;
            accounts::set_password(conn, &user.id, &hash, now)?;
            users::mark_verified(conn, &user.id, now)?;
            sessions::delete_all(conn, &user.id)?;
            let changed = session::activity::Kind::PasswordChanged;
            crate::activity::record(conn, &user.id, changed, &client, now)?;
            Ok::<_, ApiError>(user.id)
        })
        .await?;
    tracing::info!(%user_id, "password reset with an e-mailed code; every session ended");
    Ok(HttpResponse::Ok().json(Success { success: true }))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RequestEmailChange {
    new_email: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ChangeEmailWithCode {
    new_email: String,
    /// The six digits mailed to the new address.
    otp: String,
}

/// `POST /api/auth/email-otp/request-email-change` `{newEmail}` → `{success: true}`: a code to
/// the new address, for a person who would rather type it than open the link of
/// `change-email`. An address in use elsewhere gets the same answer and no mail.
pub async fn request_email_change(
    req: HttpRequest,
    state: web::Data<AppState>,
    current: MaybeSession,
    body: Body<RequestEmailChange>,
) -> Result<HttpResponse, ApiError> {
    let me = signed_in(current)?;
    let new_email = new_address(&me.user, &body.value.new_email)?;
    if !mailbox::enabled(&state) {
        return Err(ApiError::EmailDisabled);
    }
    state
        .limit(
            &req,
            "request-email-change",
            Some(("user", me.id().as_str())),
            state.settings.mail_rate_limit,
        )
        .await?;
    let secret = state.settings.auth.secret.expose().to_owned();
    let queued = state
        .db
        .write(move |conn| {
            if users::find_by_email(conn, &new_email)?.is_some() {
                return Ok::<_, ApiError>(false);
            }
            let subject = format!("{}:{new_email}", me.user.id);
            let name = &me.user.name;
            let locale = crate::i18n::user_locale(conn, &me.user.id)?;
            mailbox::queue_code(
                conn,
                &secret,
                Kind::ChangeEmail,
                &subject,
                &new_email,
                name,
                locale,
            )?;
            Ok(true)
        })
        .await?;
    if queued {
        mailbox::wake(&state);
    }
    Ok(HttpResponse::Ok().json(Success { success: true }))
}

/// `POST /api/auth/email-otp/change-email` `{newEmail, otp}` → `{success: true}`: the account
/// moves to the new address, verified, with the code mailed there.
pub async fn change_email(
    req: HttpRequest,
    state: web::Data<AppState>,
    current: MaybeSession,
    body: Body<ChangeEmailWithCode>,
) -> Result<HttpResponse, ApiError> {
    let me = signed_in(current)?;
    let input = body.value;
    let new_email = new_address(&me.user, &input.new_email)?;
    state.rate_limit(&req, "change-email-otp", None).await?;
    let subject = format!("{}:{new_email}", me.user.id);
    state
        .codes()
        .verify(Kind::ChangeEmail, &subject, &input.otp, OnSuccess::Spend)
        .await?;
    let in_use = || ApiError::bad_request("EMAIL_ALREADY_IN_USE", "Email already in use");
    let user_id = me.user.id;
    let client = state.activity_client(&req);
    state
        .db
        .write(move |conn| {
            users::lock(conn, &user_id)?;
            if users::find_by_email(conn, &new_email)?.is_some() {
                return Err(in_use());
            }
            move_address(conn, &user_id, &new_email, true, &client, Utc::now())?
                .ok_or_else(in_use)?;
            tracing::info!(%user_id, "address changed with an e-mailed code");
            Ok::<_, ApiError>(())
        })
        .await?;
    Ok(HttpResponse::Ok().json(Success { success: true }))
}
