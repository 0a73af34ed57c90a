//! The forgotten-password pages: plain forms posting to the API, which answers a form with a
//! redirect back here (or to the sign-in page once the password is set). No JavaScript needed.

use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;

use crate::i18n::{self, Texts};
use crate::links::Purpose;
use crate::mailbox;
use crate::routes::pages::{alert, esc, html_page};
use crate::state::AppState;

#[derive(Debug, Deserialize)]
pub struct ForgotQuery {
    sent: Option<String>,
    error: Option<String>,
    email: Option<String>,
}

fn unavailable(t: &Texts) -> String {
    format!(
        r#"<p class="error" role="alert">{}</p>
    <p><a href="/sign-in">{}</a></p>"#,
        t.reset_unavailable, t.back_to_sign_in
    )
}

/// `GET /forgot-password`: asks for the address to send the reset link to.
pub async fn forgot_password_page(
    req: HttpRequest,
    state: web::Data<AppState>,
    query: web::Query<ForgotQuery>,
) -> HttpResponse {
    let locale = i18n::page_locale(&req, &state).await;
    let t = i18n::texts(locale);
    let title = t.forgot_title;
    if !mailbox::enabled(&state) {
        return html_page(locale, title, &unavailable(t), "'self'");
    }
    let inner = if query.sent.is_some() {
        // The mail's code does what its link does, for a person whose link would open another
        // browser than the app they use.
        let email = query.email.as_deref().unwrap_or_default();
        format!(
            r#"{}<p class="notice" role="status">{}</p>
    <p>{}</p>
    <form method="post" action="/api/auth/email-otp/reset-password">
      <label for="email">{}</label>
      <input id="email" name="email" type="email" autocomplete="email" required maxlength="254" value="{}">
      <label for="otp">{}</label>
      <input id="otp" name="otp" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{{6}}" maxlength="6" required>
      <label for="password">{} <span class="hint">{}</span></label>
      <input id="password" name="password" type="password" autocomplete="new-password" required minlength="8" maxlength="128">
      <button type="submit">{}</button>
    </form>
    <p class="hint">{}</p>
    <p><a href="/sign-in">{}</a></p>"#,
            alert(query.error.as_deref(), locale),
            t.reset_sent,
            t.have_code,
            t.email_label,
            esc(email),
            t.code_label,
            t.new_password_label,
            t.min_length_hint,
            t.save_password,
            t.signed_out_everywhere_hint,
            t.back_to_sign_in,
        )
    } else {
        format!(
            r#"{}
    <p>{}</p>
    <form method="post" action="/api/auth/request-password-reset">
      <label for="email">{}</label>
      <input id="email" name="email" type="email" autocomplete="email" required maxlength="254">
      <button type="submit">{}</button>
    </form>
    <p><a href="/sign-in">{}</a></p>"#,
            alert(query.error.as_deref(), locale),
            t.forgot_intro,
            t.email_label,
            t.send_link,
            t.back_to_sign_in,
        )
    };
    html_page(locale, title, &inner, "'self'")
}

#[derive(Debug, Deserialize)]
pub struct ResetQuery {
    token: Option<String>,
    error: Option<String>,
}

/// `GET /reset-password?token=`: the form for the new password; without a token (or after an
/// invalid one) it points back to `/forgot-password`.
pub async fn reset_password_page(
    req: HttpRequest,
    state: web::Data<AppState>,
    query: web::Query<ResetQuery>,
) -> HttpResponse {
    let token = query
        .token
        .as_deref()
        .filter(|t| !t.is_empty() && t.len() <= 128);
    let locale = match token {
        Some(token) => i18n::link_locale(&req, &state, Purpose::Reset, token).await,
        None => i18n::page_locale(&req, &state).await,
    };
    let t = i18n::texts(locale);
    let title = t.reset_title;
    // A language the browser would not pick again (the account's, from the mailed link) goes
    // along to the sign-in page the form leads to.
    let carried = if locale == i18n::request_locale(&req) {
        String::new()
    } else {
        format!("?lang={}", locale.as_str())
    };
    let inner = match (token, query.error.as_deref()) {
        (Some(token), error) if error != Some("INVALID_TOKEN") => format!(
            r#"{}
    <form method="post" action="/api/auth/reset-password{}">
      <input type="hidden" name="token" value="{}">
      <label for="newPassword">{} <span class="hint">{}</span></label>
      <input id="newPassword" name="newPassword" type="password" autocomplete="new-password" required minlength="8" maxlength="128">
      <button type="submit">{}</button>
    </form>
    <p class="hint">{}</p>"#,
            alert(error, locale),
            carried,
            esc(token),
            t.new_password_label,
            t.min_length_hint,
            t.save_password,
            t.signed_out_everywhere_hint,
        ),
        _ => format!(
            r#"{}
    <p><a href="/forgot-password">{}</a></p>"#,
            alert(Some("INVALID_TOKEN"), locale),
            t.request_new_link
        ),
    };
    html_page(locale, title, &inner, "'self'")
}
