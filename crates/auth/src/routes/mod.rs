//! The routes of the auth service, mounted identically by `main` and by tests.

use actix_web::middleware::from_fn;
use actix_web::web;
use service_kit::http::method_not_allowed;

mod callback;
mod delete_user;
mod get_session;
mod ok;
mod pages;
mod providers;
mod sign_in;
mod sign_out;
mod sign_up;
pub mod social;

pub fn config(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/api/auth")
            // Outermost first: the origin check rejects before anything else runs.
            .wrap(from_fn(session::guard::resend_refreshed_cookie))
            .wrap(from_fn(session::origin::check_origin))
            .service(resource("/ok").route(web::get().to(ok::ok)))
            .service(resource("/sign-up/email").route(web::post().to(sign_up::sign_up)))
            .service(resource("/sign-in/email").route(web::post().to(sign_in::sign_in)))
            .service(resource("/sign-out").route(web::post().to(sign_out::sign_out)))
            .service(resource("/delete-user").route(web::post().to(delete_user::delete_user)))
            .service(resource("/get-session").route(web::get().to(get_session::get_session)))
            .service(resource("/providers").route(web::get().to(providers::providers)))
            .service(resource("/sign-in/social").route(web::post().to(social::sign_in_social)))
            .service(resource("/callback/google").route(web::get().to(callback::callback_google))),
    )
    .service(resource("/sign-in").route(web::get().to(pages::sign_in_page)))
    .service(resource("/sign-up").route(web::get().to(pages::sign_up_page)));
}

fn resource(path: &str) -> actix_web::Resource {
    web::resource(path).default_service(web::to(method_not_allowed))
}
