use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use session::MaybeSession;

use crate::answers::SessionAndUser;
use crate::state::AppState;

/// `GET /api/auth/get-session`: `{session, user}`, or the literal `null` without a valid session.
/// The rolling refresh happens in the extractor; its cookie is re-sent by the middleware. A
/// session cookie that no longer opens a session is cleared, so that a shared browser does not
/// keep a dead credential around.
pub async fn get_session(
    req: HttpRequest,
    state: web::Data<AppState>,
    current: MaybeSession,
) -> HttpResponse {
    match current.0 {
        Some(v) => HttpResponse::Ok().json(SessionAndUser {
            session: &v.session,
            user: &v.user,
        }),
        None => {
            let mut answer = HttpResponse::Ok();
            let cookies = session::guard::cookie_header(&req);
            if session::cookie::token_from_header(&state.settings.auth, &cookies).is_some() {
                answer.insert_header((
                    header::SET_COOKIE,
                    session::cookie::clear_session(&state.settings.auth),
                ));
            }
            answer.json(serde_json::Value::Null)
        }
    }
}
