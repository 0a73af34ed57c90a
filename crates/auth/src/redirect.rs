//! Where a browser may be sent after signing in: a path on this site, or a page on a trusted
//! origin. Anything else would make sign-in an open redirect for phishing.

use actix_web::HttpResponse;
use actix_web::http::header;
use session::AuthSettings;

use crate::error::ApiError;

/// `raw` if it is a safe redirect target.
pub fn callback(settings: &AuthSettings, raw: Option<&str>) -> Result<Option<String>, ApiError> {
    let Some(raw) = raw.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(None);
    };
    if raw.len() > 2048 || raw.chars().any(char::is_control) {
        return Err(ApiError::InvalidCallbackUrl);
    }
    if raw.starts_with('/') {
        // "//host" and "/\\host" are protocol-relative to browsers.
        if raw.starts_with("//") || raw.starts_with("/\\") {
            return Err(ApiError::InvalidCallbackUrl);
        }
        return Ok(Some(raw.to_owned()));
    }
    let url = url::Url::parse(raw).map_err(|_| ApiError::InvalidCallbackUrl)?;
    if settings
        .trusted_origins
        .contains(&service_kit::config::origin_of(&url))
    {
        Ok(Some(url.to_string()))
    } else {
        Err(ApiError::InvalidCallbackUrl)
    }
}

/// 303 See Other to `location` (a form post becomes a GET of the target).
pub fn see_other(location: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, location))
        .finish()
}

/// 303 See Other to `location`, setting `cookie`: a form's success.
pub fn see_other_with_cookie(location: &str, cookie: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, location))
        .insert_header((header::SET_COOKIE, cookie))
        .finish()
}

/// A sign-in's answer with the new session's `cookie`: `body` to a JSON client; to a page's form
/// post, a 303 to `callback` (default `/`).
pub fn signed_in(
    form: bool,
    callback: Option<&str>,
    cookie: &str,
    body: impl serde::Serialize,
) -> HttpResponse {
    if form {
        return see_other_with_cookie(callback.unwrap_or("/"), cookie);
    }
    HttpResponse::Ok()
        .insert_header((header::SET_COOKIE, cookie))
        .json(body)
}

/// `page` (which may carry a query already) with each of `params` that is `Some`, in order.
pub fn page_with(page: &str, params: &[(&str, Option<&str>)]) -> String {
    params
        .iter()
        .fold(page.to_owned(), |location, (name, value)| match value {
            Some(v) => crate::links::with_param(&location, name, v),
            None => location,
        })
}

/// 303 back to `page` with `error=code` and the given fields (those that are `Some`), so that the
/// page shows the error next to the form and keeps what was typed.
pub fn back_to_page(page: &str, code: &str, fields: &[(&str, Option<&str>)]) -> HttpResponse {
    let with_error = page_with(page, &[("error", Some(code))]);
    see_other(&page_with(&with_error, fields))
}

/// A credential route's answer: as it is to a JSON client; to the page's form post, a failure
/// goes back to `page` with what was typed (`typed`) and the `callbackURL`, so that the sign-in
/// and sign-up pages show errors alike and still send the browser on afterwards.
pub fn answer(
    form: bool,
    outcome: Result<HttpResponse, ApiError>,
    page: &str,
    typed: &[(&str, &str)],
    callback_url: Option<&str>,
) -> Result<HttpResponse, ApiError> {
    if !form {
        return outcome;
    }
    Ok(outcome.unwrap_or_else(|err| {
        let mut fields: Vec<(&str, Option<&str>)> = typed
            .iter()
            .map(|&(name, value)| (name, Some(value)))
            .collect();
        fields.push(("callbackURL", callback_url.filter(|c| !c.is_empty())));
        back_to_page(page, err.code(), &fields)
    }))
}

/// Query-string encoding of one value.
pub fn q(value: &str) -> String {
    session::cookie::percent_encode(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use service_kit::Env;

    #[test]
    fn only_local_paths_and_trusted_origins() {
        let s = AuthSettings::from_env(&Env::from_pairs([
            ("AUTH_SECRET", "0123456789abcdef0123456789abcdef"),
            ("AUTH_BASE_URL", "https://app.example.com"),
            ("AUTH_TRUSTED_ORIGINS", "https://m.example.com"),
        ]))
        .expect("valid");
        let ok = |v: &str| callback(&s, Some(v)).ok().flatten();
        assert_eq!(ok("/plan?x=1").as_deref(), Some("/plan?x=1"));
        assert_eq!(
            ok("https://m.example.com/a").as_deref(),
            Some("https://m.example.com/a")
        );
        assert_eq!(callback(&s, None).ok().flatten(), None);
        for bad in [
            "//evil.com",
            "/\\evil.com",
            "https://evil.com/",
            "javascript:alert(1)",
            "/a\nb",
        ] {
            assert!(
                matches!(callback(&s, Some(bad)), Err(ApiError::InvalidCallbackUrl)),
                "{bad:?}"
            );
        }
    }
}
