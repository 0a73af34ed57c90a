//! The OpenAPI 3.1 document of auth, served at `/openapi.json` and rendered at `/docs`.
//!
//! The routes follow better-auth's wire format, whose bodies the handlers build field by field;
//! the schemas below state that format. The route-coverage test holds the operations and the
//! mounted router to each other, and the test command replays the document against a running
//! service (schemathesis), which checks every answer against these schemas.

// The operation functions and the schema structs exist only to carry their declarations.
#![allow(dead_code)]

use crate::answers::*;
use crate::routes::accounts::Unlink;
use crate::routes::email_otp::{
    ChangeEmailWithCode, CheckCode, EmailOnly, RequestEmailChange, ResetWithCode, SendCode,
    SignInWithCode, VerifyWithCode,
};
use crate::routes::reset::{RequestReset, ResetPassword};
use crate::routes::sessions::RevokeSession;
use crate::routes::sign_in::SignIn;
use crate::routes::sign_up::SignUp;
use crate::routes::social::SignInSocial;
use crate::routes::user::{ChangeEmail, ChangePassword, UpdateUser};
use crate::routes::verify::SendVerification;
use serde_json::json;
use service_kit::http::ErrorBody;
use service_kit::openapi::{add_default_error, error_response, operations_mut};
use utoipa::openapi::header::Header;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{ContentBuilder, HttpMethod, Ref, RefOr, Response, ResponseBuilder};
use utoipa::{Modify, OpenApi, ToSchema};

fn user_example() -> serde_json::Value {
    json!({"id": "usr_1", "name": "Giulia", "email": "giulia@example.com", "emailVerified": false,
        "image": null, "createdAt": "2026-11-01T08:00:00Z", "updatedAt": "2026-11-01T08:00:00Z"})
}

const SESSION_COOKIE: &str = "The session cookie `digiuno.session_token` (`__Secure-` in front on https), HttpOnly, SameSite=Lax.";

/// `POST /api/auth/sign-up/email`: creates the user and signs them in.
#[utoipa::path(post, path = "/api/auth/sign-up/email", tag = "sign-in",
    request_body(content = SignUp, description = "JSON, or the sign-up page's form (then the answer is a 303 redirect).",
        example = json!({"name": "Giulia", "email": "giulia@example.com", "password": "correct horse battery"})),
    responses(
        (status = 200, description = "Signed up and in.", body = SignedUp,
            headers(("Set-Cookie" = String, description = "The session cookie (see the `session` security scheme).")),
            example = json!({"token": "Xq3...", "user": user_example()})),
        (status = 400, description = "A bad address or password length.", body = ErrorBody,
            example = json!({"code": "PASSWORD_TOO_SHORT", "message": "Password too short"})),
        (status = 403, description = "A cross-site request.", body = ErrorBody,
            example = json!({"code": "INVALID_ORIGIN", "message": "Invalid origin"})),
        (status = 422, description = "The address is taken.", body = ErrorBody,
            example = json!({"code": "USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL", "message": "User already exists. Use another email."})),
        (status = 429, description = "Too many attempts from this address or for this e-mail.", body = ErrorBody,
            headers(("Retry-After" = u32), ("X-Retry-After" = u32)),
            example = json!({"code": "RATE_LIMITED", "message": "Too many requests. Please try again later."})),
    ))]
fn sign_up() {}

/// `POST /api/auth/sign-in/email`.
#[utoipa::path(post, path = "/api/auth/sign-in/email", tag = "sign-in",
    request_body(content = SignIn, description = "JSON, or the sign-in page's form (then the answer is a 303 redirect).",
        example = json!({"email": "giulia@example.com", "password": "correct horse battery", "rememberMe": true})),
    responses(
        (status = 200, description = "Signed in.", body = SignedIn,
            headers(("Set-Cookie" = String, description = "The session cookie (see the `session` security scheme).")),
            example = json!({"redirect": false, "token": "Xq3...", "user": user_example()})),
        (status = 400, description = "A malformed address.", body = ErrorBody,
            example = json!({"code": "INVALID_EMAIL", "message": "Invalid email"})),
        (status = 401, description = "Any credential failure, alike for unknown addresses.", body = ErrorBody,
            example = json!({"code": "INVALID_EMAIL_OR_PASSWORD", "message": "Invalid email or password"})),
        (status = 403, description = "A cross-site request, or an unverified address when verification is required.", body = ErrorBody,
            example = json!({"code": "EMAIL_NOT_VERIFIED", "message": "Email not verified"})),
        (status = 429, description = "Too many attempts.", body = ErrorBody,
            headers(("Retry-After" = u32), ("X-Retry-After" = u32)),
            example = json!({"code": "RATE_LIMITED", "message": "Too many requests. Please try again later."})),
    ))]
