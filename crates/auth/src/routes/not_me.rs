//! "This was not me", the link of the new-device mail: a page that asks before it acts (mail
//! scanners open links), and the post that ends every session of the account and leads to a
//! new password. The token travels in the query and the form, never in a path an access log
//! keeps.

use actix_web::{HttpRequest, HttpResponse, web};
use chrono::Utc;
use serde::Deserialize;
use session::activity::Kind;

use crate::answers::Status;
use crate::body::Body;
use crate::error::ApiError;
use crate::links::{self, Purpose};
use crate::redirect;
use crate::repo::sessions;
use crate::routes::pages::{esc, html_page};
use crate::state::AppState;

/// The longest token looked at; ours are 43 characters.
const MAX_TOKEN: usize = 128;

#[derive(Debug, Deserialize)]
pub struct TokenQuery {
    token: Option<String>,
}

/// The body of the page's form (or a JSON caller's).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NotMe {
    token: String,
}

const EXPIRED: &str = r#"<p class="error" role="alert">Questo link non è più valido: è scaduto o è già stato usato.</p>
    <p>Se pensi che qualcun altro usi il tuo account, <a href="/forgot-password">scegli una nuova password</a>: tutti i dispositivi collegati verranno disconnessi.</p>"#;

/// `GET /api/auth/not-me?token=`: what the link will do, and the button that does it.
pub async fn page(
    state: web::Data<AppState>,
    query: web::Query<TokenQuery>,
) -> Result<HttpResponse, ApiError> {
    let title = "Non sono stato io";
    let token = query.into_inner().token.unwrap_or_default();
    let lookup = token.clone();
    let live = state
        .db
        .read(move |conn| links::peek(conn, Purpose::NotMe, &lookup, Utc::now()))
        .await?;
    if live.is_none() {
        return Ok(html_page(title, EXPIRED, "'self'"));
    }
    let inner = format!(
        r#"<p>Se non hai effettuato tu l'accesso di cui ti abbiamo scritto, chiudiamo ora tutte le sessioni del tuo account, su ogni dispositivo, e ti chiediamo una nuova password.</p>
    <form method="post" action="/api/auth/not-me/confirm">
      <input type="hidden" name="token" value="{}">
      <button type="submit">Chiudi tutte le sessioni</button>
    </form>
    <p><a href="/">Sono stato io: torna all'app</a></p>"#,
        esc(&token)
    );
    Ok(html_page(title, &inner, "'self'"))
}

/// `POST /api/auth/not-me/confirm` `{token}`: ends every session of the account (recorded as
/// `sessions_revoked`) and, from the page's form, goes on to the new-password page with a fresh
/// reset token; a JSON caller gets `{status: true}`. A token works once.
pub async fn not_me(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: Body<NotMe>,
) -> Result<HttpResponse, ApiError> {
    state.rate_limit(&req, "not-me", None).await?;
    let (form, token) = (body.form, body.value.token);
    let client = state.activity_client(&req);
    let reset = state
        .db
        .write(move |conn| {
            let now = Utc::now();
            if token.len() > MAX_TOKEN {
                return Ok(None);
            }
            let Some(user_id) = links::redeem(conn, Purpose::NotMe, &token, now)? else {
                return Ok(None);
            };
            sessions::delete_all(conn, &user_id)?;
            crate::activity::record(conn, &user_id, Kind::SessionsRevoked, &client, now)?;
            let reset = links::issue(conn, Purpose::Reset, &user_id, now)?;
            tracing::info!(%user_id, "not me: every session ended");
            Ok::<_, ApiError>(Some(reset))
        })
        .await?;
    match (reset, form) {
        (Some(reset), true) => Ok(redirect::see_other(&links::with_param(
            "/reset-password",
            "token",
            &reset,
        ))),
        (Some(_), false) => Ok(HttpResponse::Ok().json(Status::DONE)),
        (None, true) => Ok(html_page("Non sono stato io", EXPIRED, "'self'")),
        (None, false) => Err(ApiError::bad("INVALID_TOKEN")),
    }
}
