//! The trusted-origin check: a cookie-carrying POST, PUT, PATCH or DELETE must come from one of
//! the trusted origins, read from `Origin` or, when that is absent, `Referer`. Browsers attach
//! cookies to cross-site form posts, so without this check another site could act for the user.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderMap};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::{HttpResponse, ResponseError, web};

use crate::guard::SessionLayer;

#[derive(Debug, thiserror::Error)]
#[error("the request's origin is not trusted")]
pub struct InvalidOrigin;

impl ResponseError for InvalidOrigin {
    fn status_code(&self) -> StatusCode {
        StatusCode::FORBIDDEN
    }

    fn error_response(&self) -> HttpResponse {
        service_kit::http::error_response(StatusCode::FORBIDDEN, "INVALID_ORIGIN", "Invalid origin")
    }
}

/// Whether a request with these headers and method passes the check against `trusted`.
pub fn is_allowed(method: &Method, headers: &HeaderMap, trusted: &[String]) -> bool {
    let state_changing = matches!(
        *method,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    );
    if !state_changing || !headers.contains_key(header::COOKIE) {
        return true;
    }
    let origin = headers
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && *v != "null")
        .map(str::to_owned)
        .or_else(|| {
            headers
                .get(header::REFERER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| url::Url::parse(v).ok())
                .map(|u| service_kit::config::origin_of(&u))
        });
    origin.is_some_and(|o| is_trusted(&o, trusted))
}

/// Whether `origin` (an `Origin` value or a `Referer` URL) names one of the `trusted` origins.
/// Normalised through the URL parser, so that case and default ports compare equal.
pub fn is_trusted(origin: &str, trusted: &[String]) -> bool {
    url::Url::parse(origin)
        .map(|u| service_kit::config::origin_of(&u))
        .is_ok_and(|o| trusted.contains(&o))
}

/// The trusted origins of the request's app (empty, so nothing is trusted, without a
/// [`SessionLayer`]).
pub fn trusted_origins(req: &ServiceRequest) -> Vec<String> {
    req.app_data::<web::Data<SessionLayer>>()
        .map(|l| l.settings.trusted_origins.clone())
        .unwrap_or_default()
}

/// Middleware answering 403 `INVALID_ORIGIN` to untrusted state-changing cookie requests.
pub async fn check_origin(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    if !is_allowed(req.method(), req.headers(), &trusted_origins(&req)) {
        return Err(InvalidOrigin.into());
    }
    next.call(req).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::HeaderValue;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(k.clone(), HeaderValue::from_str(v).expect("valid header"));
        }
        h
    }

    #[test]
    fn rules() {
        let trusted = vec!["https://app.example.com".to_owned()];
        let cookie = (header::COOKIE, "a=b");
        let ok =
            |m: Method, h: &[(header::HeaderName, &str)]| is_allowed(&m, &headers(h), &trusted);
        assert!(
            ok(Method::GET, std::slice::from_ref(&cookie)),
            "reads are never checked"
        );
        assert!(ok(Method::POST, &[]), "no cookie, nothing to forge");
        assert!(ok(
            Method::POST,
            &[cookie.clone(), (header::ORIGIN, "https://app.example.com")]
        ));
        assert!(ok(
            Method::DELETE,
            &[
                cookie.clone(),
                (header::ORIGIN, "https://APP.example.com:443")
            ]
        ));
        assert!(ok(
            Method::PATCH,
            &[
                cookie.clone(),
                (header::REFERER, "https://app.example.com/x?y")
            ]
        ));
        assert!(!ok(
            Method::POST,
            &[cookie.clone(), (header::ORIGIN, "https://evil.example.com")]
        ));
        assert!(!ok(
            Method::PUT,
            &[cookie.clone(), (header::ORIGIN, "null")]
        ));
        assert!(
            !ok(Method::POST, std::slice::from_ref(&cookie)),
            "a cookie without any origin is refused"
        );
        assert!(!ok(
            Method::POST,
            &[
                cookie,
                (header::REFERER, "https://app.example.com.evil.io/")
            ]
        ));
    }
}