fn sign_in() {}

/// `POST /api/auth/sign-out`: deletes the session and expires the cookie.
#[utoipa::path(post, path = "/api/auth/sign-out", tag = "sign-in",
    responses((status = 200, description = "Signed out (also without a session).", body = Success,
        example = json!({"success": true}))))]
fn sign_out() {}

#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DeleteUser {
    /// Needed unless the session is younger than 24 hours.
    password: Option<String>,
    #[serde(rename = "callbackURL")]
    callback_url: Option<String>,
}

/// `POST /api/auth/delete-user`: erases the user everywhere in one transaction (GDPR art. 17).
#[utoipa::path(post, path = "/api/auth/delete-user", tag = "account",
    request_body(content = DeleteUser, example = json!({"password": "correct horse battery"})),
    responses(
        (status = 200, description = "Deleted; the cookie expires.", body = SuccessMessage,
            example = json!({"success": true, "message": "User deleted"})),
        (status = 400, description = "A wrong password, or none with a session older than 24 hours.", body = ErrorBody,
            example = json!({"code": "SESSION_EXPIRED", "message": "Session expired. Re-authenticate to perform this action."})),
    ))]
fn delete_user() {}

/// `GET /api/auth/get-session`.
#[utoipa::path(get, path = "/api/auth/get-session", tag = "sessions",
    responses((status = 200, description = "The session and user, or the literal `null` without one.",
        body = Option<SessionAndUser<'static>>)))]
fn get_session() {}

/// `GET /api/auth/providers`.
#[utoipa::path(get, path = "/api/auth/providers", tag = "sign-in",
    responses((status = 200, description = "The configured social providers.", body = Providers,
        example = json!({"providers": ["google"]}))))]
fn providers() {}

/// `POST /api/auth/sign-in/social`: the provider's address to send the browser to.
#[utoipa::path(post, path = "/api/auth/sign-in/social", tag = "sign-in",
    request_body(content = SignInSocial, example = json!({"provider": "google", "callbackURL": "/"})),
    responses(
        (status = 200, description = "Where to go.", body = SocialRedirect,
            example = json!({"url": "https://accounts.google.com/o/oauth2/v2/auth?...", "redirect": true})),
        (status = 403, description = "A cross-site request or an untrusted callback address.", body = ErrorBody,
            example = json!({"code": "INVALID_CALLBACK_URL", "message": "Invalid callbackURL"})),
        (status = 404, description = "The provider is not configured.", body = ErrorBody,
            example = json!({"code": "PROVIDER_NOT_FOUND", "message": "Provider not found"})),
    ))]
fn sign_in_social() {}

/// `GET /api/auth/callback/google`: finishes Google sign-in.
#[utoipa::path(get, path = "/api/auth/callback/google", tag = "sign-in",
    params(("code" = Option<String>, Query), ("state" = Option<String>, Query), ("error" = Option<String>, Query)),
    responses((status = 302, description = "To the callbackURL with the session cookie, or to `/sign-in?error=…`.",
        headers(("Location" = String), ("Set-Cookie" = String)))))]
fn callback_google() {}

/// `GET /api/auth/ok`: better-auth's liveness answer.
#[utoipa::path(get, path = "/api/auth/ok", tag = "operations",
    responses((status = 200, description = "Up.", body = Ok, example = json!({"ok": true}))))]
fn ok() {}

