//! The `Licence-Signature` header (contract section 7) on every answer of the licence, release
//! and usage routes, errors included, so that a server without the private key cannot answer
//! for ours. The answer gets its `Date` header here, from the service's clock, because the
//! signature covers it.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::web;

use super::AppState;
use crate::lease::SIGNATURE_HEADER;

pub async fn sign_answers(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let state = req.app_data::<web::Data<AppState>>().cloned();
    let method = req.method().as_str().to_owned();
    let path = req.path().to_owned();
    let res = next.call(req).await?;
    let Some(state) = state else {
        return Ok(res.map_into_boxed_body());
    };
    let (req, res) = res.into_parts();
    let (mut head, body) = res.into_parts();
    let body = actix_web::body::to_bytes(body).await.map_err(|e| {
        let e: Box<dyn std::error::Error> = e.into();
        actix_web::error::ErrorInternalServerError(e.to_string())
    })?;
    let date = httpdate::fmt_http_date(std::time::SystemTime::from(state.clock.now()));
    let headers = head.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&date) {
        headers.insert(header::DATE, v);
    }
    if let Some(sig) = state
        .signing
        .answer_signature(&method, &path, &date, &body)
        .and_then(|s| HeaderValue::from_str(&s).ok())
    {
        headers.insert(HeaderName::from_static(SIGNATURE_HEADER), sig);
    }
    Ok(ServiceResponse::new(
        req,
        head.set_body(body).map_into_boxed_body(),
    ))
}
