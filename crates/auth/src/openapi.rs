//! The OpenAPI 3.1 document of auth, served at `/openapi.json` and rendered at `/docs`.
//!
//! The routes follow better-auth's wire format, whose bodies the handlers build field by field;
//! the schemas below state that format. The route-coverage test holds the operations and the
//! mounted router to each other, and the test command replays the document against a running
//! service (schemathesis), which checks every answer against these schemas.

// The operation functions and the schema structs exist only to carry their declarations.
#![allow(dead_code)]

use crate::answers::*;
use crate::repo::passkeys::Listed as Passkey;
use crate::routes::accounts::Unlink;
use crate::routes::email_otp::{
    ChangeEmailWithCode, CheckCode, EmailOnly, RequestEmailChange, ResetWithCode, SendCode,
    SignInWithCode, VerifyWithCode,
};
use crate::routes::passkey::{
    PasskeyId, RegisterOptionsQuery, Rename, Renamed, VerifyAuthentication, VerifyRegistration,
};
use crate::routes::reset::{RequestReset, ResetPassword};
use crate::routes::sessions::RevokeSession;
use crate::routes::sign_in::SignIn;
use crate::routes::sign_up::SignUp;
use crate::routes::social::SignInSocial;
use crate::routes::two_factor::{
    BackupCodes, Enable, Enabled, Password, SendOtp, TotpUri, TwoFactorRedirect, VerifyCode,
};
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
        "image": null, "createdAt": "2026-11-01T08:00:00Z", "updatedAt": "2026-11-01T08:00:00Z",
        "twoFactorEnabled": false})
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
        (status = 200, description = "Signed in; or, for a user with two-factor on whose device is not trusted, \
            `{twoFactorRedirect: true, twoFactorMethods}` with the `two_factor` cookie and no session.", body = SignInAnswer,
            headers(("Set-Cookie" = String, description = "The session cookie (see the `session` security scheme), or the two-factor challenge's.")),
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

/// `GET /api/auth/activity`: the account's security events of the last 90 days, newest first;
/// addresses as their /24 (IPv4) or /48 (IPv6).
#[utoipa::path(get, path = "/api/auth/activity", tag = "sessions",
    responses(
        (status = 200, description = "The events.", body = crate::activity::Activity,
            example = json!({"items": [{"kind": "sign_in", "at": "2026-11-28T08:15:00.000Z",
                "userAgent": "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X)", "ip": "203.0.113.0/24"}]})),
        (status = 401, description = "Not signed in.", body = ErrorBody),
    ))]
fn activity() {}

/// `POST /api/auth/confirm-password`: the person at this session proves it is them; the session
/// is then fresh for five minutes (export, account deletion).
#[utoipa::path(post, path = "/api/auth/confirm-password", tag = "sessions",
    request_body(content = crate::routes::sessions::ConfirmPassword, example = json!({"password": "correct horse battery staple"})),
    responses(
        (status = 200, description = "Confirmed.", body = Status, example = json!({"status": true})),
        (status = 400, description = "Not the password (also for an account without one).", body = ErrorBody,
            example = json!({"code": "INVALID_PASSWORD", "message": "Invalid password"})),
        (status = 401, description = "Not signed in.", body = ErrorBody),
        (status = 429, description = "Too many password checks for this user.", body = ErrorBody),
    ))]
fn confirm_password() {}

/// `GET /api/auth/not-me?token=`: the "this was not me" link of the new-device mail; a page
/// that asks before anything happens.
#[utoipa::path(get, path = "/api/auth/not-me", tag = "pages",
    params(("token" = Option<String>, Query)),
    responses((status = 200, description = "HTML page: the button, or why the link no longer works.",
        content_type = "text/html", body = String)))]
fn not_me_page() {}

/// `POST /api/auth/not-me/confirm` `{token}`: ends every session of the account. The page's form goes on
/// to `/reset-password?token=…`; JSON gets `{status: true}`.
#[utoipa::path(post, path = "/api/auth/not-me/confirm", tag = "sessions",
    request_body(content = crate::routes::not_me::NotMe, example = json!({"token": "Qm3x..."})),
    responses(
        (status = 200, description = "Every session ended.", body = Status, example = json!({"status": true})),
        (status = 303, description = "From the form: on to the new-password page.", headers(("Location" = String))),
        (status = 400, description = "An unknown, used or expired token.", body = ErrorBody,
            example = json!({"code": "INVALID_TOKEN", "message": "Invalid token"})),
        (status = 429, description = "Too many requests from this client.", body = ErrorBody),
    ))]