/// `GET /api/auth/list-sessions`: the user's live sessions, newest first.
#[utoipa::path(get, path = "/api/auth/list-sessions", tag = "sessions",
    responses((status = 200, description = "The sessions.", body = Vec<ListedSession>)))]
fn list_sessions() {}

/// `POST /api/auth/revoke-session`: ends one session in every service at once.
#[utoipa::path(post, path = "/api/auth/revoke-session", tag = "sessions",
    request_body(content = RevokeSession, example = json!({"token": "h_2b7c..."})),
    responses((status = 200, description = "Done (also for an unknown handle).", body = Status,
        example = json!({"status": true}))))]
fn revoke_session() {}

/// `POST /api/auth/revoke-sessions`: ends every session of the user, this one too.
#[utoipa::path(post, path = "/api/auth/revoke-sessions", tag = "sessions",
    responses((status = 200, description = "Done.", body = Status, example = json!({"status": true}))))]
fn revoke_sessions() {}

/// `POST /api/auth/revoke-other-sessions`: ends every session but this one.
#[utoipa::path(post, path = "/api/auth/revoke-other-sessions", tag = "sessions",
    responses((status = 200, description = "Done.", body = Status, example = json!({"status": true}))))]
fn revoke_other_sessions() {}

/// `POST /api/auth/update-user`.
#[utoipa::path(post, path = "/api/auth/update-user", tag = "account",
    request_body(content = UpdateUser, example = json!({"name": "Giulia R."})),
    responses(
        (status = 200, description = "Updated.", body = Status, example = json!({"status": true})),
        (status = 400, description = "The e-mail address cannot change here, or a bad field.", body = ErrorBody,
            example = json!({"code": "EMAIL_CAN_NOT_BE_UPDATED", "message": "Email can not be updated"})),
    ))]
fn update_user() {}

/// `POST /api/auth/change-password`.
#[utoipa::path(post, path = "/api/auth/change-password", tag = "account",
    request_body(content = ChangePassword, example = json!({"currentPassword": "old password", "newPassword": "a new long password", "revokeOtherSessions": true})),
    responses(
        (status = 200, description = "Changed.", body = PasswordChanged,
            example = json!({"token": null, "user": user_example()})),
        (status = 400, description = "A wrong current password or a bad new one.", body = ErrorBody,
            example = json!({"code": "INVALID_PASSWORD", "message": "Invalid password"})),
        (status = 429, description = "Too many attempts.", body = ErrorBody,
            headers(("Retry-After" = u32), ("X-Retry-After" = u32)),
            example = json!({"code": "RATE_LIMITED", "message": "Too many requests. Please try again later."})),
    ))]
fn change_password() {}

/// `POST /api/auth/change-email`: an unverified address changes at once; a verified one when
/// the link mailed to the new address is opened (`GET /api/auth/verify-email`). An address in
/// use elsewhere gets the same answer and no mail.
#[utoipa::path(post, path = "/api/auth/change-email", tag = "account",
    request_body(content = ChangeEmail, example = json!({"newEmail": "giulia.new@example.com", "callbackURL": "/settings"})),
    responses(
        (status = 200, description = "Changed, or the link sent.", body = Status, example = json!({"status": true})),
        (status = 400, description = "Not an address, or the current one.", body = ErrorBody,
            example = json!({"code": "EMAIL_IS_THE_SAME", "message": "Email is the same"})),
    ))]
fn change_email() {}

/// `POST /api/auth/email-otp/request-email-change`: a code to the new address, instead of the
/// link of `change-email`; an address in use elsewhere gets the same answer and no mail.
#[utoipa::path(post, path = "/api/auth/email-otp/request-email-change", tag = "codes",
    request_body(content = RequestEmailChange, example = json!({"newEmail": "giulia.new@example.com"})),
    responses(
        (status = 200, description = "Accepted.", body = Success, example = json!({"success": true})),
    ))]
fn request_email_change_otp() {}

