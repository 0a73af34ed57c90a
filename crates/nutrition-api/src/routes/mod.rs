//! The routes of nutrition-api, all under `/me` and all behind the session guard.

use actix_web::middleware::from_fn;
use actix_web::web;
use service_kit::http::method_not_allowed;

pub(crate) mod export;
pub(crate) mod fasts;
mod me;
pub(crate) mod notifications;
pub(crate) mod pause;
pub(crate) mod plans;
pub(crate) mod preferences;
pub(crate) mod recipes;
mod stats;
pub(crate) mod water;
pub(crate) mod weights;

use crate::error::ApiError;
use crate::repo::idempotency::Guarded;

pub fn config(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/me")
            .wrap(from_fn(session::guard::resend_refreshed_cookie))
            .wrap(from_fn(session::origin::check_origin))
            // Nothing else sees a path or query string Postgres would refuse.
            .wrap(from_fn(crate::input::reject_hostile_urls))
            // Every answer here is personal (or says whose session is missing): no browser or
            // proxy cache may keep it for the next person at this computer.
            .wrap(service_kit::http::no_store())
            .service(resource("").route(web::get().to(me::me)))
            .service(resource("/export").route(web::get().to(export::export)))
            .service(
                resource("/preferences")
                    .route(web::get().to(preferences::get))
                    .route(web::patch().to(preferences::patch)),
            )
            .service(
                resource("/fast-events")
                    .route(web::get().to(fasts::list))
                    .route(web::post().to(fasts::start)),
            )
            // Registered before "/fast-events/{id}" so that neither is taken for an id.
            .service(resource("/fast-events/current").route(web::get().to(fasts::current)))
            .service(resource("/fast-events/import").route(web::post().to(fasts::import)))
            .service(
                resource("/fast-events/{id}")
                    .route(web::get().to(fasts::one))
                    .route(web::patch().to(fasts::patch))
                    .route(web::delete().to(fasts::delete)),
            )
            .service(resource("/fast-events/{id}/end").route(web::post().to(fasts::end)))
            .service(resource("/fast-events/{id}/resume").route(web::post().to(fasts::resume)))
            .service(
                resource("/fast-events/{id}/break-fast-suggestions")
                    .route(web::get().to(fasts::suggestions)),
            )
            .service(
                resource("/weights")
                    .route(web::get().to(weights::list))
                    .route(web::post().to(weights::record)),
            )
            .service(resource("/weights/{id}").route(web::delete().to(weights::delete)))
            .service(
                resource("/water")
                    .route(web::get().to(water::day))
                    .route(web::post().to(water::add)),
            )
            .service(resource("/water/{id}").route(web::delete().to(water::delete)))
            .service(resource("/fasting/stats").route(web::get().to(stats::stats)))
            .service(
                resource("/fasting/pause")
                    .route(web::get().to(pause::get))
                    .route(web::post().to(pause::set)),
            )
            .service(resource("/meal-plans").route(web::post().to(plans::create)))
            .service(resource("/meal-plans/today").route(web::get().to(plans::today)))
            .service(resource("/meal-plans/{id}").route(web::get().to(plans::one)))
            .service(
                resource("/meal-plans/slots/{id}/consumed")
                    .route(web::post().to(plans::consume))
                    .route(web::delete().to(plans::unconsume)),
            )
            .service(resource("/notifications/config").route(web::get().to(notifications::config)))
            .service(
                resource("/notifications/settings")
                    .route(web::get().to(notifications::get_settings))
                    .route(web::patch().to(notifications::patch_settings)),
            )
            .service(resource("/notifications/test").route(web::post().to(notifications::test)))
            .service(
                resource("/device-tokens")
                    .route(web::post().to(notifications::register))
                    .route(web::delete().to(notifications::remove)),
            )
            .service(resource("/recipes").route(web::get().to(recipes::list)))
            .service(resource("/recipes/{id}").route(web::get().to(recipes::one))),
    );
}

/// The answer to a retried write: the first answer again, or 422 when the key was first used
/// for another request.
pub(crate) fn retried<T>(outcome: Guarded<T>) -> Result<actix_web::HttpResponse, ApiError> {
    match outcome {
        Guarded::Replayed(answer) => {
            let status = actix_web::http::StatusCode::from_u16(answer.status)
                .unwrap_or(actix_web::http::StatusCode::OK);
            Ok(actix_web::HttpResponse::build(status).json(answer.body))
        }
        Guarded::KeyReused => Err(ApiError::Unprocessable {
            code: "IDEMPOTENCY_KEY_REUSED",
            message: "this Idempotency-Key was used for another request",
        }),
        Guarded::Fresh(_) => Err(ApiError::internal("a fresh outcome taken for a retry")),
    }
}

fn resource(path: &str) -> actix_web::Resource {
    web::resource(path).default_service(web::to(method_not_allowed))
}
