//! The sign-in and sign-up pages: plain HTML forms that post to the API and work without
//! JavaScript. The API answers a form with a redirect: to the callback on success, back to the
//! page with `?error=CODE` on failure, which the page shows next to the form.
//!
//! Every page speaks the language [`i18n::page_locale`] picks; its texts are in [`crate::i18n`].

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;

use crate::i18n::{self, Locale, Texts};
use crate::redirect::q;
use crate::state::AppState;

#[derive(Debug, Deserialize)]
pub struct PageQuery {
    error: Option<String>,
    email: Option<String>,
    name: Option<String>,
    #[serde(rename = "callbackURL")]
    callback_url: Option<String>,
    /// Set after a password reset, to say so above the form.
    reset: Option<String>,
    /// Set after an address was confirmed.
    verified: Option<String>,
    /// `code`: sign in with a code mailed to the address instead of a password.
    with: Option<String>,
    /// Set once the code was sent: the page asks for it.
    sent: Option<String>,
    /// On the two-factor page: ask for a backup code instead of the app's.
    backup: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Page {
    SignIn,
    SignUp,
}

pub async fn sign_in_page(
    req: HttpRequest,
    state: web::Data<AppState>,
    query: web::Query<PageQuery>,
) -> HttpResponse {
    let locale = i18n::page_locale(&req, &state).await;
    if query.with.as_deref() == Some("code") && crate::mailbox::enabled(&state) {
        return render_code(&state, &query, locale);
    }
    render(&state, &query, Page::SignIn, locale)
}

pub async fn sign_up_page(
    req: HttpRequest,
    state: web::Data<AppState>,
    query: web::Query<PageQuery>,
) -> HttpResponse {
    let locale = i18n::page_locale(&req, &state).await;
    render(&state, &query, Page::SignUp, locale)
}

/// Escapes text for HTML content and double-quoted attributes: the mails' escaper, one for
/// every HTML the service writes.
pub use mailer::message::escape_html as esc;

/// The page's error for `code`, as an alert above the form.
pub fn alert(code: Option<&str>, locale: Locale) -> String {
    code.map(|c| {
        format!(
            r#"<p class="error" role="alert" id="form-error">{}</p>"#,
            i18n::error(locale, c)
        )
    })
    .unwrap_or_default()
}

/// `callbackURL` as one more parameter of a link in the page (after `?` or `&`), escaped for
/// the attribute; nothing without a callback.
fn callback_query(separator: char, callback: Option<&str>) -> String {
    callback
        .map(|c| esc(&format!("{separator}callbackURL={}", q(c))))
        .unwrap_or_default()
}

/// The query's `callbackURL` when the API would accept it, and the hidden field that carries it
/// on through the form.
fn carried_callback(auth: &session::AuthSettings, query: &PageQuery) -> (Option<String>, String) {
    let callback = crate::redirect::callback(auth, query.callback_url.as_deref())
        .ok()
        .flatten();
    let hidden = callback
        .as_deref()
        .map(|c| {
            format!(
                r#"<input type="hidden" name="callbackURL" value="{}">"#,
                esc(c)
            )
        })
        .unwrap_or_default();
    (callback, hidden)
}

fn render(state: &AppState, query: &PageQuery, page: Page, locale: Locale) -> HttpResponse {
    let t = i18n::texts(locale);
    let auth = &state.settings.auth;
    let (callback, hidden_callback) = carried_callback(auth, query);
    let passkeys = page == Page::SignIn && state.passkeys.is_some();
    // The browser offers its saved passkeys in the address field's autofill (conditional UI).
    let email_autocomplete = if passkeys {
        "username webauthn"
    } else {
        "email"
    };
    let error = alert(query.error.as_deref(), locale);
    let email = esc(query.email.as_deref().unwrap_or_default());
    let Texts {
        email_label,
        password_label,
        ..
    } = t;
    let (title, action, fields, submit, other) = match page {
        Page::SignIn => (
            t.sign_in_title,
            "/api/auth/sign-in/email",
            format!(
                r#"<label for="email">{email_label}</label>
      <input id="email" name="email" type="email" autocomplete="{email_autocomplete}" required maxlength="254" value="{email}">
      <label for="password">{password_label}</label>
      <input id="password" name="password" type="password" autocomplete="current-password" required maxlength="128">
      <label class="check"><input type="checkbox" name="rememberMe" value="true" checked> {}</label>"#,
                t.remember_me
            ),
            t.sign_in_submit,
            format!(
                r#"{} <a href="/sign-up{}">{}</a>"#,
                t.no_account,
                callback_query('?', callback.as_deref()),
                t.sign_up_link
            ),
        ),
        Page::SignUp => (
            t.sign_up_title,
            "/api/auth/sign-up/email",
            format!(
                r#"<label for="name">{}</label>
      <input id="name" name="name" type="text" autocomplete="name" required maxlength="200" value="{}">
      <label for="email">{email_label}</label>
      <input id="email" name="email" type="email" autocomplete="email" required maxlength="254" value="{email}">
      <label for="password">{password_label} <span class="hint">{}</span></label>
      <input id="password" name="password" type="password" autocomplete="new-password" required minlength="8" maxlength="128">
      <input type="hidden" name="rememberMe" value="true">"#,
                t.name_label,
                esc(query.name.as_deref().unwrap_or_default()),
                t.min_length_hint
            ),
            t.sign_up_submit,
            format!(
                r#"{} <a href="/sign-in{}">{}</a>"#,
                t.have_account,
                callback_query('?', callback.as_deref()),
                t.sign_in_link
            ),
        ),
    };
    // The reset link exists only when the service can send the mail.
    let forgot = if page == Page::SignIn && crate::mailbox::enabled(state) {
        format!(
            r#"
    <p class="forgot"><a href="/sign-in?with=code{}">{}</a></p>
    <p class="forgot"><a href="/forgot-password">{}</a></p>"#,
            callback_query('&', callback.as_deref()),
            t.with_code_link,
            t.forgot_link
        )
    } else {
        String::new()
    };
    let notice = match (query.reset.as_deref(), query.verified.as_deref()) {
        (Some(_), _) => Some(t.password_updated),
        (_, Some(_)) => Some(t.email_confirmed),
        _ => None,
    }
    .map(|n| format!(r#"<p class="notice" role="status">{n}</p>"#))
    .unwrap_or_default();
    let error = format!("{notice}{error}");
    // The social button and its divider exist only with a configured provider.
    let social = if state.settings.google.is_some() {
        format!(
            r#"<form method="post" action="/api/auth/sign-in/social" class="social">
      <input type="hidden" name="provider" value="google">{hidden_callback}
      <button type="submit" class="google">{}</button>
    </form>
    <div class="divider" role="separator"><span>{}</span></div>"#,
            t.continue_with_google, t.or
        )
    } else {
        String::new()
    };
    // Hidden until the script finds WebAuthn in the browser: without it the button does nothing.
    // The script's messages travel in the page, so that they come from the one catalogue.
    let passkey = if passkeys {
        format!(
            r#"
    <div class="divider passkey" role="separator"><span>{}</span></div>
    <button type="button" id="passkey" class="secondary" data-next="{}" hidden>{}</button>
    <p id="passkey-status" class="error" role="alert" data-not-found="{}" data-failed="{}" data-expired="{}" data-rate-limited="{}" data-other="{}" hidden></p>"#,
            t.or,
            esc(callback.as_deref().unwrap_or("/")),
            t.passkey_button,
            esc(t.passkey_not_found),
            esc(t.passkey_failed),
            esc(t.passkey_expired),
            esc(t.passkey_rate_limited),
            esc(t.passkey_other),
        )
    } else {
        String::new()
    };
    let inner = format!(
        r#"{error}
    {social}
    <form method="post" action="{action}" class="credentials">
      {fields}
      {hidden_callback}
      <button type="submit">{submit}</button>
    </form>{passkey}{forgot}
    <p>{other}</p>"#
    );
    let form_action = match &state.settings.google {
        Some(g) => format!("'self' {}", service_kit::config::origin_of(&g.auth_url)),
        None => "'self'".to_owned(),
    };
    page_with(
        locale,
        title,
        &inner,
        &form_action,
        passkeys.then_some(SIGN_IN_SCRIPT_PATH),
    )
}

/// Where the sign-in page's passkey script is served.
pub const SIGN_IN_SCRIPT_PATH: &str = "/api/auth/passkey/sign-in.js";

/// `GET /api/auth/passkey/sign-in.js`: the sign-in page's passkey ceremony, with the browser's
/// picker (the button) and its autofill (conditional mediation).
pub async fn sign_in_script() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/javascript; charset=utf-8")
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .body(include_str!("passkey-sign-in.js"))
}

/// The sign-in page's way by code: first the address, then the code mailed to it.
fn render_code(state: &AppState, query: &PageQuery, locale: Locale) -> HttpResponse {
    let t = i18n::texts(locale);
    let (callback, hidden_callback) = carried_callback(&state.settings.auth, query);
    let back = callback_query('?', callback.as_deref());
    let error = alert(query.error.as_deref(), locale);
    let email = query.email.as_deref().unwrap_or_default();
    let inner = if query.sent.is_some() && !email.is_empty() {
        format!(
            r#"{error}
    <p class="notice" role="status">{sent}</p>
    <form method="post" action="/api/auth/sign-in/email-otp" class="credentials">
      <input type="hidden" name="email" value="{shown}">
      <label for="otp">{code_label}</label>
      <input id="otp" name="otp" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{{6}}" maxlength="6" required autofocus>
      {hidden_callback}
      <button type="submit">{submit}</button>
    </form>
    <p><a href="/sign-in?with=code&amp;email={again}{callback_amp}">{send_new}</a></p>
    <p><a href="/sign-in{back}">{with_password}</a></p>"#,
            sent = t.code_sent.replace("{email}", &esc(email)),
            shown = esc(email),
            code_label = t.code_label,
            submit = t.sign_in_submit,
            again = esc(&q(email)),
            callback_amp = callback_query('&', callback.as_deref()),
            send_new = t.send_new_code,
            with_password = t.with_password,
        )
    } else {
        format!(
            r#"{error}
    <form method="post" action="/api/auth/email-otp/send-verification-otp" class="credentials">
      <label for="email">{email_label}</label>
      <input id="email" name="email" type="email" autocomplete="email" required maxlength="254" value="{shown}">
      <input type="hidden" name="type" value="sign-in">
      {hidden_callback}
      <button type="submit">{send_me}</button>
    </form>
    <p>{explained}</p>
    <p><a href="/sign-in{back}">{with_password}</a></p>"#,
            email_label = t.email_label,
            shown = esc(email),
            send_me = t.send_me_a_code,
            explained = t.code_explained,
            with_password = t.with_password,
        )
    };
    html_page(locale, t.code_title, &inner, "'self'")
}

/// `GET /two-factor`: the second step of a password sign-in with two-factor on, a code of the
/// authenticator app or a backup code. The password step left the challenge cookie.
pub async fn two_factor_page(
    req: HttpRequest,
    state: web::Data<AppState>,
    query: web::Query<PageQuery>,
) -> HttpResponse {
    let locale = i18n::page_locale(&req, &state).await;
    let t = i18n::texts(locale);
    let (callback, hidden_callback) = carried_callback(&state.settings.auth, &query);
    let error = alert(query.error.as_deref(), locale);
    let here = |backup: bool| {
        let flag = if backup { "?backup=1" } else { "" };
        let sep = if backup { '&' } else { '?' };
        format!(
            "/two-factor{flag}{}",
            callback_query(sep, callback.as_deref())
        )
    };
    let (action, field, other) = if query.backup.is_some() {
        (
            "/api/auth/two-factor/verify-backup-code",
            format!(
                r#"<label for="code">{}</label>
      <input id="code" name="code" type="text" autocomplete="off" autocapitalize="off" spellcheck="false" maxlength="11" required autofocus>"#,
                t.backup_code_label
            ),
            format!(r#"<a href="{}">{}</a>"#, here(false), t.use_app_code),
        )
    } else {
        (
            "/api/auth/two-factor/verify-totp",
            format!(
                r#"<label for="code">{}</label>
      <input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{{6}}" maxlength="6" required autofocus>"#,
                t.app_code_label
            ),
            format!(r#"<a href="{}">{}</a>"#, here(true), t.use_backup_code),
        )
    };
    let inner = format!(
        r#"{error}
    <form method="post" action="{action}" class="credentials">
      {field}
      <label class="check"><input type="checkbox" name="trustDevice" value="true"> {trust}</label>
      {hidden_callback}
      <button type="submit">{verify}</button>
    </form>
    <p>{other}</p>
    <p><a href="/sign-in{back}">{restart}</a></p>"#,
        trust = t.trust_device,
        verify = t.verify,
        back = callback_query('?', callback.as_deref()),
        restart = t.restart_sign_in,
    );
    html_page(locale, t.two_factor_title, &inner, "'self'")
}

/// A complete page in `locale` around `inner` (already escaped HTML), with the headers every
/// page sends.
pub fn html_page(locale: Locale, title: &str, inner: &str, form_action: &str) -> HttpResponse {
    page_with(locale, title, inner, form_action, None)
}

/// [`html_page`] that also runs auth's script at `script` (a path of ours): the one script a
/// page may run and the one place it may fetch from are this origin.
fn page_with(
    locale: Locale,
    title: &str,
    inner: &str,
    form_action: &str,
    script: Option<&str>,
) -> HttpResponse {
    let lang = locale.as_str();
    let (tag, policy) = match script {
        Some(src) => (
            format!(r#"<script src="{src}" defer></script>"#),
            "script-src 'self'; connect-src 'self'; ",
        ),
        None => (String::new(), ""),
    };
    let html = format!(
        r##"<!doctype html>
<html lang="{lang}">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <meta name="color-scheme" content="light dark">
  <meta name="theme-color" content="#0f766e" media="(prefers-color-scheme: light)">
  <meta name="theme-color" content="#0b1f1d" media="(prefers-color-scheme: dark)">
  <title>{title} · Digiuno</title>{tag}
  <link rel="icon" href="/icons/icon-192.png">
  <link rel="manifest" href="/manifest.webmanifest">
  <style>
    :root {{ color-scheme: light dark; --bg: #f6f8f7; --surface: #fff; --text: #15201e; --muted: #4b5a57; --border: #c9d3d0; --accent: #0f766e; --accent-text: #fff; --link: #0b5c56; --danger-bg: #fde8e8; --danger: #8a1c1c; --ok-bg: #d7efec; --ok: #0b4a44; --focus: #1d4ed8; }}
    @media (prefers-color-scheme: dark) {{ :root {{ --bg: #0b1412; --surface: #13201d; --text: #e7efed; --muted: #a9bab6; --border: #35504a; --accent: #5eead4; --accent-text: #042f2a; --link: #5eead4; --danger-bg: #3b1212; --danger: #fca5a5; --ok-bg: #17423c; --ok: #c7f0ea; --focus: #93c5fd; }} }}
    * {{ box-sizing: border-box; }}
    body {{ font-family: system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; line-height: 1.5; background: var(--bg); color: var(--text); margin: 0; }}
    header {{ padding: .75rem 1rem; background: var(--surface); border-bottom: 1px solid var(--border); }}
    .brand {{ font-weight: 700; font-size: 1.15rem; color: var(--text); text-decoration: none; }}
    main {{ max-width: 24rem; margin: 2rem auto; background: var(--surface); padding: 1.5rem; border-radius: 12px; border: 1px solid var(--border); }}
    @media (max-width: 26rem) {{ main {{ margin: 1rem; }} }}
    h1 {{ font-size: 1.5rem; margin-top: 0; }}
    a {{ color: var(--link); }}
    :focus-visible {{ outline: 3px solid var(--focus); outline-offset: 2px; }}
    label {{ display: block; margin-top: 1rem; font-weight: 600; }}
    label.check {{ font-weight: normal; }}
    input[type=email], input[type=password], input[type=text] {{ width: 100%; padding: .6rem; margin-top: .3rem; border: 1px solid var(--border); border-radius: 8px; font-size: 1rem; background: var(--bg); color: var(--text); }}
    button {{ width: 100%; margin-top: 1.5rem; padding: .7rem; border: 0; border-radius: 8px; background: var(--accent); color: var(--accent-text); font-size: 1rem; font-weight: 600; cursor: pointer; }}
    button.google, button.secondary {{ background: var(--surface); color: var(--text); border: 1px solid var(--border); margin-top: 0; }}
    button[hidden], [hidden] {{ display: none; }}
    .divider {{ display: flex; align-items: center; gap: .5rem; color: var(--muted); margin: 1.2rem 0 0; }}
    .divider::before, .divider::after {{ content: ""; flex: 1; border-top: 1px solid var(--border); }}
    .error {{ background: var(--danger-bg); color: var(--danger); padding: .7rem; border-radius: 8px; }}
    .notice {{ background: var(--ok-bg); color: var(--ok); padding: .7rem; border-radius: 8px; }}
    .hint {{ font-weight: normal; color: var(--muted); }}
  </style>
</head>
<body>
  <header><a class="brand" href="/">Digiuno</a></header>
  <main>
    <h1>{title}</h1>
    {inner}
  </main>
</body>
</html>
"##
    );
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            format!("default-src 'none'; {policy}style-src 'unsafe-inline'; img-src 'self'; manifest-src 'self'; form-action {form_action}; frame-ancestors 'none'; base-uri 'none'"),
        ))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::REFERRER_POLICY, "same-origin"))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .body(html)
}
