//! What handlers take from a request before they run: the optional JSON body, the licence key
//! and instance of a body, and the Bearer token with its verified claims.

use std::future::{Ready, ready};

use actix_web::dev::Payload;
use actix_web::http::header;
use actix_web::{FromRequest, HttpRequest, web};
use domain::licensing::{InstanceId, LicenceKey};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use service_kit::http::{BodyFuture, DEFAULT_BODY_LIMIT, RequestError, from_body, parse_json};

use super::AppState;
use crate::error::ApiError;
use crate::tokens;

/// A body read but not yet parsed: routes that accept a Bearer token or a JSON body look at the
/// body only when there is no token, so a client sending `{}` along with its token is fine.
pub struct OptionalBody(web::Bytes);

impl OptionalBody {
    /// `None` for an empty body; otherwise the parsed JSON or a 400 naming the field.
    pub fn json<T: DeserializeOwned>(&self) -> Result<Option<T>, ApiError> {
        if self.0.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        Ok(Some(parse_json(&self.0)?))
    }
}

impl FromRequest for OptionalBody {
    type Error = RequestError;
    type Future = BodyFuture<Self, Self::Error>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        from_body(req, payload, DEFAULT_BODY_LIMIT, |_, bytes| Ok(Self(bytes)))
    }
}

/// `{licenseKey, instanceId}`, also spelled `license_key`, `instance_id`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KeyAndInstance {
    #[serde(alias = "license_key")]
    pub license_key: String,
    #[serde(alias = "instance_id")]
    pub instance_id: String,
}

impl KeyAndInstance {
    /// The normalised key and the instance id, or a 400 naming the field.
    pub fn checked(&self) -> Result<(LicenceKey, InstanceId), ApiError> {
        Ok((
            licence_key_field(&self.license_key)?,
            instance_field(&self.instance_id)?,
        ))
    }
}

pub fn licence_key_field(raw: &str) -> Result<LicenceKey, ApiError> {
    LicenceKey::parse(raw).map_err(|e| ApiError::Validation(format!("licenseKey: {e}")))
}

pub fn instance_field(raw: &str) -> Result<InstanceId, ApiError> {
    InstanceId::parse(raw).map_err(|e| ApiError::Validation(format!("instanceId: {e}")))
}

/// The Bearer token of the request: `Ok(None)` without an Authorization header, 401 for any
/// other scheme or an empty token.
pub fn bearer(req: &HttpRequest) -> Result<Option<&str>, ApiError> {
    let Some(value) = req.headers().get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let value = value.to_str().map_err(|_| ApiError::InvalidToken)?.trim();
    let (scheme, token) = value.split_once(' ').ok_or(ApiError::InvalidToken)?;
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return Err(ApiError::InvalidToken);
    }
    Ok(Some(token))
}

/// The verified claims of a Bearer token; 401 for a missing or bad one.
pub fn claims(state: &AppState, req: &HttpRequest) -> Result<tokens::Claims, ApiError> {
    let token = bearer(req)?.ok_or(ApiError::InvalidToken)?;
    state.keys.verify(token, state.clock.now()).map_err(|err| {
        tracing::debug!(%err, "token refused");
        ApiError::InvalidToken
    })
}

fn state_of(req: &HttpRequest) -> Result<&AppState, ApiError> {
    req.app_data::<web::Data<AppState>>()
        .map(|d| d.get_ref())
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("application state missing")))
}

/// A handler argument that requires a valid Bearer token: its claims, or 401 `INVALID_TOKEN`
/// before the handler runs.
pub struct Claims(pub tokens::Claims);

impl FromRequest for Claims {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(state_of(req).and_then(|state| claims(state, req)).map(Self))
    }
}

/// A handler argument for routes where the token is optional: `None` without an Authorization
/// header, the claims of a valid token, 401 for a token sent but not valid.
pub struct MaybeClaims(pub Option<tokens::Claims>);

impl FromRequest for MaybeClaims {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(state_of(req).and_then(|state| match bearer(req)? {
            None => Ok(Self(None)),
            Some(_) => claims(state, req).map(|c| Self(Some(c))),
        }))
    }
}
