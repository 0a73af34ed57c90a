//! The forgotten-password pages: plain forms posting to the API, which answers a form with a
//! redirect back here (or to the sign-in page once the password is set). No JavaScript needed.

use actix_web::{HttpResponse, web};
use serde::Deserialize;

use crate::mailbox;
use crate::routes::pages::{alert, esc, html_page};
use crate::state::AppState;

#[derive(Debug, Deserialize)]
pub struct ForgotQuery {
    sent: Option<String>,
    error: Option<String>,
    email: Option<String>,
}

const UNAVAILABLE: &str = r#"<p class="error" role="alert">Il recupero della password via e-mail non è disponibile. Contatta l'assistenza.</p>
    <p><a href="/sign-in">Torna all'accesso</a></p>"#;

/// `GET /forgot-password`: asks for the address to send the reset link to.
pub async fn forgot_password_page(
    state: web::Data<AppState>,
    query: web::Query<ForgotQuery>,
) -> HttpResponse {
    let title = "Password dimenticata";
    if !mailbox::enabled(&state) {
        return html_page(title, UNAVAILABLE, "'self'");
    }
    let inner = if query.sent.is_some() {
        // The mail's code does what its link does, for a person whose link would open another
        // browser than the app they use.
        let email = query.email.as_deref().unwrap_or_default();
        format!(
            r#"{}<p class="notice" role="status">Se l'indirizzo è registrato, riceverai a breve un'e-mail con il link per scegliere una nuova password (vale un'ora) e un codice di 6 cifre (vale 5 minuti).</p>
    <p>Hai il codice? Inseriscilo qui con la nuova password.</p>
    <form method="post" action="/api/auth/email-otp/reset-password">
      <label for="email">E-mail</label>
      <input id="email" name="email" type="email" autocomplete="email" required maxlength="254" value="{}">
      <label for="otp">Codice di 6 cifre</label>
      <input id="otp" name="otp" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{{6}}" maxlength="6" required>
      <label for="password">Nuova password <span class="hint">(almeno 8 caratteri)</span></label>
      <input id="password" name="password" type="password" autocomplete="new-password" required minlength="8" maxlength="128">
      <button type="submit">Salva la password</button>
    </form>
    <p class="hint">Dopo il cambio, tutti i dispositivi collegati verranno disconnessi.</p>
    <p><a href="/sign-in">Torna all'accesso</a></p>"#,
            alert(query.error.as_deref()),
            esc(email)
        )
    } else {
        format!(
            r#"{}
    <p>Inserisci l'indirizzo e-mail del tuo account: ti invieremo un link per scegliere una nuova password.</p>
    <form method="post" action="/api/auth/request-password-reset">
      <label for="email">E-mail</label>
      <input id="email" name="email" type="email" autocomplete="email" required maxlength="254">
      <button type="submit">Invia il link</button>
    </form>
    <p><a href="/sign-in">Torna all'accesso</a></p>"#,
            alert(query.error.as_deref())
        )
    };
    html_page(title, &inner, "'self'")
}

#[derive(Debug, Deserialize)]
pub struct ResetQuery {
    token: Option<String>,
    error: Option<String>,
}

/// `GET /reset-password?token=`: the form for the new password; without a token (or after an
/// invalid one) it points back to `/forgot-password`.
pub async fn reset_password_page(query: web::Query<ResetQuery>) -> HttpResponse {
    let title = "Nuova password";
    let token = query
        .token
        .as_deref()
        .filter(|t| !t.is_empty() && t.len() <= 128);
    let inner = match (token, query.error.as_deref()) {
        (Some(token), error) if error != Some("INVALID_TOKEN") => format!(
            r#"{}
    <form method="post" action="/api/auth/reset-password">
      <input type="hidden" name="token" value="{}">
      <label for="newPassword">Nuova password <span class="hint">(almeno 8 caratteri)</span></label>
      <input id="newPassword" name="newPassword" type="password" autocomplete="new-password" required minlength="8" maxlength="128">
      <button type="submit">Salva la password</button>
    </form>
    <p class="hint">Dopo il cambio, tutti i dispositivi collegati verranno disconnessi.</p>"#,
            alert(error),
            esc(token)
        ),
        _ => format!(
            r#"{}
    <p><a href="/forgot-password">Richiedi un nuovo link</a></p>"#,
            alert(Some("INVALID_TOKEN"))
        ),
    };
    html_page(title, &inner, "'self'")
}
