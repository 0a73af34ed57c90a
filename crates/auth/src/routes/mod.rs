//! The routes of the auth service, mounted identically by `main` and by tests.

use actix_web::dev::HttpServiceFactory;
use actix_web::middleware::from_fn;
use actix_web::{FromRequest, Handler, Responder, web};
use service_kit::http::method_not_allowed;

use crate::two_factor::Proof;

mod account_pages;
pub(crate) mod accounts;
mod callback;
mod delete_user;
pub mod email_otp;
mod get_session;
pub(crate) mod not_me;
mod ok;
mod pages;
pub mod passkey;
mod providers;
pub mod reset;
pub mod sessions;
pub(crate) mod sign_in;
mod sign_out;
pub(crate) mod sign_up;
pub mod social;
pub mod two_factor;
pub mod user;
pub(crate) mod verify;

pub fn config(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/api/auth")
            // The last wrap is the outermost: no-store covers even the origin check's refusals.
            .wrap(from_fn(session::guard::resend_refreshed_cookie))
            .wrap(from_fn(session::origin::check_origin))
            // Sessions, accounts and credentials: no cache may keep any of these answers.
            .wrap(service_kit::http::no_store())
            .service(get("/ok", ok::ok))
            .service(form_post("/sign-up/email", sign_up::sign_up))
            .service(form_post("/sign-in/email", sign_in::sign_in))
            .service(post("/sign-out", sign_out::sign_out))
            .service(post("/delete-user", delete_user::delete_user))
            .service(get("/get-session", get_session::get_session))
            .service(get("/providers", providers::providers))
            .service(form_post("/sign-in/social", social::sign_in_social))
            .service(get("/callback/google", callback::callback_google))
            .service(get("/list-sessions", sessions::list_sessions))
            .service(get("/activity", sessions::list_activity))
            .service(post("/confirm-password", sessions::confirm_password))
            .service(get("/not-me", not_me::page))
            .service(form_post("/not-me/confirm", not_me::not_me))
            .service(post("/revoke-session", sessions::revoke_session))
            .service(post("/revoke-sessions", sessions::revoke_sessions))
            .service(post(
                "/revoke-other-sessions",
                sessions::revoke_other_sessions,
            ))
            .service(post("/update-user", user::update_user))
            .service(post("/change-password", user::change_password))
            .service(post("/change-email", user::change_email))
            .service(post(
                "/email-otp/request-email-change",
                email_otp::request_email_change,
            ))
            .service(post("/email-otp/change-email", email_otp::change_email))
            .service(get("/list-accounts", accounts::list_accounts))
            .service(post("/unlink-account", accounts::unlink_account))
            .service(form_post(
                "/request-password-reset",
                reset::request_password_reset,
            ))
            .service(get("/reset-password/{token}", reset::reset_link))
            .service(form_post("/reset-password", reset::reset_password))
            .service(post(
                "/send-verification-email",
                verify::send_verification_email,
            ))
            .service(get("/verify-email", verify::verify_email))
            .service(form_post(
                "/email-otp/send-verification-otp",
                email_otp::send_verification_otp,
            ))
            .service(form_post(
                "/sign-in/email-otp",
                email_otp::sign_in_email_otp,
            ))
            .service(post("/email-otp/verify-email", email_otp::verify_email))
            .service(post(
                "/email-otp/check-verification-otp",
                email_otp::check_verification_otp,
            ))
            .service(form_post(
                "/email-otp/request-password-reset",
                email_otp::request_password_reset,
            ))
            .service(form_post(
                "/forget-password/email-otp",
                email_otp::request_password_reset,
            ))
            .service(form_post(
                "/email-otp/reset-password",
                email_otp::reset_password,
            ))
            .service(post("/two-factor/enable", two_factor::enable))
            .service(form_post("/two-factor/verify-totp", verify_as(Proof::Totp)))
            .service(form_post(
                "/two-factor/verify-backup-code",
                verify_as(Proof::Backup),
            ))
            .service(form_post("/two-factor/send-otp", two_factor::send_otp))
            .service(form_post("/two-factor/verify-otp", verify_as(Proof::Otp)))
            .service(post("/two-factor/get-totp-uri", two_factor::get_totp_uri))
            .service(post(
                "/two-factor/generate-backup-codes",
                two_factor::generate_backup_codes,
            ))
            .service(post("/two-factor/disable", two_factor::disable))
            .service(get(
                "/passkey/generate-register-options",
                passkey::generate_register_options,
            ))
            .service(post(
                "/passkey/verify-registration",
                passkey::verify_registration,
            ))
            .service(get(
                "/passkey/generate-authenticate-options",
                passkey::generate_authenticate_options,
            ))
            .service(form_post(
                "/passkey/verify-authentication",
                passkey::verify_authentication,
            ))
            .service(get("/passkey/list-user-passkeys", passkey::list))
            .service(get("/passkey/sign-in.js", pages::sign_in_script))
            .service(post("/passkey/delete-passkey", passkey::delete))
            .service(post("/passkey/update-passkey", passkey::update)),
    )
    .service(page("/sign-in", pages::sign_in_page))
    .service(page("/sign-up", pages::sign_up_page))
    .service(page("/two-factor", pages::two_factor_page))
    .service(page(
        "/forgot-password",
        account_pages::forgot_password_page,
    ))
    .service(page("/reset-password", account_pages::reset_password_page));
}

/// The handler of a two-factor verification route whose code is read as `kind`.
fn verify_as(
    kind: fn(String) -> Proof,
) -> impl Handler<
    (
        actix_web::HttpRequest,
        web::Data<crate::state::AppState>,
        session::MaybeSession,
        crate::body::Body<two_factor::VerifyCode>,
    ),
    Output = Result<actix_web::HttpResponse, crate::error::ApiError>,
> {
    move |req, state, current, body| two_factor::verify(req, state, current, body, kind)
}

fn resource(path: &str) -> actix_web::Resource {
    web::resource(path).default_service(web::to(method_not_allowed))
}

/// A GET route.
fn get<F, Args>(path: &str, handler: F) -> actix_web::Resource
where
    F: Handler<Args>,
    Args: FromRequest + 'static,
    F::Output: Responder + 'static,
{
    resource(path).route(web::get().to(handler))
}

/// A page: a GET route whose `?lang=` choice is remembered for the pages after it.
fn page<F, Args>(path: &str, handler: F) -> impl HttpServiceFactory + 'static
where
    F: Handler<Args>,
    Args: FromRequest + 'static,
    F::Output: Responder + 'static,
{
    get(path, handler).wrap(from_fn(crate::i18n::remember_chosen_language))
}

/// A POST route.
fn post<F, Args>(path: &str, handler: F) -> actix_web::Resource
where
    F: Handler<Args>,
    Args: FromRequest + 'static,
    F::Output: Responder + 'static,
{
    resource(path).route(web::post().to(handler))
}

/// A POST route that signs in or mails someone, which also the pages' forms post to: refused
/// from another site even without a cookie (login CSRF).
fn form_post<F, Args>(path: &str, handler: F) -> impl HttpServiceFactory + 'static
where
    F: Handler<Args>,
    Args: FromRequest + 'static,
    F::Output: Responder + 'static,
{
    post(path, handler).wrap(from_fn(crate::csrf::refuse_cross_site))
}
