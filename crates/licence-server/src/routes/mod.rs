//! The HTTP routes of contract sections 4 and 7, one file per action, and what they share: the
//! application state, the extractors (optional JSON body, Bearer claims) and the access rules.

mod access;
mod activate;
mod deactivate;
mod download;
mod extractors;
mod latest;
mod state;
mod usage_consume;
mod usage_status;
mod validate;
mod webhook;

use actix_web::web;
use service_kit::http::method_not_allowed;

pub use access::{Authorised, authorise, check, issue, licence_view};
pub use extractors::{
    Claims, KeyAndInstance, MaybeClaims, OptionalBody, bearer, claims, instance_field,
    licence_key_field,
};
pub use state::AppState;

pub fn config(cfg: &mut web::ServiceConfig) {
    cfg.service(resource("/api/license/activate").route(web::post().to(activate::activate)))
        .service(resource("/api/license/validate").route(web::post().to(validate::validate)))
        .service(resource("/api/license/deactivate").route(web::post().to(deactivate::deactivate)))
        .service(resource("/api/latest").route(web::get().to(latest::latest)))
        .service(
            resource("/api/download")
                .route(web::get().to(download::download))
                .route(web::head().to(download::download)),
        )
        .service(resource("/api/webhook/lemonsqueezy").route(web::post().to(webhook::lemonsqueezy)))
        .service(resource("/api/usage/consume").route(web::post().to(usage_consume::consume)))
        .service(resource("/api/usage/status").route(web::get().to(usage_status::status)));
}

/// A path whose other methods answer 405 `METHOD_NOT_ALLOWED`, like the other services.
pub fn resource(path: &str) -> actix_web::Resource {
    web::resource(path).default_service(web::to(method_not_allowed))
}
