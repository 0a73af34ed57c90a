use actix_web::HttpResponse;
use serde::Serialize;
use session::{MaybeSession, Session, User};

/// `{session, user}`, serialised straight from the structs with no intermediate JSON tree: every
/// start and focus of the app asks for it.
#[derive(Serialize)]
struct Answer<'a> {
    session: &'a Session,
    user: &'a User,
}

/// `GET /api/auth/get-session`: `{session, user}`, or the literal `null` without a valid session.
/// The rolling refresh happens in the extractor; its cookie is re-sent by the middleware.
pub async fn get_session(current: MaybeSession) -> HttpResponse {
    match current.0 {
        Some(v) => HttpResponse::Ok().json(Answer {
            session: &v.session,
            user: &v.user,
        }),
        None => HttpResponse::Ok().json(serde_json::Value::Null),
    }
}