fn not_me() {}

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

/// What a password sign-in answers.
#[derive(ToSchema)]
#[serde(untagged)]
enum SignInAnswer {
    SignedIn(SignedIn),
    SecondFactor(TwoFactorRedirect),
}

/// `POST /api/auth/two-factor/enable`: a new authenticator secret and backup codes; two-factor
/// is on once `verify-totp` proves a first code.
#[utoipa::path(post, path = "/api/auth/two-factor/enable", tag = "two-factor",
    request_body(content = Enable, example = json!({"password": "correct horse battery"})),
    responses(
        (status = 200, description = "The secret's URI and ten backup codes, shown this once.", body = Enabled,
            example = json!({"method": "totp", "totpURI": "otpauth://totp/Digiuno:giulia%40example.com?secret=GEZD...&issuer=Digiuno", "backupCodes": ["a1B2c-3D4e5"]})),
        (status = 400, description = "A wrong password, or two-factor is on already.", body = ErrorBody,
            example = json!({"code": "INVALID_PASSWORD", "message": "Invalid password"})),
    ))]
fn two_factor_enable() {}

/// `POST /api/auth/two-factor/verify-totp`: a code of the authenticator app. Signed in, it
/// finishes the set-up (the session is renewed); with the `two_factor` cookie of a password
/// sign-in, it opens the session.
#[utoipa::path(post, path = "/api/auth/two-factor/verify-totp", tag = "two-factor",
    request_body(content = VerifyCode, example = json!({"code": "123456", "trustDevice": true})),
    responses(
        (status = 200, description = "Right.", body = TokenAndUser,
            headers(("Set-Cookie" = String, description = "The session cookie; `trust_device` when asked."))),
        (status = 400, description = "Two-factor is not set up, or the challenge took its 5 codes.", body = ErrorBody,
            example = json!({"code": "TOO_MANY_ATTEMPTS_REQUEST_NEW_CODE", "message": "Too many attempts. Please request a new code."})),
        (status = 401, description = "A wrong code, or no valid challenge cookie.", body = ErrorBody,
            example = json!({"code": "INVALID_CODE", "message": "Invalid code"})),
        (status = 429, description = "Ten wrong codes in a row lock the account's sign-in for 15 minutes.", body = ErrorBody,
            example = json!({"code": "ACCOUNT_TEMPORARILY_LOCKED", "message": "Too many failed verification attempts. Your account is temporarily locked. Please try again later."})),
    ))]
fn two_factor_verify_totp() {}

/// `POST /api/auth/two-factor/verify-backup-code`: a backup code instead of the app's; spent.
#[utoipa::path(post, path = "/api/auth/two-factor/verify-backup-code", tag = "two-factor",
    request_body(content = VerifyCode, example = json!({"code": "a1B2c-3D4e5"})),
    responses(
        (status = 200, description = "Right.", body = TokenAndUser),
        (status = 401, description = "Unknown or used, or no valid challenge cookie.", body = ErrorBody,
            example = json!({"code": "INVALID_BACKUP_CODE", "message": "Invalid backup code"})),
    ))]
fn two_factor_verify_backup_code() {}

/// `POST /api/auth/two-factor/send-otp`: mails a code (6 digits, 3 minutes, 5 tries) to the
/// signed-in user, or to the user of the sign-in waiting for its second factor.
#[utoipa::path(post, path = "/api/auth/two-factor/send-otp", tag = "two-factor",
    request_body(content = Option<SendOtp>, example = json!({})),
    responses(
        (status = 200, description = "Sent.", body = Status, example = json!({"status": true})),
        (status = 400, description = "No mail server.", body = ErrorBody,
            example = json!({"code": "OTP_NOT_CONFIGURED", "message": "OTP is not available"})),
        (status = 401, description = "Neither a session nor a sign-in's challenge cookie.", body = ErrorBody,
            example = json!({"code": "INVALID_TWO_FACTOR_COOKIE", "message": "Invalid two factor cookie"})),
    ))]
fn two_factor_send_otp() {}