/// `POST /api/auth/email-otp/change-email`: moves the account to the new address with the code
/// mailed there; the address counts as verified.
#[utoipa::path(post, path = "/api/auth/email-otp/change-email", tag = "codes",
    request_body(content = ChangeEmailWithCode, example = json!({"newEmail": "giulia.new@example.com", "otp": "123456"})),
    responses(
        (status = 200, description = "Changed.", body = Success, example = json!({"success": true})),
    ))]
fn change_email_otp() {}

/// `GET /api/auth/list-accounts`.
#[utoipa::path(get, path = "/api/auth/list-accounts", tag = "account",
    responses((status = 200, description = "The ways this user signs in, without secrets.", body = Vec<Account>)))]
fn list_accounts() {}

/// `POST /api/auth/unlink-account`.
#[utoipa::path(post, path = "/api/auth/unlink-account", tag = "account",
    request_body(content = Unlink, example = json!({"providerId": "google"})),
    responses(
        (status = 200, description = "Unlinked.", body = Status, example = json!({"status": true})),
        (status = 400, description = "The last way to sign in cannot go.", body = ErrorBody,
            example = json!({"code": "FAILED_TO_UNLINK_LAST_ACCOUNT", "message": "You can't unlink your last account"})),
    ))]
fn unlink_account() {}

/// `POST /api/auth/request-password-reset`: mails a reset link; the same answer, in the same
/// time, for unknown addresses.
#[utoipa::path(post, path = "/api/auth/request-password-reset", tag = "passwords",
    request_body(content = RequestReset, example = json!({"email": "giulia@example.com", "redirectTo": "/reset-password"})),
    responses(
        (status = 200, description = "Accepted.", body = StatusMessage,
            example = json!({"status": true, "message": "If this email exists in our system, check your email for the reset link"})),
    ))]
fn request_password_reset() {}

/// `GET /api/auth/reset-password/{token}`: the link of the e-mail.
#[utoipa::path(get, path = "/api/auth/reset-password/{token}", tag = "passwords",
    params(("token" = String, Path), ("callbackURL" = Option<String>, Query)),
    responses((status = 302, description = "To `callbackURL?token=…`, or `?error=INVALID_TOKEN`.",
        headers(("Location" = String)))))]
fn reset_link() {}

/// `POST /api/auth/reset-password`: sets the new password and ends every session of the user.
#[utoipa::path(post, path = "/api/auth/reset-password", tag = "passwords",
    request_body(content = ResetPassword, example = json!({"newPassword": "a new long password", "token": "rst_..."})),
    responses(
        (status = 200, description = "Reset.", body = Status, example = json!({"status": true})),
        (status = 400, description = "An unknown, used or expired token, or a bad password.", body = ErrorBody,
            example = json!({"code": "INVALID_TOKEN", "message": "Invalid token"})),
    ))]
fn reset_password() {}

/// `POST /api/auth/send-verification-email`.
#[utoipa::path(post, path = "/api/auth/send-verification-email", tag = "passwords",
    request_body(content = SendVerification, example = json!({"email": "giulia@example.com", "callbackURL": "/"})),
    responses(
        (status = 200, description = "Sent (or nothing to do).", body = Status, example = json!({"status": true})),
    ))]
fn send_verification_email() {}

/// `GET /api/auth/verify-email`: the link of the verification e-mail.
#[utoipa::path(get, path = "/api/auth/verify-email", tag = "passwords",
    params(("token" = Option<String>, Query), ("callbackURL" = Option<String>, Query)),
    responses(
        (status = 200, description = "Verified (no callbackURL).", body = EmailVerified, example = json!({"status": true})),
        (status = 302, description = "To callbackURL, with `?error=INVALID_TOKEN` on failure.", headers(("Location" = String))),
        (status = 400, description = "An invalid token (no callbackURL).", body = ErrorBody,
            example = json!({"code": "INVALID_TOKEN", "message": "Invalid token"})),
    ))]
fn verify_email() {}

/// `POST /api/auth/email-otp/send-verification-otp`: mails a six-digit code, valid 5 minutes;
/// the same answer, in the same time, for unknown addresses (a sign-in code also goes to them).
#[utoipa::path(post, path = "/api/auth/email-otp/send-verification-otp", tag = "codes",
    request_body(content = SendCode, example = json!({"email": "giulia@example.com", "type": "sign-in"})),
    responses(
        (status = 200, description = "Accepted.", body = Success, example = json!({"success": true})),
    ))]
