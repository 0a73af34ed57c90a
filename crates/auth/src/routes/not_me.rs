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
use crate::i18n::{self, Locale, Texts};
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

fn expired(t: &Texts) -> String {
    format!(
        r#"<p class="error" role="alert">{}</p>
    <p>{}</p>"#,
        t.not_me_expired, t.not_me_expired_next
    )
}

/// `GET /api/auth/not-me?token=`: what the link will do, and the button that does it. In the
/// language of the account the link belongs to, which its mail was written in, unless the
/// reader chose another.
pub async fn page(
    req: HttpRequest,
    state: web::Data<AppState>,
    query: web::Query<TokenQuery>,
) -> Result<HttpResponse, ApiError> {
    let chosen = i18n::chosen_locale(&req, &state).await;
    let token = query.into_inner().token.unwrap_or_default();
    let lookup = token.clone();
    let live = state
        .db
        .read(
            move |conn| match links::peek(conn, Purpose::NotMe, &lookup, Utc::now())? {
                Some(user_id) => Ok(Some(i18n::user_locale(conn, &user_id)?)),
                None => Ok::<_, ApiError>(None),
            },
        )
        .await?;
    let Some(owner) = live else {
        let locale = chosen.unwrap_or_else(|| i18n::request_locale(&req));
        let t = i18n::texts(locale);
        return Ok(html_page(locale, t.not_me_title, &expired(t), "'self'"));
    };
    let locale: Locale = chosen.unwrap_or(owner);
    let t = i18n::texts(locale);
    let inner = format!(
        r#"<p>{}</p>
    <form method="post" action="/api/auth/not-me/confirm">
      <input type="hidden" name="token" value="{}">
      <button type="submit">{}</button>
    </form>
    <p><a href="/">{}</a></p>"#,
        t.not_me_explained,
        esc(&token),
        t.end_all_sessions,
        t.it_was_me
    );
    Ok(html_page(locale, t.not_me_title, &inner, "'self'"))
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
        (None, true) => {
            let locale = i18n::page_locale(&req, &state).await;
            let t = i18n::texts(locale);
            Ok(html_page(locale, t.not_me_title, &expired(t), "'self'"))
        }
        (None, false) => Err(ApiError::bad("INVALID_TOKEN")),
    }
}