/// `POST /api/auth/two-factor/verify-otp`: the mailed code. Signed in with two-factor off, it
/// turns it on (the session is renewed); with a sign-in's challenge cookie, it opens the session.
#[utoipa::path(post, path = "/api/auth/two-factor/verify-otp", tag = "two-factor",
    request_body(content = VerifyCode, example = json!({"code": "123456"})),
    responses(
        (status = 200, description = "Right.", body = TokenAndUser),
        (status = 400, description = "No code (never sent, used or expired), or its 5 tries were used.", body = ErrorBody,
            example = json!({"code": "OTP_HAS_EXPIRED", "message": "OTP has expired"})),
        (status = 401, description = "A wrong code, or no valid challenge cookie.", body = ErrorBody,
            example = json!({"code": "INVALID_CODE", "message": "Invalid code"})),
    ))]
fn two_factor_verify_otp() {}

/// `POST /api/auth/two-factor/get-totp-uri`.
#[utoipa::path(post, path = "/api/auth/two-factor/get-totp-uri", tag = "two-factor",
    request_body(content = Password, example = json!({"password": "correct horse battery"})),
    responses(
        (status = 200, description = "The URI for another authenticator app.", body = TotpUri),
        (status = 400, description = "A wrong password, or no secret.", body = ErrorBody,
            example = json!({"code": "TOTP_NOT_ENABLED", "message": "TOTP not enabled"})),
    ))]
fn two_factor_get_totp_uri() {}

/// `POST /api/auth/two-factor/generate-backup-codes`: ten new codes; the old ones stop working.
#[utoipa::path(post, path = "/api/auth/two-factor/generate-backup-codes", tag = "two-factor",
    request_body(content = Password, example = json!({"password": "correct horse battery"})),
    responses(
        (status = 200, description = "The new codes, shown this once.", body = BackupCodes),
        (status = 400, description = "A wrong password, or two-factor is off.", body = ErrorBody,
            example = json!({"code": "TWO_FACTOR_NOT_ENABLED", "message": "Two factor isn't enabled"})),
    ))]
fn two_factor_generate_backup_codes() {}

/// `POST /api/auth/two-factor/disable`: the secret, the codes and every trusted device go.
#[utoipa::path(post, path = "/api/auth/two-factor/disable", tag = "two-factor",
    request_body(content = Password, example = json!({"password": "correct horse battery"})),
    responses(
        (status = 200, description = "Off; the session is renewed.", body = Status, example = json!({"status": true})),
        (status = 400, description = "A wrong password.", body = ErrorBody,
            example = json!({"code": "INVALID_PASSWORD", "message": "Invalid password"})),
    ))]
fn two_factor_disable() {}

fn passkey_example() -> serde_json::Value {
    json!({"id": "pk_1", "name": "Telefono", "publicKey": "BLZ3…", "userId": "usr_1",
        "credentialID": "Xq3v…", "counter": 0, "deviceType": "multiDevice", "backedUp": true,
        "transports": "internal,hybrid", "createdAt": "2026-11-01T08:00:00Z", "aaguid": null})
}

const NO_PASSKEYS: &str =
    "`PASSKEYS_UNAVAILABLE`: `AUTH_BASE_URL` names its host by an IP address.";

/// `GET /api/auth/passkey/generate-register-options`.
#[utoipa::path(get, path = "/api/auth/passkey/generate-register-options", tag = "passkeys",
    params(RegisterOptionsQuery),
    responses(
        (status = 200, description = "`PublicKeyCredentialCreationOptionsJSON` for `navigator.credentials.create` \
            (a discoverable credential with user verification); sets the challenge cookie \
            `digiuno.better-auth-passkey` (5 minutes).", body = Object,
            example = json!({"challenge": "m1Xo…", "rp": {"name": "Digiuno", "id": "app.example.com"},
                "user": {"id": "3q2+…", "name": "giulia@example.com", "displayName": "giulia@example.com"},
                "pubKeyCredParams": [{"type": "public-key", "alg": -7}], "timeout": 300000,
                "excludeCredentials": [], "authenticatorSelection": {"residentKey": "required",
                "requireResidentKey": true, "userVerification": "required"}, "attestation": "none",
                "hints": [], "extensions": {"credProps": true}})),
        (status = 400, description = NO_PASSKEYS, body = ErrorBody,
            example = json!({"code": "PASSKEYS_UNAVAILABLE", "message": "Passkeys need the server's address to be a host name"})),
        (status = 403, description = "A session older than a day without a recent proof.", body = ErrorBody,
            example = json!({"code": "SESSION_NOT_FRESH", "message": "Session is not fresh"})),
    ))]
