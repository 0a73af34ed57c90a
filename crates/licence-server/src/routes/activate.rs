use actix_web::web;
use serde::{Deserialize, Serialize};
use service_kit::http::Json;

use actix_web::HttpRequest;

use super::limits::{self, Bucket};
use super::{AppState, instance_field, issue, issue_lease, licence_key_field};
use crate::error::ApiError;
use crate::repo::Db;
use crate::repo::activations::{self, Activated};
use crate::wire::{IssuedLease, IssuedToken, LicenceView};

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = Activate)]
pub struct Body {
    #[serde(alias = "license_key")]
    license_key: String,
    #[serde(alias = "instance_id")]
    instance_id: String,
    #[serde(default, alias = "instance_name")]
    instance_name: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Activated)]
pub struct Answer {
    activated: bool,
    #[serde(flatten)]
    token: IssuedToken,
    #[serde(flatten)]
    lease: IssuedLease,
    instance: Instance,
    license: LicenceView,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct Instance {
    id: String,
    #[schema(required = true)]
    name: Option<String>,
}

/// `POST /api/license/activate`
#[tracing::instrument(level = "debug", skip_all)]
pub async fn activate(
    state: web::Data<AppState>,
    db: web::Data<Db>,
    req: HttpRequest,
    body: Json<Body>,
) -> Result<web::Json<Answer>, ApiError> {
    limits::check(&state, &db, &req, Bucket::Licence).await?;
    let body = body.into_inner();
    let key = licence_key_field(&body.license_key)?;
    let instance_id = instance_field(&body.instance_id)?;
    let name = match body.instance_name.as_deref().map(str::trim) {
        Some(n) if n.chars().count() > 255 || n.chars().any(char::is_control) => {
            return Err(ApiError::Validation(
                "instanceName: must be at most 255 printable characters".into(),
            ));
        }
        Some("") | None => None,
        Some(n) => Some(n.to_owned()),
    };
    let now = state.clock.now();
    let stale_after = chrono::Duration::days(i64::from(state.settings.stale_days));
    let activated = activations::activate(
        &db,
        key.as_str(),
        instance_id.as_str(),
        name.as_deref(),
        now,
        stale_after,
    )
    .await?;
    let (licence, activation, usage) = match activated {
        Activated::Done {
            licence,
            activation,
            usage,
        } => (licence.access(), activation, usage),
        Activated::LicenceNotFound => return Err(ApiError::LicenceNotFound),
        Activated::Inactive => return Err(ApiError::LicenceInactive),
        Activated::LimitReached => {
            return Err(ApiError::ActivationLimitReached {
                limit: domain::licensing::ACTIVATION_LIMIT,
            });
        }
    };
    let token = issue(&state, &licence, instance_id.as_str())?;
    let lease = issue_lease(&state, &licence, instance_id.as_str())?;
    Ok(web::Json(Answer {
        activated: true,
        token,
        lease,
        instance: Instance {
            id: activation.instance_id,
            name: activation.instance_name,
        },
        license: LicenceView::new(&licence, usage),
    }))
}
