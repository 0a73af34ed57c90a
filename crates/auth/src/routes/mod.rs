//! The routes of the auth service, mounted identically by `main` and by tests.

use actix_web::middleware::from_fn;
use actix_web::web;
use service_kit::http::method_not_allowed;

mod account_pages;
mod accounts;
mod callback;
mod delete_user;
mod email_otp;
mod get_session;
mod ok;
mod pages;
mod providers;
pub mod reset;
pub mod sessions;
mod sign_in;
mod sign_out;
mod sign_up;
pub mod social;
pub mod user;
mod verify;

pub fn config(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/api/auth")
            // The last wrap is the outermost: no-store covers even the origin check's refusals.
            .wrap(from_fn(session::guard::resend_refreshed_cookie))
            .wrap(from_fn(session::origin::check_origin))
            // Sessions, accounts and credentials: no cache may keep any of these answers.
            .wrap(service_kit::http::no_store())
            .service(resource("/ok").route(web::get().to(ok::ok)))
            .service(
                resource("/sign-up/email")
                    .wrap(from_fn(crate::csrf::refuse_cross_site))
                    .route(web::post().to(sign_up::sign_up)),
            )
            .service(
                resource("/sign-in/email")
                    .wrap(from_fn(crate::csrf::refuse_cross_site))
                    .route(web::post().to(sign_in::sign_in)),
            )
            .service(resource("/sign-out").route(web::post().to(sign_out::sign_out)))
            .service(resource("/delete-user").route(web::post().to(delete_user::delete_user)))
            .service(resource("/get-session").route(web::get().to(get_session::get_session)))
            .service(resource("/providers").route(web::get().to(providers::providers)))
            .service(
                resource("/sign-in/social")
                    .wrap(from_fn(crate::csrf::refuse_cross_site))
                    .route(web::post().to(social::sign_in_social)),
            )
            .service(resource("/callback/google").route(web::get().to(callback::callback_google)))
            .service(resource("/list-sessions").route(web::get().to(sessions::list_sessions)))
            .service(resource("/revoke-session").route(web::post().to(sessions::revoke_session)))
            .service(resource("/revoke-sessions").route(web::post().to(sessions::revoke_sessions)))
            .service(
                resource("/revoke-other-sessions")
                    .route(web::post().to(sessions::revoke_other_sessions)),
            )
            .service(resource("/update-user").route(web::post().to(user::update_user)))
            .service(resource("/change-password").route(web::post().to(user::change_password)))
            .service(resource("/list-accounts").route(web::get().to(accounts::list_accounts)))
            .service(resource("/unlink-account").route(web::post().to(accounts::unlink_account)))
            .service(
                resource("/request-password-reset")
                    .wrap(from_fn(crate::csrf::refuse_cross_site))
                    .route(web::post().to(reset::request_password_reset)),
            )
            .service(resource("/reset-password/{token}").route(web::get().to(reset::reset_link)))
            .service(
                resource("/reset-password")
                    .wrap(from_fn(crate::csrf::refuse_cross_site))
                    .route(web::post().to(reset::reset_password)),
            )
            .service(
                resource("/send-verification-email")
                    .route(web::post().to(verify::send_verification_email)),
            )
            .service(resource("/verify-email").route(web::get().to(verify::verify_email)))
            .service(
                resource("/email-otp/send-verification-otp")
                    .wrap(from_fn(crate::csrf::refuse_cross_site))
                    .route(web::post().to(email_otp::send_verification_otp)),
            )
            .service(
                resource("/sign-in/email-otp")
                    .wrap(from_fn(crate::csrf::refuse_cross_site))
                    .route(web::post().to(email_otp::sign_in_email_otp)),
            )
            .service(
                resource("/email-otp/verify-email").route(web::post().to(email_otp::verify_email)),
            )
            .service(
                resource("/email-otp/check-verification-otp")
                    .route(web::post().to(email_otp::check_verification_otp)),
            )
            .service(
                resource("/email-otp/request-password-reset")
                    .wrap(from_fn(crate::csrf::refuse_cross_site))
                    .route(web::post().to(email_otp::request_password_reset)),
            )
            .service(
                resource("/forget-password/email-otp")
                    .wrap(from_fn(crate::csrf::refuse_cross_site))
                    .route(web::post().to(email_otp::request_password_reset)),
            )
            .service(
                resource("/email-otp/reset-password")
                    .wrap(from_fn(crate::csrf::refuse_cross_site))
                    .route(web::post().to(email_otp::reset_password)),
            ),
    )
    .service(resource("/sign-in").route(web::get().to(pages::sign_in_page)))
    .service(resource("/sign-up").route(web::get().to(pages::sign_up_page)))
    .service(resource("/forgot-password").route(web::get().to(account_pages::forgot_password_page)))
    .service(resource("/reset-password").route(web::get().to(account_pages::reset_password_page)));
}

fn resource(path: &str) -> actix_web::Resource {
    web::resource(path).default_service(web::to(method_not_allowed))
}
