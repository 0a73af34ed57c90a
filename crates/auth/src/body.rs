//! Request bodies of the sign-in and sign-up endpoints: JSON from the better-auth client, or a
//! URL-encoded form from the server-rendered pages, which must work without JavaScript. The
//! handler answers a form with redirects instead of JSON.

use actix_web::dev::Payload;
use actix_web::http::header;
use actix_web::{FromRequest, HttpRequest};
use serde::de::DeserializeOwned;
use service_kit::http::{BodyFuture, DEFAULT_BODY_LIMIT, RequestError, from_body, parse_json};

use crate::error::ApiError;

/// A body and whether it came from an HTML form.
pub struct Body<T> {
    pub value: T,
    pub form: bool,
}

fn is_form(req: &HttpRequest) -> bool {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| {
            m.trim()
                .eq_ignore_ascii_case("application/x-www-form-urlencoded")
        })
}

impl<T: DeserializeOwned + 'static> FromRequest for Body<T> {
    type Error = ApiError;
    type Future = BodyFuture<Self, Self::Error>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        from_body(req, payload, DEFAULT_BODY_LIMIT, |req, bytes| {
            let form = is_form(req);
            let value = if form {
                // Postgres refuses text holding NUL: stop it here, as the JSON parser does.
                if bytes.contains(&0) || bytes.windows(3).any(|w| w.eq_ignore_ascii_case(b"%00")) {
                    return Err(RequestError::Validation(
                        "form: a field holds a NUL character".into(),
                    )
                    .into());
                }
                serde_urlencoded::from_bytes(&bytes)
                    .map_err(|e| RequestError::Validation(format!("form: {e}")))?
            } else {
                if bytes.iter().all(u8::is_ascii_whitespace) {
                    return Err(RequestError::Validation("a JSON body is required".into()).into());
                }
                parse_json(&bytes)?
            };
            Ok(Body { value, form })
        })
    }
}
