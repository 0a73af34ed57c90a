//! The HTTP routes of contract section 4, one file per action, and what they share: the
//! application state, the optional JSON body, the Bearer token and the licence checks behind it.

pub(crate) mod activate;
pub(crate) mod deactivate;
pub(crate) mod download;
pub(crate) mod latest;
mod usage_consume;
pub(crate) mod usage_status;
pub(crate) mod validate;
pub(crate) mod webhook;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use actix_web::dev::Payload;
use actix_web::http::header;
use actix_web::{FromRequest, HttpRequest, web};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use service_kit::http::{DEFAULT_BODY_LIMIT, RequestError, parse_json, read_body};

use crate::clock::SharedClock;
use crate::db::MyPool;
use crate::error::ApiError;
use crate::mail::MailWaker;
use crate::releases::Builds;
use crate::repo::activations::{self, ActivationRow};
use crate::repo::licences::{self, LicenceRow};
use crate::settings::Settings;
use crate::tokens::{Claims, KeyRing};
use crate::wire::{IssuedToken, LicenceView};

/// What handlers share.
#[derive(Clone)]
pub struct AppState {
    pub settings: Arc<Settings>,
    pub pool: MyPool,
    pub clock: SharedClock,
    pub keys: Arc<KeyRing>,
    pub builds: Builds,
    pub mail: MailWaker,
}

pub fn config(cfg: &mut web::ServiceConfig) {
    cfg.route("/api/license/activate", web::post().to(activate::activate))
        .route("/api/license/validate", web::post().to(validate::validate))
        .route(
            "/api/license/deactivate",
            web::post().to(deactivate::deactivate),
        )
        .route("/api/latest", web::get().to(latest::latest))
        .route("/api/download", web::get().to(download::download))
        .route("/api/download", web::head().to(download::download))
        .route(
            "/api/webhook/lemonsqueezy",
            web::post().to(webhook::lemonsqueezy),
        )
        .route("/api/usage/consume", web::post().to(usage_consume::consume))
        .route("/api/usage/status", web::get().to(usage_status::status));
}

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
    type Future = Pin<Box<dyn Future<Output = Result<Self, Self::Error>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let req = req.clone();
        let mut payload = payload.take();
        Box::pin(async move {
            read_body(&req, &mut payload, DEFAULT_BODY_LIMIT)
                .await
                .map(Self)
        })
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
    pub fn checked(&self) -> Result<(String, String), ApiError> {
        Ok((
            licence_key_field(&self.license_key)?,
            instance_field(&self.instance_id)?,
        ))
    }
}

pub fn licence_key_field(raw: &str) -> Result<String, ApiError> {
    let key = domain::licensing::normalise_key(raw);
    if key.is_empty() || key.len() > 64 {
        return Err(ApiError::Validation(
            "licenseKey: must be a licence key of 1 to 64 characters".into(),
        ));
    }
    Ok(key)
}

pub fn instance_field(raw: &str) -> Result<String, ApiError> {
    let id = raw.trim();
    if id.is_empty() || id.len() > 191 || id.chars().any(char::is_control) {
        return Err(ApiError::Validation(
            "instanceId: must be 1 to 191 printable characters".into(),
        ));
    }
    Ok(id.to_owned())
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
pub fn claims(state: &AppState, req: &HttpRequest) -> Result<Claims, ApiError> {
    let token = bearer(req)?.ok_or(ApiError::InvalidToken)?;
    state.keys.verify(token, state.clock.now()).map_err(|err| {
        tracing::debug!(%err, "token refused");
        ApiError::InvalidToken
    })
}

/// A licence and one of its activations, both checked: the licence grants access now and the
/// installation still holds its slot.
pub struct Authorised {
    pub licence: LicenceRow,
    pub activation: ActivationRow,
}

/// Checks in one blocking call what a token-bearing request needs: the licence of `claims`
/// (gone: 401), its access (403 `LICENSE_INACTIVE`), the installation (403 `INSTANCE_NOT_ACTIVE`).
pub async fn authorise(state: &AppState, claims: Claims) -> Result<Authorised, ApiError> {
    let now = state.clock.now();
    service_kit::db::run(&state.pool, move |conn| {
        let licence = licences::find_by_id(conn, &claims.sub)?.ok_or(ApiError::InvalidToken)?;
        check(conn, licence, &claims.iid, now)
    })
    .await
}

/// The same checks for a licence found by key.
pub fn check(
    conn: &mut diesel::MysqlConnection,
    licence: LicenceRow,
    instance_id: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Authorised, ApiError> {
    if !licence.has_access(now) {
        return Err(ApiError::LicenceInactive);
    }
    let activation =
        activations::find(conn, &licence.id, instance_id)?.ok_or(ApiError::InstanceNotActive)?;
    Ok(Authorised {
        licence,
        activation,
    })
}

/// A fresh token for an activation.
pub fn issue(
    state: &AppState,
    licence: &LicenceRow,
    instance_id: &str,
) -> Result<IssuedToken, ApiError> {
    let (token, expires) = state
        .keys
        .issue(
            &licence.id,
            instance_id,
            licence.plan().as_str(),
            state.clock.now(),
        )
        .map_err(ApiError::internal)?;
    Ok(IssuedToken {
        token,
        token_expires_at: crate::clock::rfc3339(expires),
    })
}

/// The `license` object with the current activation count.
pub fn licence_view(
    conn: &mut diesel::MysqlConnection,
    licence: &LicenceRow,
) -> Result<LicenceView, ApiError> {
    Ok(LicenceView::new(
        licence,
        activations::count(conn, &licence.id)?,
    ))
}
