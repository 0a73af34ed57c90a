use actix_web::{HttpResponse, web};

use crate::state::AppState;

/// `GET /api/auth/providers`: the configured social providers.
pub async fn providers(state: web::Data<AppState>) -> HttpResponse {
    let list: Vec<&str> = state.settings.google.iter().map(|_| "google").collect();
    HttpResponse::Ok().json(serde_json::json!({ "providers": list }))
}
