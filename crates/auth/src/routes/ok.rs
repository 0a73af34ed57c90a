use actix_web::HttpResponse;

/// `GET /api/auth/ok`: better-auth's liveness route, which its client may call.
pub async fn ok() -> HttpResponse {
    HttpResponse::Ok().json(crate::answers::Ok { ok: true })
}
