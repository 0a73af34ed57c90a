use actix_web::{HttpRequest, web};
use serde::{Deserialize, Serialize};

use super::limits::{self, Bucket};
use super::{
    AppState, OptionalBody, bearer, claims, instance_field, licence_key_field, licence_view,
};
use crate::error::ApiError;
use crate::repo::deactivations::{self, Deactivated};
use crate::repo::{Db, LicenceId, licences};
use crate::wire::LicenceView;

#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Deactivated)]
pub struct Answer {
    deactivated: bool,
    license: LicenceView,
}

/// `{licenseKey, instanceId}` without a token; with one, `{instanceId?}` names another
/// installation of the token's licence (the token's own when absent).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = Deactivate)]
pub(crate) struct Body {
    #[serde(default, alias = "license_key")]
    license_key: Option<String>,
    #[serde(default, alias = "instance_id")]
    instance_id: Option<String>,
}

/// `POST /api/license/deactivate`: frees an installation's seat. Works whatever the licence's
/// state, so that a customer can always move a licence off a machine; at most
/// `LICENCE_DEACTIVATIONS_PER_30_DAYS` times per licence in any 30 days.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn deactivate(
    state: web::Data<AppState>,
    db: web::Data<Db>,
    req: HttpRequest,
    body: OptionalBody,
) -> Result<web::Json<Answer>, ApiError> {
    limits::check(&state, &db, &req, Bucket::Licence).await?;
    enum By {
        /// Licence id, the caller's installation.
        Token(LicenceId, String),
        Key(String),
    }
    let body: Option<Body> = body.json()?;
    let (by, instance_id) = if bearer(&req)?.is_some() {
        let c = claims(&state, &req)?;
        let target = match body.as_ref().and_then(|b| b.instance_id.as_deref()) {
            Some(raw) => instance_field(raw)?.into_string(),
            None => c.iid.clone(),
        };
        (By::Token(c.sub, c.iid), target)
    } else {
        let body = body.ok_or(ApiError::InvalidToken)?;
        let key = licence_key_field(body.license_key.as_deref().ok_or_else(|| {
            ApiError::Validation("licenseKey: missing field `licenseKey`".into())
        })?)?;
        let instance = instance_field(body.instance_id.as_deref().ok_or_else(|| {
            ApiError::Validation("instanceId: missing field `instanceId`".into())
        })?)?;
        (By::Key(key.as_str().to_owned()), instance.into_string())
    };
    let max = state.settings.deactivations_per_30_days;
    let now = state.clock.now();
    let (licence_id, caller) = match by {
        By::Token(id, caller) => (id, Some(caller)),
        By::Key(key) => (
            licences::by_key(&db, &key)
                .await?
                .ok_or(ApiError::InstanceNotFound)?
                .id,
            None,
        ),
    };
    let outcome =
        deactivations::deactivate(&db, &licence_id, &instance_id, caller.as_deref(), max, now)
            .await?;
    let license = match outcome {
        Deactivated::Done(licence) => licence_view(&db, &licence.access()).await?,
        Deactivated::NotFound => return Err(ApiError::InstanceNotFound),
        Deactivated::CallerNotActive => return Err(ApiError::InstanceNotActive),
        Deactivated::Limited { retry_after_secs } => {
            return Err(ApiError::DeactivationLimitReached { retry_after_secs });
        }
    };
    Ok(web::Json(Answer {
        deactivated: true,
        license,
    }))
}
