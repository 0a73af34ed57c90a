//! The OpenAPI 3.1 document of push-scheduler's HTTP side, which only reports on the process:
//! the probes and this document, served at `/openapi.json` and rendered at `/docs`.

use utoipa::OpenApi;

#[derive(OpenApi)]
#[openapi(info(
    title = "push-scheduler",
    description = "Runs the reminder and milestone jobs on their Europe/Rome schedules and \
        delivers Web Push messages from the outbox. Its HTTP side only reports on the process."
))]
struct PushScheduler;

/// The complete document: the probes and documents every service has.
pub fn document() -> utoipa::openapi::OpenApi {
    let mut doc = service_kit::openapi::complete(PushScheduler::openapi());
    doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
    service_kit::openapi::add_default_error(&mut doc, |_| true);
    doc
}
