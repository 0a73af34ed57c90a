use actix_web::{HttpRequest, web};
use serde::Serialize;

use super::{AppState, KeyAndInstance, OptionalBody, bearer, claims, licence_view};
use crate::error::ApiError;
use crate::repo::{activations, licences};
use crate::wire::LicenceView;

#[derive(Serialize)]
pub struct Answer {
    deactivated: bool,
    license: LicenceView,
}

/// `POST /api/license/deactivate`: frees the installation's slot. Works whatever the licence's
/// state, so that a customer can always move a licence off a machine.
#[tracing::instrument(skip_all)]
pub async fn deactivate(
    state: web::Data<AppState>,
    req: HttpRequest,
    body: OptionalBody,
) -> Result<web::Json<Answer>, ApiError> {
    enum By {
        Id(String),
        Key(String),
    }
    let (by, instance_id) = if bearer(&req)?.is_some() {
        let c = claims(&state, &req)?;
        (By::Id(c.sub), c.iid)
    } else {
        let body: KeyAndInstance = body.json()?.ok_or(ApiError::InvalidToken)?;
        let (key, instance_id) = body.checked()?;
        (By::Key(key.as_str().to_owned()), instance_id.into_string())
    };
    let license = service_kit::db::run(&state.pool, move |conn| {
        let licence = match by {
            By::Id(id) => licences::find_by_id(conn, &id)?.ok_or(ApiError::InvalidToken)?,
            // An unknown key frees nothing, like an unknown instance: both answer the same 404.
            By::Key(key) => licences::find_by_key(conn, &key)?.ok_or(ApiError::InstanceNotFound)?,
        };
        if activations::delete(conn, &licence.id, &instance_id)? == 0 {
            return Err(ApiError::InstanceNotFound);
        }
        licence_view(conn, &licence)
    })
    .await?;
    Ok(web::Json(Answer {
        deactivated: true,
        license,
    }))
}
