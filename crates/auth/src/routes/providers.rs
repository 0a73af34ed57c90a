use actix_web::{HttpResponse, web};

use crate::answers::Providers;
use crate::state::AppState;

/// `GET /api/auth/providers`: the configured social providers.
pub async fn providers(state: web::Data<AppState>) -> HttpResponse {
    let providers = state.settings.google.iter().map(|_| "google").collect();
    HttpResponse::Ok().json(Providers { providers })
}
