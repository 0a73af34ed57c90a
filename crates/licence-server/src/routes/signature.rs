//! The `Licence-Signature` header (contract sections 7 and 12) on every answer of the licence,
//! release and usage routes, errors included, so that a server without the private key cannot
//! answer for ours. The answer gets its `Date` header here, from the service's clock, because the
//! signature covers it. A request's `Licence-Nonce` is covered too, so that an answer cannot be
//! replayed to another request; a malformed one is refused before the handler runs, so that a
//! request whose answer could not be bound to it changes nothing (a consume takes no unit).

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{ResponseError, web};

use super::AppState;
use crate::error::ApiError;
use crate::lease::{NONCE_LENGTH, SIGNATURE_HEADER, valid_nonce};

/// The request header whose value an answer's signature covers.
pub const NONCE_HEADER: &str = "licence-nonce";

/// The request's nonce: `Ok(None)` without the header, `Err` when it is not exactly one value of
/// 16 to 64 base64url characters.
fn nonce_of(req: &ServiceRequest) -> Result<Option<String>, ApiError> {
    let mut values = req.headers().get_all(NONCE_HEADER);
    let Some(first) = values.next() else {
        return Ok(None);
    };
    let nonce = first.to_str().ok().filter(|n| valid_nonce(n));
    match (nonce, values.next()) {
        (Some(nonce), None) => Ok(Some(nonce.to_owned())),
        _ => Err(ApiError::Validation(format!(
            "Licence-Nonce: must be one value of {} to {} base64url characters (A-Z, a-z, 0-9, '-', '_')",
            NONCE_LENGTH.start(),
            NONCE_LENGTH.end()
        ))),
    }
}

pub async fn sign_answers(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let state = req.app_data::<web::Data<AppState>>().cloned();
    let method = req.method().as_str().to_owned();
    let path = req.path().to_owned();
    let (nonce, res) = match nonce_of(&req) {
        Ok(nonce) => (nonce, next.call(req).await?.map_into_boxed_body()),
        // Answered in the form without a nonce: the one sent cannot be echoed safely.
        Err(refused) => (None, req.into_response(refused.error_response())),
    };
    let Some(state) = state else {
        return Ok(res);
    };
    let (req, res) = res.into_parts();
    let (mut head, body) = res.into_parts();
    let body = actix_web::body::to_bytes(body)
        .await
        .map_err(|e| actix_web::error::ErrorInternalServerError(e.to_string()))?;
    let date = httpdate::fmt_http_date(std::time::SystemTime::from(state.clock.now()));
    let headers = head.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&date) {
        headers.insert(header::DATE, v);
    }
    if nonce.is_some() {
        // Bound to this one request, the answer is useless to any other: no cache may keep it.
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    if let Some(sig) = state
        .signing
        .answer_signature(&method, &path, &date, nonce.as_deref(), &body)
        .and_then(|s| HeaderValue::from_str(&s).ok())
    {
        headers.insert(HeaderName::from_static(SIGNATURE_HEADER), sig);
    }
    Ok(ServiceResponse::new(
        req,
        head.set_body(body).map_into_boxed_body(),
    ))
}
