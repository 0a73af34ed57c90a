use actix_web::HttpResponse;
use session::MaybeSession;

use crate::answers::SessionAndUser;

/// `GET /api/auth/get-session`: `{session, user}`, or the literal `null` without a valid session.
/// The rolling refresh happens in the extractor; its cookie is re-sent by the middleware.
pub async fn get_session(current: MaybeSession) -> HttpResponse {
    match current.0 {
        Some(v) => HttpResponse::Ok().json(SessionAndUser {
            session: &v.session,
            user: &v.user,
        }),
        None => HttpResponse::Ok().json(serde_json::Value::Null),
    }
}
