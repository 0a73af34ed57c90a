//! The routes of nutrition-api, all under `/me` and all behind the session guard.

use actix_web::middleware::from_fn;
use actix_web::web;
use service_kit::http::method_not_allowed;

mod me;

pub fn config(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/me")
            .wrap(from_fn(session::guard::resend_refreshed_cookie))
            .wrap(from_fn(session::origin::check_origin))
            .service(resource("").route(web::get().to(me::me))),
    );
}

fn resource(path: &str) -> actix_web::Resource {
    web::resource(path).default_service(web::to(method_not_allowed))
}
