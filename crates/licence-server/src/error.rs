//! The one error type of the HTTP handlers: every failure a client can cause maps to a stable
//! status and code; everything else is an opaque 500 whose cause goes to the log only.

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, ResponseError};
use service_kit::http::RequestError;

use crate::wire::UsageReport;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    Validation(String),
    #[error("the token is missing, malformed, expired or not signed by a known key")]
    InvalidToken,
    #[error("no licence has this key")]
    LicenceNotFound,
    #[error("the licence does not grant access")]
    LicenceInactive,
    #[error("this installation is not activated for the licence")]
    InstanceNotActive,
    #[error("the licence is already activated on {limit} installations")]
    ActivationLimitReached { limit: u32 },
    #[error("this installation is not activated for the licence")]
    InstanceNotFound,
    #[error("the download address is invalid or has expired")]
    InvalidDownloadSignature,
    #[error("the webhook signature does not match the body")]
    InvalidWebhookSignature,
    #[error("no such file")]
    FileNotFound,
    #[error("request body is larger than {0} bytes")]
    PayloadTooLarge(usize),
    #[error("the requested range lies outside the file")]
    RangeNotSatisfiable { size: u64 },
    #[error("the daily quota of the plan is used up")]
    QuotaExceeded(UsageReport),
    #[error("the release description is not available")]
    ReleasesUnavailable(#[source] anyhow::Error),
    #[error("the database cannot be reached")]
    DatabaseUnavailable(String),
    #[error("not found")]
    NotFound,
    #[error("too many requests from this address; try again later")]
    RateLimited { retry_after_secs: u64 },
    #[error("the licence was deactivated too often in the last 30 days")]
    DeactivationLimitReached { retry_after_secs: u64 },
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

impl ApiError {
    pub fn internal(err: impl Into<anyhow::Error>) -> Self {
        Self::Internal(err.into())
    }

    fn code(&self) -> &'static str {
        match self {
            Self::Validation(_) => "VALIDATION_ERROR",
            Self::InvalidToken => "INVALID_TOKEN",
            Self::LicenceNotFound => "LICENSE_NOT_FOUND",
            Self::LicenceInactive => "LICENSE_INACTIVE",
            Self::InstanceNotActive => "INSTANCE_NOT_ACTIVE",
            Self::ActivationLimitReached { .. } => "ACTIVATION_LIMIT_REACHED",
            Self::InstanceNotFound => "INSTANCE_NOT_FOUND",
            Self::InvalidDownloadSignature | Self::InvalidWebhookSignature => "INVALID_SIGNATURE",
            Self::FileNotFound | Self::NotFound => "NOT_FOUND",
            Self::RangeNotSatisfiable { .. } => "RANGE_NOT_SATISFIABLE",
            Self::PayloadTooLarge(_) => "PAYLOAD_TOO_LARGE",
            Self::QuotaExceeded(_) => "DAILY_QUOTA_EXCEEDED",
            Self::ReleasesUnavailable(_) => "RELEASES_UNAVAILABLE",
            Self::DatabaseUnavailable(_) => "DATABASE_UNAVAILABLE",
            Self::Internal(_) => "INTERNAL_ERROR",
            Self::RateLimited { .. } => "RATE_LIMITED",
            Self::DeactivationLimitReached { .. } => "DEACTIVATION_LIMIT_REACHED",
        }
    }
}

service_kit::from_db_error!(ApiError, ApiError::DatabaseUnavailable);

impl From<diesel::result::Error> for ApiError {
    fn from(err: diesel::result::Error) -> Self {
        match err {
            diesel::result::Error::NotFound => Self::NotFound,
            // The connection has been discarded, or the database refused the statement (a
            // deadlock, a lock wait that timed out): the next attempt may well succeed.
            e @ diesel::result::Error::DatabaseError(..) => {
                Self::DatabaseUnavailable(e.to_string())
            }
            other => Self::internal(other),
        }
    }
}

impl From<RequestError> for ApiError {
    fn from(err: RequestError) -> Self {
        Self::Validation(err.to_string())
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            Self::Validation(_) => StatusCode::BAD_REQUEST,
            Self::InvalidToken | Self::InvalidWebhookSignature => StatusCode::UNAUTHORIZED,
            Self::LicenceInactive | Self::InstanceNotActive | Self::InvalidDownloadSignature => {
                StatusCode::FORBIDDEN
            }
            Self::LicenceNotFound
            | Self::InstanceNotFound
            | Self::FileNotFound
            | Self::NotFound => StatusCode::NOT_FOUND,
            Self::ActivationLimitReached { .. } => StatusCode::CONFLICT,
            Self::RangeNotSatisfiable { .. } => StatusCode::RANGE_NOT_SATISFIABLE,
            Self::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::QuotaExceeded(_)
            | Self::RateLimited { .. }
            | Self::DeactivationLimitReached { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::ReleasesUnavailable(_) | Self::DatabaseUnavailable(_) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let status = self.status_code();
        let message = match self {
            Self::Internal(cause) => {
                tracing::error!(error = format!("{cause:#}"), "request failed");
                "something went wrong on our side".to_owned()
            }
            Self::ReleasesUnavailable(cause) => {
                tracing::error!(error = format!("{cause:#}"), "release manifest unusable");
                self.to_string()
            }
            Self::DatabaseUnavailable(cause) => {
                tracing::warn!(%cause, "database unavailable");
                self.to_string()
            }
            other => other.to_string(),
        };
        let mut body = serde_json::json!({ "code": self.code(), "message": message });
        match self {
            // The desktop app reads `valid` on every answer of validate.
            Self::LicenceInactive | Self::InstanceNotActive => {
                body["valid"] = serde_json::Value::Bool(false);
            }
            Self::QuotaExceeded(report) => {
                if let (Some(obj), Ok(serde_json::Value::Object(extra))) =
                    (body.as_object_mut(), serde_json::to_value(report))
                {
                    obj.extend(extra);
                }
            }
            _ => {}
        }
        let mut resp = HttpResponse::build(status).json(body);
        let headers = resp.headers_mut();
        match self {
            Self::QuotaExceeded(report) => {
                if let Ok(v) = HeaderValue::from_str(&report.retry_after_secs().to_string()) {
                    headers.insert(header::RETRY_AFTER, v);
                }
            }
            Self::RateLimited { retry_after_secs }
            | Self::DeactivationLimitReached { retry_after_secs } => {
                if let Ok(v) = HeaderValue::from_str(&retry_after_secs.to_string()) {
                    headers.insert(header::RETRY_AFTER, v);
                }
            }
            Self::RangeNotSatisfiable { size } => {
                if let Ok(v) = HeaderValue::from_str(&format!("bytes */{size}")) {
                    headers.insert(header::CONTENT_RANGE, v);
                }
            }
            Self::DatabaseUnavailable(_) | Self::ReleasesUnavailable(_) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            }
            _ => {}
        }
        resp
    }
}
