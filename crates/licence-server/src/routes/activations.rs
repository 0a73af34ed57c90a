use actix_web::web;
use serde::Serialize;

use super::{AppState, Claims, authorise};
use crate::clock::rfc3339;
use crate::error::ApiError;
use crate::repo::{Db, activations};

#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Activations)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    activations: Vec<Activation>,
    /// The whole address of the licence's Sparkle appcast (contract section 12).
    sparkle_feed: String,
}

#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Activation {
    instance_id: String,
    #[schema(required = true)]
    name: Option<String>,
    #[schema(format = DateTime)]
    created_at: String,
    #[schema(format = DateTime)]
    last_validated_at: String,
    current: bool,
}

/// `GET /api/license/activations`: the installations holding a seat of the token's licence,
/// oldest first, the asking one marked `current`, and the licence's Sparkle feed.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn list(
    state: web::Data<AppState>,
    db: web::Data<Db>,
    Claims(claims): Claims,
) -> Result<web::Json<Answer>, ApiError> {
    let auth = authorise(&state, &db, claims).await?;
    let current = auth.activation.instance_id.clone();
    let rows = activations::list(&db, &auth.licence.id).await?;
    let sparkle_feed = super::updates::sparkle_feed(&state, &db, &auth.licence.id).await?;
    Ok(web::Json(Answer {
        sparkle_feed,
        activations: rows
            .into_iter()
            .map(|a| Activation {
                current: a.instance_id == current,
                instance_id: a.instance_id,
                name: a.instance_name,
                created_at: rfc3339(a.created_at.and_utc()),
                last_validated_at: rfc3339(a.last_validated_at.and_utc()),
            })
            .collect(),
    }))
}