fn send_verification_otp() {}

/// `POST /api/auth/sign-in/email-otp`: signs in with a sign-in code; an unknown address gets a
/// new account, and an account whose address was never proven loses its other ways in.
#[utoipa::path(post, path = "/api/auth/sign-in/email-otp", tag = "codes",
    request_body(content = SignInWithCode, example = json!({"email": "giulia@example.com", "otp": "123456"})),
    responses(
        (status = 200, description = "Signed in; the session cookie is set.", body = TokenAndUser,
            headers(("Set-Cookie" = String))),
        (status = 422, description = "The address was taken by a sign-up meanwhile.", body = ErrorBody,
            example = json!({"code": "USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL", "message": "User already exists. Use another email."})),
    ))]
fn sign_in_email_otp() {}

/// `POST /api/auth/email-otp/verify-email`: marks the address verified with a code.
#[utoipa::path(post, path = "/api/auth/email-otp/verify-email", tag = "codes",
    request_body(content = VerifyWithCode, example = json!({"email": "giulia@example.com", "otp": "123456"})),
    responses(
        (status = 200, description = "Verified.", body = CodeVerified),
    ))]
fn verify_email_otp() {}

/// `POST /api/auth/email-otp/check-verification-otp`: whether a code is right, leaving a right
/// one usable; a wrong one counts as a try.
#[utoipa::path(post, path = "/api/auth/email-otp/check-verification-otp", tag = "codes",
    request_body(content = CheckCode, example = json!({"email": "giulia@example.com", "type": "forget-password", "otp": "123456"})),
    responses(
        (status = 200, description = "Right.", body = Success, example = json!({"success": true})),
    ))]
fn check_verification_otp() {}

/// `POST /api/auth/email-otp/request-password-reset`: mails a reset code; the same answer, in the
/// same time, for unknown addresses.
#[utoipa::path(post, path = "/api/auth/email-otp/request-password-reset", tag = "codes",
    request_body(content = EmailOnly, example = json!({"email": "giulia@example.com"})),
    responses(
        (status = 200, description = "Accepted.", body = Success, example = json!({"success": true})),
    ))]
fn request_password_reset_otp() {}

/// `POST /api/auth/forget-password/email-otp`: the older name of `email-otp/request-password-reset`.
#[utoipa::path(post, path = "/api/auth/forget-password/email-otp", tag = "codes",
    request_body(content = EmailOnly, example = json!({"email": "giulia@example.com"})),
    responses(
        (status = 200, description = "Accepted.", body = Success, example = json!({"success": true})),
    ))]
fn forget_password_otp() {}

/// `POST /api/auth/email-otp/reset-password`: sets a new password with a reset code and ends
/// every session of the user.
#[utoipa::path(post, path = "/api/auth/email-otp/reset-password", tag = "codes",
    request_body(content = ResetWithCode, example = json!({"email": "giulia@example.com", "otp": "123456", "password": "a new long password"})),
    responses(
        (status = 200, description = "Reset.", body = Success, example = json!({"success": true})),
        (status = 503, description = "Every password-hashing worker is busy.", body = ErrorBody,
            example = json!({"code": "SERVER_BUSY", "message": "Too many sign-ins at this moment. Please try again in a few seconds."})),
    ))]
fn reset_password_otp() {}

/// `GET /sign-in`: the sign-in page (no JavaScript needed).
#[utoipa::path(get, path = "/sign-in", tag = "pages",
    params(("callbackURL" = Option<String>, Query), ("error" = Option<String>, Query),
        ("with" = Option<String>, Query, description = "`code`: sign in with a code mailed to the address."),
        ("email" = Option<String>, Query), ("sent" = Option<String>, Query, description = "Set once the code was sent: the page asks for it.")),
    responses((status = 200, description = "HTML page.", content_type = "text/html", body = String)))]
