//! Sign-up and sign-in refuse cross-site requests even when they carry no cookie: otherwise
//! another site could sign a visitor into an account of its choosing (login CSRF). Requests
//! with a cookie are checked by `session::origin` already. As in better-auth, a request without
//! Fetch Metadata and without `Origin`/`Referer` (curl, a server) passes: it is no browser.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderMap};
use actix_web::middleware::Next;

use crate::error::ApiError;

fn text<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// `Ok` when the request may go on, else the 403 code.
pub fn check(headers: &HeaderMap, trusted: &[String]) -> Result<(), &'static str> {
    if headers.contains_key(header::COOKIE) {
        return Ok(());
    }
    let site = text(headers, "sec-fetch-site");
    let mode = text(headers, "sec-fetch-mode");
    let has_metadata =
        site.is_some() || mode.is_some() || text(headers, "sec-fetch-dest").is_some();
    let origin = text(headers, "origin").or_else(|| text(headers, "referer"));
    if !has_metadata && origin.is_none() {
        return Ok(());
    }
    let Some(origin) = origin.filter(|o| *o != "null") else {
        return Err("MISSING_OR_NULL_ORIGIN");
    };
    if !session::origin::is_trusted(origin, trusted) {
        return Err("INVALID_ORIGIN");
    }
    if site == Some("cross-site") && mode == Some("navigate") {
        return Err("CROSS_SITE_NAVIGATION_LOGIN_BLOCKED");
    }
    Ok(())
}

/// Middleware for the sign-in and sign-up routes.
pub async fn refuse_cross_site(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    if let Err(code) = check(req.headers(), &session::origin::trusted_origins(&req)) {
        return Err(ApiError::Forbidden(code).into());
    }
    next.call(req).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::{HeaderName, HeaderValue};

    fn run(pairs: &[(&'static str, &'static str)]) -> Result<(), &'static str> {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(HeaderName::from_static(k), HeaderValue::from_static(v));
        }
        check(&h, &["https://app.example.com".to_owned()])
    }

    #[test]
    fn rules() {
        assert_eq!(run(&[]), Ok(()), "no browser");
        assert_eq!(run(&[("origin", "https://app.example.com")]), Ok(()));
        assert_eq!(
            run(&[("origin", "https://evil.example.com")]),
            Err("INVALID_ORIGIN")
        );
        assert_eq!(
            run(&[("referer", "https://evil.example.com/x")]),
            Err("INVALID_ORIGIN")
        );
        assert_eq!(
            run(&[("sec-fetch-site", "cross-site")]),
            Err("MISSING_OR_NULL_ORIGIN")
        );
        assert_eq!(
            run(&[("origin", "null"), ("sec-fetch-site", "cross-site")]),
            Err("MISSING_OR_NULL_ORIGIN")
        );
        assert_eq!(run(&[("origin", "null")]), Err("MISSING_OR_NULL_ORIGIN"));
        assert_eq!(
            run(&[
                ("origin", "https://app.example.com"),
                ("sec-fetch-site", "same-origin"),
                ("sec-fetch-mode", "navigate")
            ]),
            Ok(())
        );
        assert_eq!(
            run(&[("cookie", "a=b"), ("origin", "https://evil.example.com")]),
            Ok(()),
            "left to the cookie rule"
        );
    }
}
