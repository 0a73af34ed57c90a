//! The HTTP routes of contract sections 4 and 7, one file per action, and what they share: the
//! application state, the extractors (optional JSON body, Bearer claims) and the access rules.

mod access;
pub(crate) mod activate;
pub(crate) mod activations;
pub(crate) mod deactivate;
pub(crate) mod download;
mod extractors;
pub(crate) mod latest;
pub mod limits;
pub mod manage;
mod page;
pub(crate) mod public_keys;
mod signature;
mod state;
pub(crate) mod updates;
mod usage_consume;
pub(crate) mod usage_status;
pub(crate) mod validate;
pub(crate) mod webhook;

use actix_web::middleware::from_fn;
use actix_web::web;
use service_kit::http::{method_not_allowed, not_found};

pub use access::{
    Authorised, authorise, authorise_updates, check, issue, issue_lease, licence_view,
};
pub use extractors::{
    Claims, KeyAndInstance, MaybeClaims, OptionalBody, bearer, claims, instance_field,
    licence_key_field,
};
pub use state::AppState;

pub fn config(cfg: &mut web::ServiceConfig) {
    // Answers the desktop app relies on are signed (contract section 7), errors and unknown
    // paths below these prefixes included.
    cfg.service(
        web::scope("/api/license")
            .wrap(from_fn(signature::sign_answers))
            .service(resource("/activate").route(web::post().to(activate::activate)))
            .service(resource("/validate").route(web::post().to(validate::validate)))
            .service(resource("/deactivate").route(web::post().to(deactivate::deactivate)))
            .service(resource("/activations").route(web::get().to(activations::list)))
            .service(resource("/public-keys").route(web::get().to(public_keys::public_keys)))
            .default_service(web::to(not_found)),
    )
    .service(
        web::scope("/api/usage")
            .wrap(from_fn(signature::sign_answers))
            .service(resource("/consume").route(web::post().to(usage_consume::consume)))
            .service(resource("/status").route(web::get().to(usage_status::status)))
            .default_service(web::to(not_found)),
    )
    .service(
        resource("/api/latest")
            .wrap(from_fn(signature::sign_answers))
            .route(web::get().to(latest::latest)),
    )
    .service(
        resource("/api/download")
            .route(web::get().to(download::download))
            .route(web::head().to(download::download)),
    )
    .service(resource("/api/download.blockmap").route(web::get().to(download::blockmap)))
    // The updater feeds (contract section 12).
    .service(
        web::scope("/api/updates")
            .service(
                resource("/tauri/{target}/{arch}/{current_version}")
                    .route(web::get().to(updates::tauri)),
            )
            .service(resource("/electron/{file}").route(web::get().to(updates::electron)))
            .service(resource("/sparkle/{feed}").route(web::get().to(updates::sparkle)))
            .default_service(web::to(not_found)),
    )
    .service(resource("/api/webhook/lemonsqueezy").route(web::post().to(webhook::lemonsqueezy)))
    // The seat page buyers open from their e-mail (contract section 12).
    .service(resource("/licence/manage").route(web::get().to(manage::page)))
    .service(resource("/licence/manage/release").route(web::post().to(manage::release)))
    .service(resource("/licence/manage/link").route(web::post().to(manage::request_link)));
}

/// A path whose other methods answer 405 `METHOD_NOT_ALLOWED`, like the other services.
pub fn resource(path: &str) -> actix_web::Resource {
    web::resource(path).default_service(web::to(method_not_allowed))
}
