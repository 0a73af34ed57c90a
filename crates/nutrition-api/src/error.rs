//! Every error nutrition-api answers, with its status and contract code in one place.

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::{HttpResponse, ResponseError};
use service_kit::http::error_response;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    Validation(String),
    #[error("not found")]
    NotFound,
    /// 409 with a specific code (`FAST_ALREADY_RUNNING`, `FAST_NOT_RUNNING`).
    #[error("{message}")]
    Conflict {
        code: &'static str,
        message: &'static str,
    },
    /// 403 with a specific code (`SESSION_NOT_FRESH`).
    #[error("{message}")]
    Forbidden {
        code: &'static str,
        message: &'static str,
    },
    /// 422 with a specific code (`FAST_TOO_SHORT`).
    #[error("{message}")]
    Unprocessable {
        code: &'static str,
        message: &'static str,
    },
    /// 429 `RATE_LIMITED` with `Retry-After` (and `X-Retry-After`, which better-auth's client
    /// reads) in whole seconds.
    #[error("{message}")]
    RateLimited { message: String, retry_after: u64 },
    #[error("{0}")]
    TooLarge(String),
    #[error("request body must be application/json")]
    UnsupportedMediaType,
    /// 415 for a route whose body is not JSON.
    #[error("request body must be {0}")]
    UnsupportedMediaTypeOf(&'static str),
    #[error("the service is temporarily unavailable")]
    Unavailable,
    #[error("internal error: {0}")]
    Internal(String),
}

impl ApiError {
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        Self::Internal(cause.to_string())
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            Self::Validation(_) => StatusCode::BAD_REQUEST,
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::Conflict { .. } => StatusCode::CONFLICT,
            Self::Forbidden { .. } => StatusCode::FORBIDDEN,
            Self::Unprocessable { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            Self::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType | Self::UnsupportedMediaTypeOf(_) => {
                StatusCode::UNSUPPORTED_MEDIA_TYPE
            }
            Self::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let (code, message) = match self {
            Self::Validation(m) => ("VALIDATION_ERROR", m.clone()),
            Self::NotFound => ("NOT_FOUND", "no such resource".to_owned()),
            Self::Conflict { code, message }
            | Self::Forbidden { code, message }
            | Self::Unprocessable { code, message } => (*code, (*message).to_owned()),
            Self::RateLimited {
                message,
                retry_after,
            } => {
                let mut resp = error_response(self.status_code(), "RATE_LIMITED", message.clone());
                let value = HeaderValue::from(*retry_after);
                resp.headers_mut()
                    .insert(header::RETRY_AFTER, value.clone());
                resp.headers_mut()
                    .insert(HeaderName::from_static("x-retry-after"), value);
                return resp;
            }
            Self::TooLarge(m) => ("PAYLOAD_TOO_LARGE", m.clone()),
            Self::UnsupportedMediaType | Self::UnsupportedMediaTypeOf(_) => {
                ("UNSUPPORTED_MEDIA_TYPE", self.to_string())
            }
            Self::Unavailable => ("SERVICE_UNAVAILABLE", "please try again shortly".to_owned()),
            Self::Internal(cause) => {
                tracing::error!(%cause, "request failed");
                ("INTERNAL_ERROR", "something went wrong".to_owned())
            }
        };
        error_response(self.status_code(), code, message)
    }
}

service_kit::from_db_error!(ApiError, |_| ApiError::Unavailable);

impl From<diesel::result::Error> for ApiError {
    fn from(e: diesel::result::Error) -> Self {
        match e {
            diesel::result::Error::NotFound => Self::NotFound,
            // The connection has been discarded; the next attempt gets a working one.
            e if service_kit::db::is_connection_lost(&e) => {
                tracing::warn!(error = %e, "database connection lost");
                Self::Unavailable
            }
            other => Self::internal(other),
        }
    }
}

impl From<service_kit::http::RequestError> for ApiError {
    fn from(e: service_kit::http::RequestError) -> Self {
        use service_kit::http::RequestError as R;
        match e {
            R::Validation(m) => Self::Validation(m),
            R::TooLarge(_) => Self::TooLarge(e.to_string()),
            R::UnsupportedMediaType => Self::UnsupportedMediaType,
        }
    }
}

/// `field: rule`, the message of a 400 that names the field.
pub fn invalid(field: &str, rule: impl std::fmt::Display) -> ApiError {
    ApiError::Validation(format!("{field}: {rule}"))
}
