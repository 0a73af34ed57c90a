//! The request guard: a handler that takes [`CurrentUser`] cannot run without a valid session.
//!
//! Verification reads the signed cookie, checks the MAC in constant time, looks the session up
//! and applies the rolling refresh. A refreshed session's cookie is re-sent by the
//! [`resend_refreshed_cookie`] middleware, because an extractor cannot touch the response.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use actix_web::body::MessageBody;
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{FromRequest, HttpMessage, HttpRequest, HttpResponse, ResponseError, web};
use chrono::Utc;
use futures_util::future::LocalBoxFuture;
use pg_store::PgPool;

use crate::cookie;
use crate::settings::AuthSettings;
use crate::store::{self, Verified};
use crate::{Session, User, UserId};

/// What the guard needs, registered as `web::Data<SessionLayer>`.
#[derive(Clone)]
pub struct SessionLayer {
    pub settings: Arc<AuthSettings>,
    pub store: SessionStore,
}

impl SessionLayer {
    /// Sessions looked up with [`store::verify`] on the blocking pool.
    pub fn with_pool(settings: Arc<AuthSettings>, pool: PgPool) -> Self {
        Self {
            settings,
            store: SessionStore::Pool(pool),
        }
    }

    /// Sessions looked up by the service's own `verify`, which runs [`store::lookup`] and
    /// [`store::plan`] on its own kind of connection.
    pub fn with_lookup(settings: Arc<AuthSettings>, verify: LookupFn) -> Self {
        Self {
            settings,
            store: SessionStore::Lookup(verify),
        }
    }
}

/// How the guard reaches the session rows.
#[derive(Clone)]
pub enum SessionStore {
    Pool(PgPool),
    Lookup(LookupFn),
}

/// A service's verification of a signed token: the request (for its per-worker state) and the
/// token; `Ok(None)` when no valid session has it.
pub type LookupFn = Arc<
    dyn Fn(&HttpRequest, String) -> LocalBoxFuture<'static, Result<Option<Verified>, SessionError>>
        + Send
        + Sync,
>;

/// The signed-in user and their session: the one extractor of every route that needs someone
/// signed in (401 `UNAUTHORIZED` otherwise).
#[derive(Debug, Clone)]
pub struct CurrentUser {
    pub user: User,
    pub session: Session,
}

impl CurrentUser {
    /// The signed-in user's id, the key of everything the request may touch.
    pub fn id(&self) -> &UserId {
        &self.user.id
    }
}

impl From<Verified> for CurrentUser {
    fn from(v: Verified) -> Self {
        Self {
            user: v.user,
            session: v.session,
        }
    }
}

/// The signed-in user when there is one; never rejects (for `get-session` and the routes that
/// answer better-auth's own error without a session).
#[derive(Debug, Clone)]
pub struct MaybeSession(pub Option<CurrentUser>);

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("a valid session is required")]
    Unauthorized,
    #[error("the session store is unavailable")]
    Unavailable,
    #[error("session verification failed: {0}")]
    Internal(String),
}

