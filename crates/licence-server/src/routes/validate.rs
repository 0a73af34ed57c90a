use actix_web::{HttpRequest, web};
use serde::Serialize;

use super::limits::{self, Bucket};
use super::{
    AppState, Authorised, KeyAndInstance, OptionalBody, bearer, check, claims, issue, issue_lease,
    licence_view,
};
use crate::error::ApiError;
use crate::repo::{activations, licences};
use crate::wire::{IssuedLease, IssuedToken, LicenceView};

#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Validated)]
pub struct Answer {
    valid: bool,
    #[serde(flatten)]
    token: IssuedToken,
    #[serde(flatten)]
    lease: IssuedLease,
    license: LicenceView,
}

/// Licence id and instance from a token, or key and instance from the body.
enum By {
    Token(String, String),
    Key(String, String),
}

/// `POST /api/license/validate`: by Bearer token (preferred when both are sent) or by
/// `{licenseKey, instanceId}`; answers a fresh token.
#[tracing::instrument(skip_all)]
pub async fn validate(
    state: web::Data<AppState>,
    req: HttpRequest,
    body: OptionalBody,
) -> Result<web::Json<Answer>, ApiError> {
    limits::check(&state, &req, Bucket::Licence).await?;
    let now = state.clock.now();
    // Who is asking, settled before the one database round trip below.
    let by = if bearer(&req)?.is_some() {
        let c = claims(&state, &req)?;
        By::Token(c.sub, c.iid)
    } else {
        let body: KeyAndInstance = body.json()?.ok_or(ApiError::InvalidToken)?;
        let (key, instance_id) = body.checked()?;
        By::Key(key.as_str().to_owned(), instance_id.into_string())
    };
    let (licence, instance_id, license) = service_kit::db::run(&state.pool, move |conn| {
        let (licence, instance_id) = match by {
            By::Token(id, iid) => (
                licences::find_by_id(conn, &id)?.ok_or(ApiError::InvalidToken)?,
                iid,
            ),
            By::Key(key, iid) => (
                licences::find_by_key(conn, &key)?.ok_or(ApiError::LicenceNotFound)?,
                iid,
            ),
        };
        let Authorised {
            licence,
            activation,
        } = check(conn, licence, &instance_id, now)?;
        activations::touch(conn, &activation.id, now.naive_utc())?;
        let view = licence_view(conn, &licence)?;
        Ok::<_, ApiError>((licence, activation.instance_id, view))
    })
    .await?;
    let token = issue(&state, &licence, &instance_id)?;
    let lease = issue_lease(&state, &licence, &instance_id)?;
    Ok(web::Json(Answer {
        valid: true,
        token,
        lease,
        license,
    }))
}
