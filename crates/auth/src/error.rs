//! Every error the auth API answers, with its status and contract code in one place.

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::{HttpResponse, ResponseError};
use service_kit::http::error_response;

use crate::codes;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// Bad input: 400 with a specific code (`PASSWORD_TOO_SHORT`, `INVALID_EMAIL`, …).
    #[error("{message}")]
    BadRequest { code: &'static str, message: String },
    #[error("User already exists. Use another email.")]
    UserExists,
    #[error("Invalid email or password")]
    InvalidCredentials,
    /// 429: the budget named by `scope` (`address`, `email`, `user`, `all`, `address+email`,
    /// `email-failures`) allows `max` per `window_secs`; the body names it.
    #[error("Too many requests. Please try again later.")]
    RateLimited {
        retry_after: u64,
        scope: &'static str,
        max: u32,
        window_secs: u32,
    },
    #[error("Provider not found")]
    ProviderNotFound,
    #[error("Invalid callbackURL")]
    InvalidCallbackUrl,
    /// 403 with one of better-auth's codes (`INVALID_ORIGIN`, `EMAIL_NOT_VERIFIED`, …).
    #[error("{}", codes::message(.0))]
    Forbidden(&'static str),
    /// 401: `UNAUTHORIZED` without a session, or a code such as `INVALID_TOKEN`.
    #[error("{}", if *.0 == "UNAUTHORIZED" { "Unauthorized" } else { codes::message(.0) })]
    Unauthorized(&'static str),
    /// 429 with one of better-auth's codes (`ACCOUNT_TEMPORARILY_LOCKED`): refused for a while
    /// whoever asks, unlike a client's rate limit.
    #[error("{}", codes::message(.0))]
    Locked(&'static str),
    /// 404 with one of better-auth's codes (`PASSKEY_NOT_FOUND`).
    #[error("{}", codes::message(.0))]
    NotFound(&'static str),
    #[error("Sending e-mail isn't enabled on this server")]
    EmailDisabled,
    #[error("request body is larger than {0} bytes")]
    TooLarge(usize),
    #[error("the service is temporarily unavailable")]
    Unavailable,
    /// Every password-hashing worker is busy and the short queue is full: 503 `SERVER_BUSY`
    /// with `Retry-After`, instead of letting work and memory grow without bound.
    #[error("Too many sign-ins at this moment. Please try again in a few seconds.")]
    ServerBusy,
    #[error("internal error: {0}")]
    Internal(String),
}

impl ApiError {
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::BadRequest {
            code,
            message: message.into(),
        }
    }

    /// 400 with one of better-auth's codes and its English message.
    pub fn bad(code: &'static str) -> Self {
        Self::bad_request(code, codes::message(code))
    }

    pub fn internal(cause: impl std::fmt::Display) -> Self {
        Self::Internal(cause.to_string())
    }

    /// The contract code, also used in the `error` query parameter of the pages.
    pub fn code(&self) -> &'static str {
        match self {
            Self::BadRequest { code, .. } => code,
            Self::UserExists => "USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL",
            Self::InvalidCredentials => "INVALID_EMAIL_OR_PASSWORD",
            Self::RateLimited { .. } => "RATE_LIMITED",
            Self::ProviderNotFound => "PROVIDER_NOT_FOUND",
            Self::InvalidCallbackUrl => "INVALID_CALLBACK_URL",
            Self::Forbidden(code) => code,
            Self::Unauthorized(code) => code,
            Self::Locked(code) => code,
            Self::NotFound(code) => code,
            Self::EmailDisabled => "EMAIL_DISABLED",
            Self::TooLarge(_) => "PAYLOAD_TOO_LARGE",
            Self::Unavailable => "SERVICE_UNAVAILABLE",
            Self::ServerBusy => "SERVER_BUSY",
            Self::Internal(_) => "INTERNAL_ERROR",
        }
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            Self::BadRequest { .. } => StatusCode::BAD_REQUEST,
            Self::UserExists => StatusCode::UNPROCESSABLE_ENTITY,
            Self::InvalidCredentials => StatusCode::UNAUTHORIZED,
            Self::RateLimited { .. } | Self::Locked(_) => StatusCode::TOO_MANY_REQUESTS,
            Self::ProviderNotFound | Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::InvalidCallbackUrl | Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::EmailDisabled => StatusCode::SERVICE_UNAVAILABLE,
            Self::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Unavailable | Self::ServerBusy => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let message = match self {
            Self::Internal(cause) => {
                tracing::error!(%cause, "request failed");
                "something went wrong".to_owned()
            }
            other => other.to_string(),
        };
        let mut resp = match self {
            Self::RateLimited {
                retry_after,
                scope,
                max,
                window_secs,
            } => HttpResponse::build(self.status_code()).json(serde_json::json!({
                "code": self.code(),
                "message": message,
                "retryAfter": retry_after,
                "limit": { "scope": scope, "max": max, "windowSecs": window_secs },
            })),
            _ => error_response(self.status_code(), self.code(), message),
        };
        let retry_after = match self {
            Self::RateLimited { retry_after, .. } => Some(*retry_after),
            Self::ServerBusy => Some(crate::password::BUSY_RETRY_AFTER_SECS),
            _ => None,
        };
        if let Some(retry_after) = retry_after
            && let Ok(v) = HeaderValue::from_str(&retry_after.to_string())
        {
            // better-auth's client reads its own header name; HTTP clients read the standard one.
            resp.headers_mut()
                .insert(HeaderName::from_static("x-retry-after"), v.clone());
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
        resp
    }
}

impl From<crate::password::Busy> for ApiError {
    fn from(_: crate::password::Busy) -> Self {
        Self::ServerBusy
    }
}

service_kit::from_db_error!(ApiError, |_| ApiError::Unavailable);

impl From<diesel::result::Error> for ApiError {
    fn from(e: diesel::result::Error) -> Self {
        // The connection has been discarded; the next attempt gets a working one.
        if service_kit::db::is_connection_lost(&e) {
            return Self::Unavailable;
        }
        Self::internal(e)
    }
}

impl From<service_kit::http::RequestError> for ApiError {
    fn from(e: service_kit::http::RequestError) -> Self {
        use service_kit::http::RequestError as R;
        match e {
            R::Validation(m) => Self::bad_request("VALIDATION_ERROR", m),
            R::TooLarge(n) => Self::TooLarge(n),
            R::UnsupportedMediaType => {
                Self::bad_request("UNSUPPORTED_MEDIA_TYPE", "send JSON or a form")
            }
        }
    }
}