impl ResponseError for SessionError {
    fn status_code(&self) -> StatusCode {
        match self {
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        match self {
            Self::Unauthorized => service_kit::http::error_response(
                self.status_code(),
                "UNAUTHORIZED",
                "sign in to continue",
            ),
            Self::Unavailable => service_kit::http::error_response(
                self.status_code(),
                "SERVICE_UNAVAILABLE",
                "please try again shortly",
            ),
            Self::Internal(cause) => {
                tracing::error!(%cause, "session verification failed");
                service_kit::http::error_response(
                    self.status_code(),
                    "INTERNAL_ERROR",
                    "something went wrong",
                )
            }
        }
    }
}

impl SessionError {
    fn internal(cause: impl std::fmt::Display) -> Self {
        Self::Internal(cause.to_string())
    }
}

service_kit::from_db_error!(SessionError, |_| SessionError::Unavailable);

impl From<diesel::result::Error> for SessionError {
    fn from(e: diesel::result::Error) -> Self {
        // The connection has been discarded; the next attempt gets a working one.
        if service_kit::db::is_connection_lost(&e) {
            tracing::warn!(error = %e, "database connection lost");
            Self::Unavailable
        } else {
            Self::Internal(e.to_string())
        }
    }
}

/// Every `Cookie` header of the request joined, as HTTP/2 may split them.
pub fn cookie_header(req: &HttpRequest) -> String {
    req.headers()
        .get_all(header::COOKIE)
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join("; ")
}

/// The `Set-Cookie` to add to the response of a request whose session was refreshed.
#[derive(Debug, Clone)]
struct ResendCookie(String);

/// Verifies the request's session, if it carries one.
pub async fn verify_request(req: &HttpRequest) -> Result<Option<Verified>, SessionError> {
    let layer = req
        .app_data::<web::Data<SessionLayer>>()
        .cloned()
        .ok_or_else(|| SessionError::Internal("SessionLayer is not registered".into()))?;
    let Some(token) = cookie::token_from_header(&layer.settings, &cookie_header(req)) else {
        return Ok(None);
    };
    let verified = match &layer.store {
        SessionStore::Pool(pool) => {
            pg_store::run(pool, move |conn| {
                store::verify(conn, &token, Utc::now()).map_err(SessionError::from)
            })
            .await?
        }
        SessionStore::Lookup(verify) => verify(req, token).await?,
    };
    if let Some(v) = &verified {
        resend_if_refreshed(req, &layer.settings, v);
    }
    Ok(verified)
}

fn resend_if_refreshed(req: &HttpRequest, settings: &AuthSettings, verified: &Verified) {
    if verified.refreshed {
        let set = cookie::set_session(settings, &verified.session.token, true);
        req.extensions_mut().insert(ResendCookie(set));
    }
}

/// The token of a correctly signed session cookie, not yet looked up: for a hot route that reads
/// the session, its user and rows of its own in one statement (one round trip to Postgres
/// instead of two), then hands the session rows to [`store::settle`] and the outcome to
/// [`SessionToken::accept`]. Rejects with 401 when there is no validly signed cookie.
#[derive(Debug, Clone)]
pub struct SessionToken {
    pub token: String,
    req: HttpRequest,
}

impl SessionToken {
    /// The guard's verdict on the settled session: 401 when it is unknown or expired; when it was
    /// just refreshed, the cookie is sent again like for [`CurrentUser`].
    pub fn accept(&self, settled: Option<Verified>) -> Result<CurrentUser, SessionError> {
        let verified = settled.ok_or(SessionError::Unauthorized)?;
        if let Some(layer) = self.req.app_data::<web::Data<SessionLayer>>() {
            resend_if_refreshed(&self.req, &layer.settings, &verified);
        }
        Ok(verified.into())
    }
}

impl FromRequest for SessionToken {
    type Error = SessionError;
    type Future = std::future::Ready<Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let token = match req.app_data::<web::Data<SessionLayer>>() {
            None => Err(SessionError::Internal(
                "SessionLayer is not registered".into(),
            )),
            Some(layer) => cookie::token_from_header(&layer.settings, &cookie_header(req))
                .ok_or(SessionError::Unauthorized),
        };
        std::future::ready(token.map(|token| Self {
            token,
            req: req.clone(),
        }))
    }
}

impl FromRequest for CurrentUser {
    type Error = SessionError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, Self::Error>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let session = MaybeSession::from_request(req, payload);
        Box::pin(async move { session.await?.0.ok_or(SessionError::Unauthorized) })
    }
}

impl FromRequest for MaybeSession {
    type Error = SessionError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, Self::Error>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move {
            let verified = verify_request(&req).await?;
            Ok(MaybeSession(verified.map(CurrentUser::from)))
        })
    }
}

/// Middleware: adds the refreshed session cookie to the response.
pub async fn resend_refreshed_cookie(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let mut res = next.call(req).await?;
    let resend = res.request().extensions().get::<ResendCookie>().cloned();
    if let Some(ResendCookie(set)) = resend
        && let Ok(value) = HeaderValue::from_str(&set)
    {
        res.headers_mut().append(header::SET_COOKIE, value);
    }
    Ok(res)
}
