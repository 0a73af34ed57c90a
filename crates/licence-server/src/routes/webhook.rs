use actix_web::{HttpRequest, web};
use futures_util::StreamExt;
use serde::Serialize;

use super::AppState;
use super::limits::{self, Bucket};
use crate::error::ApiError;
use crate::payments::{self, Outcome};
use crate::repo::Db;
use crate::signing;

/// Lemon Squeezy bodies are small; this leaves room for orders with many items.
const WEBHOOK_BODY_LIMIT: usize = 1024 * 1024;

#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Received)]
pub struct Answer {
    received: bool,
}

/// `POST /api/webhook/lemonsqueezy`: the signature is checked on the raw bytes before anything
/// is parsed; a bad one writes nothing. See `payments` for what each event does.
#[tracing::instrument(skip_all, fields(event))]
pub async fn lemonsqueezy(
    state: web::Data<AppState>,
    db: web::Data<Db>,
    req: HttpRequest,
    mut payload: web::Payload,
) -> Result<web::Json<Answer>, ApiError> {
    limits::check(&state, &db, &req, Bucket::Webhook).await?;
    let mut body = web::BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk =
            chunk.map_err(|_| ApiError::Validation("the request body could not be read".into()))?;
        if body.len() + chunk.len() > WEBHOOK_BODY_LIMIT {
            return Err(ApiError::PayloadTooLarge(WEBHOOK_BODY_LIMIT));
        }
        body.extend_from_slice(&chunk);
    }
    let signature = req
        .headers()
        .get("x-signature")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let secret = state.settings.webhook_secret.expose().as_bytes();
    if !signing::verify_webhook(secret, &body, signature) {
        tracing::warn!("webhook with a bad signature refused");
        return Err(ApiError::InvalidWebhookSignature);
    }
    let event = payments::parse(&body).map_err(ApiError::Validation)?;
    tracing::Span::current().record("event", event.name.as_str());

    let plan = event
        .variant_id()
        .and_then(|v| payments::plan_of(&state.settings.variants, v));
    if event.needs_plan() && plan.is_none() {
        tracing::warn!(
            variant_id = ?event.variant_id(),
            "payment event for a variant that is none of the configured plans; ignored"
        );
        return Ok(web::Json(Answer { received: true }));
    }
    let now = state.clock.now();
    let links = crate::seat_links::Links::of(&state.settings);
    let outcome = payments::process(&db, &event, plan, links, now).await?;
    match &outcome {
        Outcome::Created { licence_id } => {
            tracing::info!(%licence_id, "licence created from a purchase");
            state.mail.wake();
        }
        Outcome::Updated { licence_id } => tracing::info!(%licence_id, "licence updated"),
        Outcome::Duplicate => tracing::info!("event already processed"),
        Outcome::Recorded => tracing::info!("event recorded"),
    }
    Ok(web::Json(Answer { received: true }))
}