fn sign_in_page() {}

/// `GET /sign-up`: the sign-up page.
#[utoipa::path(get, path = "/sign-up", tag = "pages",
    params(("callbackURL" = Option<String>, Query), ("error" = Option<String>, Query)),
    responses((status = 200, description = "HTML page.", content_type = "text/html", body = String)))]
fn sign_up_page() {}

/// `GET /forgot-password`: asks for the address to send a reset link to.
#[utoipa::path(get, path = "/forgot-password", tag = "pages",
    responses((status = 200, description = "HTML page.", content_type = "text/html", body = String)))]
fn forgot_password_page() {}

/// `GET /reset-password`: sets a new password with the token of the link.
#[utoipa::path(get, path = "/reset-password", tag = "pages",
    params(("token" = Option<String>, Query)),
    responses((status = 200, description = "HTML page.", content_type = "text/html", body = String)))]
fn reset_password_page() {}

/// Routes that act for the signed-in user.
const SESSION_ROUTES: [&str; 13] = [
    "/api/auth/email-otp/change-email",
    "/api/auth/email-otp/request-email-change",
    "/api/auth/change-email",
    "/api/auth/delete-user",
    "/api/auth/list-sessions",
    "/api/auth/revoke-session",
    "/api/auth/revoke-sessions",
    "/api/auth/revoke-other-sessions",
    "/api/auth/update-user",
    "/api/auth/change-password",
    "/api/auth/list-accounts",
    "/api/auth/unlink-account",
    "/api/auth/send-verification-email",
];

/// Routes that count requests per client (and per address where it applies): 429 with
/// `Retry-After` and better-auth's `X-Retry-After`.
const LIMITED_ROUTES: [&str; 12] = [
    "/api/auth/email-otp/change-email",
    "/api/auth/email-otp/request-email-change",
    "/api/auth/change-email",
    "/api/auth/request-password-reset",
    "/api/auth/send-verification-email",
    "/api/auth/email-otp/send-verification-otp",
    "/api/auth/sign-in/email-otp",
    "/api/auth/email-otp/verify-email",
    "/api/auth/email-otp/check-verification-otp",
    "/api/auth/email-otp/request-password-reset",
    "/api/auth/forget-password/email-otp",
    "/api/auth/email-otp/reset-password",
];

/// Routes that send mail: 503 `EMAIL_DISABLED` without a mail server.
const MAIL_ROUTES: [&str; 7] = [
    "/api/auth/email-otp/request-email-change",
    "/api/auth/change-email",
    "/api/auth/request-password-reset",
    "/api/auth/send-verification-email",
    "/api/auth/email-otp/send-verification-otp",
    "/api/auth/email-otp/request-password-reset",
    "/api/auth/forget-password/email-otp",
];

/// Routes that take an e-mailed code: 400 `INVALID_OTP` / `OTP_EXPIRED` (or another of the
/// route's input errors), 403 `TOO_MANY_ATTEMPTS` once the code's tries are used up.
const CODE_ROUTES: [&str; 5] = [
    "/api/auth/email-otp/change-email",
    "/api/auth/sign-in/email-otp",
    "/api/auth/email-otp/verify-email",
    "/api/auth/email-otp/check-verification-otp",
    "/api/auth/email-otp/reset-password",
];

struct Shared;

/// 429 with both retry headers, as every limited route answers it.
fn rate_limited() -> RefOr<Response> {
    let seconds = || Header::new(ObjectBuilder::new().schema_type(Type::Integer).build());
    RefOr::T(
        ResponseBuilder::new()
            .description("Too many requests.")
            .header("Retry-After", seconds())
            .header("X-Retry-After", seconds())
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(RefOr::Ref(Ref::from_schema_name("ErrorBody"))))
                    .example(Some(json!({
                        "code": "RATE_LIMITED",
                        "message": "Too many requests. Please try again later."
                    })))
                    .build(),
            )
            .build(),
    )
}

