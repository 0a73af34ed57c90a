use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};

use crate::answers::Success;
use crate::error::ApiError;
use crate::state::AppState;

/// `POST /api/auth/sign-out`: deletes the session row, so the cookie stops working in every
/// service at once, and expires the cookie. Without a session it still succeeds.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn sign_out(
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let header_value = session::guard::cookie_header(&req);
    if let Some(token) = session::cookie::token_from_header(&state.settings.auth, &header_value) {
        state
            .db
            .read(move |conn| session::store::delete_by_token(conn, &token))
            .await?;
    }
    Ok(HttpResponse::Ok()
        .insert_header((
            header::SET_COOKIE,
            session::cookie::clear_session(&state.settings.auth),
        ))
        .json(Success { success: true }))
}
