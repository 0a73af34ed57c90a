//! The HTML shell of the service's own pages (the seat page): the product's look, as auth's
//! pages have it (the same colours, type and card), and no script at all.
//!
//! The style sheet is inline and allowed by its hash alone, so the Content-Security-Policy lets
//! nothing else run, load or style the page; forms may post only to this origin. Pages may carry
//! a capability in their address (a seat link), so no referrer ever leaves them and no cache
//! keeps them.

use std::sync::LazyLock;

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use domain::locale::Locale;

const STYLE: &str = "\
:root { color-scheme: light dark; --bg: #f6f8f7; --surface: #fff; --text: #15201e; --muted: #4b5a57; --border: #c9d3d0; --accent: #0f766e; --accent-text: #fff; --link: #0b5c56; --danger-bg: #fde8e8; --danger: #8a1c1c; --ok-bg: #d7efec; --ok: #0b4a44; --focus: #1d4ed8; }
@media (prefers-color-scheme: dark) { :root { --bg: #0b1412; --surface: #13201d; --text: #e7efed; --muted: #a9bab6; --border: #35504a; --accent: #5eead4; --accent-text: #042f2a; --link: #5eead4; --danger-bg: #3b1212; --danger: #fca5a5; --ok-bg: #17423c; --ok: #c7f0ea; --focus: #93c5fd; } }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; line-height: 1.5; background: var(--bg); color: var(--text); margin: 0; }
header { padding: .75rem 1rem; background: var(--surface); border-bottom: 1px solid var(--border); display: flex; justify-content: space-between; align-items: center; }
.brand { font-weight: 700; font-size: 1.15rem; color: var(--text); text-decoration: none; }
main { max-width: 40rem; margin: 2rem auto; background: var(--surface); padding: 1.5rem; border-radius: 12px; border: 1px solid var(--border); }
@media (max-width: 42rem) { main { margin: 1rem; } }
h1 { font-size: 1.5rem; margin-top: 0; }
a { color: var(--link); }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
label { display: block; margin-top: 1rem; font-weight: 600; }
input[type=email] { width: 100%; padding: .6rem; margin-top: .3rem; border: 1px solid var(--border); border-radius: 8px; font-size: 1rem; background: var(--bg); color: var(--text); }
button { margin-top: 1rem; padding: .6rem 1rem; border: 0; border-radius: 8px; background: var(--accent); color: var(--accent-text); font-size: 1rem; font-weight: 600; cursor: pointer; }
table { width: 100%; border-collapse: collapse; margin-top: 1rem; }
th, td { text-align: left; padding: .5rem .4rem; border-bottom: 1px solid var(--border); vertical-align: middle; }
td button { margin-top: 0; }
.error { background: var(--danger-bg); color: var(--danger); padding: .7rem; border-radius: 8px; }
.notice { background: var(--ok-bg); color: var(--ok); padding: .7rem; border-radius: 8px; }
.hint { color: var(--muted); }
";

/// `'sha256-…'` of [`STYLE`]: the one style the policy allows.
static STYLE_HASH: LazyLock<String> = LazyLock::new(|| {
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, STYLE.as_bytes());
    format!("'sha256-{}'", STANDARD.encode(digest.as_ref()))
});

/// A whole page: `title` as its heading, `inner` (HTML already escaped) below it, and a link to
/// the same page in the other language at `other_language` when there is one.
pub fn html_page(
    status: StatusCode,
    locale: Locale,
    title: &str,
    inner: &str,
    other_language: Option<&str>,
) -> HttpResponse {
    let lang = locale.as_str();
    let title = escape(title);
    let switch = other_language.map_or_else(String::new, |href| {
        let (label, other) = match locale {
            Locale::It => ("English", "en"),
            Locale::En => ("Italiano", "it"),
        };
        format!(
            r#"<a href="{href}" lang="{other}" hreflang="{other}">{label}</a>"#,
            href = escape(href)
        )
    });
    let html = format!(
        r##"<!doctype html>
<html lang="{lang}">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <meta name="color-scheme" content="light dark">
  <meta name="referrer" content="no-referrer">
  <title>{title} · Digiuno</title>
  <style>{STYLE}</style>
</head>
<body>
  <header><span class="brand">Digiuno</span>{switch}</header>
  <main>
    <h1>{title}</h1>
    {inner}
  </main>
</body>
</html>
"##
    );
    let policy = format!(
        "default-src 'none'; style-src {}; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        *STYLE_HASH
    );
    let mut resp = HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .body(html);
    if let Ok(v) = HeaderValue::from_str(&policy) {
        resp.headers_mut()
            .insert(header::CONTENT_SECURITY_POLICY, v);
    }
    resp
}

/// Text as HTML, safe in element content and in quoted attributes.
pub fn escape(s: &str) -> String {
    mailer::message::escape_html(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_allows_exactly_the_page_style() {
        let resp = html_page(StatusCode::OK, Locale::En, "T <b>", "<p>x</p>", None);
        let csp = resp
            .headers()
            .get(header::CONTENT_SECURITY_POLICY)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        assert!(csp.contains("default-src 'none'"), "{csp}");
        assert!(csp.contains(&*STYLE_HASH), "{csp}");
        assert!(!csp.contains("unsafe"), "{csp}");
        assert!(!csp.contains("script-src"), "{csp}");
    }
}
