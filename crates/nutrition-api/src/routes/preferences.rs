use actix_web::{HttpResponse, web};
use domain::protocol::Protocol;
use serde::{Deserialize, Serialize};
use service_kit::http::Json;
use session::CurrentUser;

use crate::error::{ApiError, invalid};
use crate::repo::Repo;
use crate::repo::profile;

#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Preferences {
    #[schema(value_type = Option<domain::protocol::Protocol>)]
    #[schema(required = true)]
    fasting_protocol: Option<String>,
    fasting_milestones: bool,
}

impl From<profile::Profile> for Preferences {
    fn from(p: profile::Profile) -> Self {
        Self {
            fasting_protocol: p.fasting_protocol,
            fasting_milestones: p.fasting_milestones,
        }
    }
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PatchPreferences {
    /// `null` clears the preferred protocol.
    #[serde(default, deserialize_with = "service_kit::http::double_option")]
    #[schema(value_type = Option<domain::protocol::Protocol>)]
    fasting_protocol: Option<Option<String>>,
    fasting_milestones: Option<bool>,
}

/// `GET /me/preferences`.
pub async fn get(me: CurrentUser, repo: web::Data<Repo>) -> Result<HttpResponse, ApiError> {
    let user_id = me.id();
    let p = profile::get(&repo, user_id).await?;
    Ok(HttpResponse::Ok().json(Preferences::from(p)))
}

/// `PATCH /me/preferences`: sets what is given; `fastingProtocol: null` clears the protocol.
pub async fn patch(
    me: CurrentUser,
    repo: web::Data<Repo>,
    body: Json<PatchPreferences>,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    if let Some(Some(p)) = &body.fasting_protocol {
        p.parse::<Protocol>()
            .map_err(|e| invalid("fastingProtocol", e))?;
    }
    let user_id = me.id();
    let p = profile::set_preferences(
        &repo,
        user_id,
        body.fasting_protocol,
        body.fasting_milestones,
    )
    .await?;
    Ok(HttpResponse::Ok().json(Preferences::from(p)))
}
