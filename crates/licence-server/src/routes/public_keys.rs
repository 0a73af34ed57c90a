use actix_web::web;
use serde::Serialize;

use super::AppState;
use crate::lease::PublicKey;

#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = PublicKeys)]
pub struct Answer {
    keys: Vec<PublicKey>,
}

/// `GET /api/license/public-keys`: every key of the signing ring, the signing one first.
pub async fn public_keys(state: web::Data<AppState>) -> web::Json<Answer> {
    web::Json(Answer {
        keys: state.signing.public_keys(),
    })
}
