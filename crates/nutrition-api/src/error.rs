//! Every error nutrition-api answers, with its status and contract code in one place.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use nutrition_store::DbError;
use service_kit::http::error_response;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    Validation(String),
    #[error("not found")]
    NotFound,
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
            Self::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let (code, message) = match self {
            Self::Validation(m) => ("VALIDATION_ERROR", m.clone()),
            Self::NotFound => ("NOT_FOUND", "no such resource".to_owned()),
            Self::Unavailable => ("SERVICE_UNAVAILABLE", "please try again shortly".to_owned()),
            Self::Internal(cause) => {
                tracing::error!(%cause, "request failed");
                ("INTERNAL_ERROR", "something went wrong".to_owned())
            }
        };
        error_response(self.status_code(), code, message)
    }
}

impl From<DbError> for ApiError {
    fn from(e: DbError) -> Self {
        match e {
            DbError::Unavailable(_) => Self::Unavailable,
            DbError::Query(diesel::result::Error::NotFound) => Self::NotFound,
            other => Self::internal(other),
        }
    }
}

impl From<diesel::result::Error> for ApiError {
    fn from(e: diesel::result::Error) -> Self {
        match e {
            diesel::result::Error::NotFound => Self::NotFound,
            other => Self::internal(other),
        }
    }
}