fn passkey_register_options() {}

/// `POST /api/auth/passkey/verify-registration`.
#[utoipa::path(post, path = "/api/auth/passkey/verify-registration", tag = "passkeys",
    request_body(content = VerifyRegistration, example = json!({"response": {"id": "Xq3v…", "rawId": "Xq3v…",
        "type": "public-key", "response": {"clientDataJSON": "eyJ0…", "attestationObject": "o2Nm…"}}, "name": "Telefono"})),
    responses(
        (status = 200, description = "The passkey, added.", body = Passkey, example = json!(passkey_example())),
        (status = 400, description = "No ceremony under the cookie (or it was answered already), an answer that does not verify, \
            a key registered already, or 20 passkeys held already.", body = ErrorBody,
            example = json!({"code": "FAILED_TO_VERIFY_REGISTRATION", "message": "Failed to verify registration"})),
        (status = 403, description = "A session older than a day without a recent proof.", body = ErrorBody,
            example = json!({"code": "SESSION_NOT_FRESH", "message": "Session is not fresh"})),
    ))]
fn passkey_verify_registration() {}

/// `GET /api/auth/passkey/generate-authenticate-options`.
#[utoipa::path(get, path = "/api/auth/passkey/generate-authenticate-options", tag = "passkeys",
    responses(
        (status = 200, description = "`PublicKeyCredentialRequestOptionsJSON` for `navigator.credentials.get` \
            (also with `mediation: \"conditional\"`); lists the signed-in user's passkeys, none otherwise. \
            Sets the challenge cookie.", body = Object,
            example = json!({"challenge": "m1Xo…", "timeout": 300000, "rpId": "app.example.com", "userVerification": "required"})),
        (status = 400, description = NO_PASSKEYS, body = ErrorBody,
            example = json!({"code": "PASSKEYS_UNAVAILABLE", "message": "Passkeys need the server's address to be a host name"})),
    ))]
fn passkey_authenticate_options() {}

/// `POST /api/auth/passkey/verify-authentication`.
#[utoipa::path(post, path = "/api/auth/passkey/verify-authentication", tag = "passkeys",
    request_body(content = VerifyAuthentication, example = json!({"response": {"id": "Xq3v…", "rawId": "Xq3v…",
        "type": "public-key", "response": {"clientDataJSON": "eyJ0…", "authenticatorData": "SZYN…",
        "signature": "MEUC…", "userHandle": "3q2+…"}}})),
    responses(
        (status = 200, description = "Signed in; sets the session cookie. Two-factor asks for nothing more.",
            body = SessionAndUser<'static>),
        (status = 400, description = "No ceremony under the cookie (or it was answered already), or an answer that does not verify.",
            body = ErrorBody, example = json!({"code": "AUTHENTICATION_FAILED", "message": "Authentication failed"})),
        (status = 401, description = "No such passkey.", body = ErrorBody,
            example = json!({"code": "PASSKEY_NOT_FOUND", "message": "Passkey not found"})),
    ))]
fn passkey_verify_authentication() {}

/// `GET /api/auth/passkey/list-user-passkeys`.
#[utoipa::path(get, path = "/api/auth/passkey/list-user-passkeys", tag = "passkeys",
    responses((status = 200, description = "The user's passkeys, oldest first.", body = Vec<Passkey>)))]
fn passkey_list() {}

/// `POST /api/auth/passkey/delete-passkey`.
#[utoipa::path(post, path = "/api/auth/passkey/delete-passkey", tag = "passkeys",
    request_body(content = PasskeyId, example = json!({"id": "pk_1"})),
    responses(
        (status = 200, description = "Deleted.", body = Status, example = json!({"status": true})),
        (status = 404, description = "Not one of the user's passkeys.", body = ErrorBody,
            example = json!({"code": "PASSKEY_NOT_FOUND", "message": "Passkey not found"})),
    ))]
fn passkey_delete() {}