impl Modify for Shared {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "session",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                "digiuno.session_token",
                SESSION_COOKIE,
            ))),
        );
        for (method, op) in operations_mut(doc, |p| SESSION_ROUTES.contains(&p)) {
            op.security = Some(vec![SecurityRequirement::new(
                "session",
                Vec::<String>::new(),
            )]);
            op.responses
                .responses
                .entry("401".into())
                .or_insert_with(|| {
                    error_response("No valid session.", "UNAUTHORIZED", "Unauthorized")
                });
            if method != HttpMethod::Get {
                op.responses
                    .responses
                    .entry("403".into())
                    .or_insert_with(|| {
                        error_response(
                            "A request with a cookie from an untrusted `Origin`.",
                            "INVALID_ORIGIN",
                            "Invalid origin",
                        )
                    });
            }
        }
        // Before the generic 400, so that these routes keep their own.
        for (_, op) in operations_mut(doc, |p| CODE_ROUTES.contains(&p)) {
            let responses = &mut op.responses.responses;
            responses.entry("400".into()).or_insert_with(|| {
                error_response(
                    "A wrong, used or expired code, or another bad input of the route.",
                    "INVALID_OTP",
                    "Invalid OTP",
                )
            });
            responses.entry("403".into()).or_insert_with(|| {
                error_response(
                    "The code's tries are used up; it is void.",
                    "TOO_MANY_ATTEMPTS",
                    "Too many attempts",
                )
            });
        }
        for (method, op) in operations_mut(doc, |p| p.starts_with("/api/auth/")) {
            if method == HttpMethod::Post {
                op.responses
                    .responses
                    .entry("400".into())
                    .or_insert_with(|| {
                        error_response(
                            "A malformed body.",
                            "VALIDATION_ERROR",
                            "missing field `email`",
                        )
                    });
            }
        }
        for (_, op) in operations_mut(doc, |p| LIMITED_ROUTES.contains(&p)) {
            op.responses
                .responses
                .entry("429".into())
                .or_insert_with(rate_limited);
        }
        for (_, op) in operations_mut(doc, |p| MAIL_ROUTES.contains(&p)) {
            op.responses
                .responses
                .entry("503".into())
                .or_insert_with(|| {
                    error_response(
                        "No mail server is configured.",
                        "EMAIL_DISABLED",
                        "Email is not configured on this server",
                    )
                });
        }
        add_default_error(doc, |p| p.starts_with("/api/auth/"));
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "auth",
        description = "Sign-up, sign-in and accounts, wire-compatible with the better-auth client \
            (paths under `/api/auth`), and the pages that need no JavaScript. The session cookie it \
            sets is what nutrition-api reads. A state-changing request carrying the cookie must come \
            from a trusted `Origin`. Every error is `{code, message}` with better-auth's codes and texts."
    ),
    paths(
        sign_up, sign_in, sign_out, delete_user, get_session, providers, sign_in_social, callback_google, ok,
        list_sessions, revoke_session, revoke_sessions, revoke_other_sessions,
        update_user, change_password, change_email, list_accounts, unlink_account,
        request_email_change_otp, change_email_otp,
        request_password_reset, reset_link, reset_password, send_verification_email, verify_email,
        send_verification_otp, sign_in_email_otp, verify_email_otp, check_verification_otp,
        request_password_reset_otp, forget_password_otp, reset_password_otp,
        sign_in_page, sign_up_page, forgot_password_page, reset_password_page,
    ),
    modifiers(&Shared),
    tags(
        (name = "sign-in", description = "Signing up, in and out."),
        (name = "sessions", description = "The user's sessions."),
        (name = "account", description = "The user's profile, password and linked accounts."),
        (name = "passwords", description = "Reset and verification links sent by e-mail."),
        (name = "codes", description = "Six-digit codes sent by e-mail (better-auth's emailOTP): sign-in, verification and reset."),
        (name = "pages", description = "HTML pages."),
        (name = "operations", description = "Probes and this document."),
    )
)]
struct Auth;

/// The complete document: auth's routes plus the probes and documents every service has.
pub fn document() -> utoipa::openapi::OpenApi {
    let mut doc = service_kit::openapi::complete(Auth::openapi());
    doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
    doc
}