/// `POST /api/auth/passkey/update-passkey`.
#[utoipa::path(post, path = "/api/auth/passkey/update-passkey", tag = "passkeys",
    request_body(content = Rename, example = json!({"id": "pk_1", "name": "Portatile"})),
    responses(
        (status = 200, description = "Renamed.", body = Renamed),
        (status = 404, description = "Not one of the user's passkeys.", body = ErrorBody,
            example = json!({"code": "PASSKEY_NOT_FOUND", "message": "Passkey not found"})),
    ))]
fn passkey_update() {}

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

/// `GET /api/auth/passkey/sign-in.js`: the sign-in page's passkey script.
#[utoipa::path(get, path = "/api/auth/passkey/sign-in.js", tag = "pages",
    responses((status = 200, description = "JavaScript: the passkey button and autofill of the sign-in page.",
        content_type = "text/javascript", body = String)))]
fn passkey_sign_in_script() {}

/// `GET /sign-up`: the sign-up page.
#[utoipa::path(get, path = "/sign-up", tag = "pages",
    params(("callbackURL" = Option<String>, Query), ("error" = Option<String>, Query)),
    responses((status = 200, description = "HTML page.", content_type = "text/html", body = String)))]
fn sign_up_page() {}

/// `GET /two-factor`: the second step of a password sign-in with two-factor on.
#[utoipa::path(get, path = "/two-factor", tag = "pages",
    params(("callbackURL" = Option<String>, Query), ("backup" = Option<String>, Query, description = "Ask for a backup code."),
        ("error" = Option<String>, Query)),
    responses((status = 200, description = "HTML page.", content_type = "text/html", body = String)))]
fn two_factor_page() {}

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
const SESSION_ROUTES: [&str; 22] = [
    "/api/auth/passkey/generate-register-options",
    "/api/auth/passkey/verify-registration",
    "/api/auth/passkey/list-user-passkeys",
    "/api/auth/passkey/delete-passkey",
    "/api/auth/passkey/update-passkey",
    "/api/auth/two-factor/enable",
    "/api/auth/two-factor/get-totp-uri",
    "/api/auth/two-factor/generate-backup-codes",
    "/api/auth/two-factor/disable",
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
const LIMITED_ROUTES: [&str; 24] = [
    "/api/auth/passkey/generate-register-options",
    "/api/auth/passkey/verify-registration",
    "/api/auth/passkey/generate-authenticate-options",
    "/api/auth/passkey/verify-authentication",
    "/api/auth/two-factor/send-otp",
    "/api/auth/two-factor/verify-otp",
    "/api/auth/two-factor/enable",
    "/api/auth/two-factor/verify-totp",
    "/api/auth/two-factor/verify-backup-code",
    "/api/auth/two-factor/get-totp-uri",
    "/api/auth/two-factor/generate-backup-codes",
    "/api/auth/two-factor/disable",
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
        list_sessions, activity, confirm_password, not_me_page, not_me, revoke_session, revoke_sessions, revoke_other_sessions,
        update_user, change_password, change_email, list_accounts, unlink_account,
        request_email_change_otp, change_email_otp,
        two_factor_enable, two_factor_verify_totp, two_factor_verify_backup_code,
        two_factor_send_otp, two_factor_verify_otp,
        two_factor_get_totp_uri, two_factor_generate_backup_codes, two_factor_disable,
        passkey_register_options, passkey_verify_registration, passkey_authenticate_options,
        passkey_verify_authentication, passkey_list, passkey_delete, passkey_update,
        request_password_reset, reset_link, reset_password, send_verification_email, verify_email,
        send_verification_otp, sign_in_email_otp, verify_email_otp, check_verification_otp,
        request_password_reset_otp, forget_password_otp, reset_password_otp,
        sign_in_page, passkey_sign_in_script, sign_up_page, two_factor_page, forgot_password_page, reset_password_page,
    ),
    modifiers(&Shared),
    tags(
        (name = "sign-in", description = "Signing up, in and out."),
        (name = "sessions", description = "The user's sessions."),
        (name = "account", description = "The user's profile, password and linked accounts."),
        (name = "passwords", description = "Reset and verification links sent by e-mail."),
        (name = "codes", description = "Six-digit codes sent by e-mail (better-auth's emailOTP): sign-in, verification and reset."),
        (name = "two-factor", description = "A second factor at sign-in (better-auth's twoFactor): an authenticator app's codes and backup codes."),
        (name = "passkeys", description = "Passkeys (better-auth's passkey plugin): sign-in with a WebAuthn credential, no address typed."),
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
