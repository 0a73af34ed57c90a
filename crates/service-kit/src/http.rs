//! The HTTP edge every service shares: the error body of the contract, a JSON extractor that
//! names the offending field, the 404 for unknown routes and the health and readiness probes.
//!
//! # Errors
//!
//! Every service answers errors the same way, so that a client reads one shape and an operator
//! one kind of log line:
//!
//! - Each service has one `ApiError` enum (its `error.rs`), the only type its handlers return as
//!   an error. Its `ResponseError` impl is the one place where a failure becomes a status, a
//!   contract code and headers (`Retry-After`), always through [`error_response`], so the body
//!   is [`ErrorBody`] everywhere.
//! - Input that cannot be read is refused before the handler by the extractors here
//!   ([`RequestError`], 400/413/415); a handler's own checks return the service's 4xx variant.
//!   Neither logs: a client's mistake is not the operator's.
//! - Database and other infrastructure failures convert with `From` into the service's error (a
//!   lost connection or a full pool is a 503, `SERVICE_UNAVAILABLE` or licence-server's
//!   contract code `DATABASE_UNAVAILABLE`, which clients retry); anything
//!   unexpected is 500 `INTERNAL_ERROR`, logged once with its cause where it is turned into the
//!   response, and the cause never reaches the body.
//! - Handlers propagate with `?` and add no mapping of their own, so that one failure has one
//!   answer whichever route meets it.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Payload;
use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{FromRequest, HttpRequest, HttpResponse, ResponseError, web};
use futures_util::StreamExt;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// `{"code": "UPPER_SNAKE", "message": "..."}`: the one error shape of every service.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, Eq, utoipa::ToSchema)]
#[schema(example = json!({"code": "VALIDATION_ERROR", "message": "name: missing field `name`"}))]
pub struct ErrorBody {
    /// What went wrong, as a stable UPPER_SNAKE code for programs.
    #[schema(value_type = String, pattern = "^[A-Z][A-Z0-9_]*$")]
    pub code: Cow<'static, str>,
    /// The same in English for people.
    pub message: String,
}

/// An error response in the contract's shape.
pub fn error_response(
    status: StatusCode,
    code: &'static str,
    message: impl Into<String>,
) -> HttpResponse {
    HttpResponse::build(status).json(ErrorBody {
        code: Cow::Borrowed(code),
        message: message.into(),
    })
}

/// Default maximum size of a JSON request body. Every body of the contract is small; refusing
/// large ones early keeps a slow client from holding memory.
pub const DEFAULT_BODY_LIMIT: usize = 64 * 1024;

/// Rejections that happen before a handler runs: unreadable, oversized or ill-typed input.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("{0}")]
    Validation(String),
    #[error("request body is larger than {0} bytes")]
    TooLarge(usize),
    #[error("request body must be application/json")]
    UnsupportedMediaType,
}

impl ResponseError for RequestError {
    fn status_code(&self) -> StatusCode {
        match self {
            Self::Validation(_) => StatusCode::BAD_REQUEST,
            Self::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let code = match self {
            Self::Validation(_) => "VALIDATION_ERROR",
            Self::TooLarge(_) => "PAYLOAD_TOO_LARGE",
            Self::UnsupportedMediaType => "UNSUPPORTED_MEDIA_TYPE",
        };
        error_response(self.status_code(), code, self.to_string())
    }
}

/// Per-app override of [`DEFAULT_BODY_LIMIT`], registered with `app_data`.
#[derive(Debug, Clone, Copy)]
pub struct BodyLimit(pub usize);

/// A JSON body deserialised with the path of the failing field in the error message
/// (`days[2].slots[0].category: unknown variant ...`), which plain serde errors do not give.
#[derive(Debug)]
pub struct Json<T>(pub T);

impl<T> Json<T> {
    pub fn into_inner(self) -> T {
        self.0
    }
}

/// Parses `bytes` as JSON into `T`, naming the failing field.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, RequestError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        let what = describe_json_error(&inner);
        if path.is_empty() || path == "." {
            RequestError::Validation(what)
        } else {
            RequestError::Validation(format!("{path}: {what}"))
        }
    })?;
    de.end()
        .map_err(|_| RequestError::Validation("trailing characters after the JSON value".into()))?;
    if has_escaped_nul(bytes) {
        return Err(RequestError::Validation(nul_message(bytes)));
    }
    Ok(value)
}

/// Whether a string of this (well-formed) JSON text holds the escape `\u0000`. A NUL character
/// is never meaningful input, and the databases refuse it (Postgres in text and jsonb alike), so
/// it is refused here, once for every body, instead of failing deep inside a query. Raw control
/// characters cannot occur: the JSON parser already refused them.
fn has_escaped_nul(bytes: &[u8]) -> bool {
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        match (in_string, bytes[i]) {
            (false, b'"') => in_string = true,
            (true, b'"') => in_string = false,
            (true, b'\\') => {
                if bytes.get(i + 1..i + 6) == Some(b"u0000".as_slice()) {
                    return true;
                }
                // Skip the escaped character, so that `\\` and `\"` do not confuse the scan.
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    false
}

/// `path: must not contain the NUL character`, naming the first string (or key) holding one.
fn nul_message(bytes: &[u8]) -> String {
    fn find(value: &serde_json::Value, path: &str) -> Option<String> {
        match value {
            serde_json::Value::String(s) => s.contains('\0').then(|| path.to_owned()),
            serde_json::Value::Array(items) => items
                .iter()
                .enumerate()
                .find_map(|(i, v)| find(v, &format!("{path}[{i}]"))),
            serde_json::Value::Object(map) => map.iter().find_map(|(k, v)| {
                let here = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                if k.contains('\0') {
                    Some(if path.is_empty() {
                        ".".to_owned()
                    } else {
                        path.to_owned()
                    })
                } else {
                    find(v, &here)
                }
            }),
            _ => None,
        }
    }
    let rule = "must not contain the NUL character (\\u0000)";
    match serde_json::from_slice::<serde_json::Value>(bytes)
        .ok()
        .and_then(|v| find(&v, ""))
    {
        Some(path) if !path.is_empty() && path != "." => format!("{path}: {rule}"),
        _ => format!("the body {rule}"),
    }
}

fn describe_json_error(err: &serde_json::Error) -> String {
    use serde_json::error::Category;
    match err.classify() {
        Category::Eof => "malformed JSON: the body ends too early".to_owned(),
        Category::Syntax => format!(
            "malformed JSON at line {} column {}",
            err.line(),
            err.column()
        ),
        // serde's message already names unknown and missing fields and the expected type; the
        // position suffix adds nothing for a client.
        Category::Data | Category::Io => {
            let msg = err.to_string();
            match msg.rfind(" at line ") {
                Some(i) => msg[..i].to_owned(),
                None => msg,
            }
        }
    }
}

fn is_json_content_type(req: &HttpRequest) -> bool {
    match req.headers().get(header::CONTENT_TYPE) {
        // Some clients send JSON without a content type; parsing decides.
        None => true,
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|v| v.split(';').next())
            .map(|mime| {
                let mime = mime.trim().to_ascii_lowercase();
                mime == "application/json" || mime.ends_with("+json")
            })
            .unwrap_or(false),
    }
}

/// Reads the whole body, refusing it as soon as it grows past `limit`.
pub async fn read_body(
    req: &HttpRequest,
    payload: &mut Payload,
    limit: usize,
) -> Result<web::Bytes, RequestError> {
    if let Some(len) = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
        && len > limit
    {
        return Err(RequestError::TooLarge(limit));
    }
    let mut body = web::BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk
            .map_err(|_| RequestError::Validation("the request body could not be read".into()))?;
        if body.len() + chunk.len() > limit {
            return Err(RequestError::TooLarge(limit));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

/// What `from_request` returns for an extractor made with [`from_body`].
pub type BodyFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, E>>>>;

/// The `from_request` of an extractor made from the whole body: reads it (413 beyond `limit`),
/// then hands the request and the bytes to `parse`.
pub fn from_body<T: 'static, E: From<RequestError> + 'static>(
    req: &HttpRequest,
    payload: &mut Payload,
    limit: usize,
    parse: impl FnOnce(&HttpRequest, web::Bytes) -> Result<T, E> + 'static,
) -> BodyFuture<T, E> {
    let req = req.clone();
    let mut payload = payload.take();
    Box::pin(async move {
        let bytes = read_body(&req, &mut payload, limit).await?;
        parse(&req, bytes)
    })
}

fn body_limit(req: &HttpRequest) -> usize {
    req.app_data::<BodyLimit>()
        .map(|l| l.0)
        .unwrap_or(DEFAULT_BODY_LIMIT)
}

impl<T: DeserializeOwned + 'static> FromRequest for Json<T> {
    type Error = RequestError;
    type Future = BodyFuture<Self, Self::Error>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        // Refused before a byte is read: whatever its size, the body would not be used.
        if !is_json_content_type(req) {
            return Box::pin(std::future::ready(Err(RequestError::UnsupportedMediaType)));
        }
        from_body(req, payload, body_limit(req), |_, bytes| {
            if bytes.iter().all(u8::is_ascii_whitespace) {
                return Err(RequestError::Validation("a JSON body is required".into()));
            }
            parse_json(&bytes).map(Json)
        })
    }
}

/// Like [`Json`], but an empty body stands for `T::default()`: for endpoints whose body is optional.
#[derive(Debug)]
pub struct JsonOrEmpty<T>(pub T);

impl<T: DeserializeOwned + Default + 'static> FromRequest for JsonOrEmpty<T> {
    type Error = RequestError;
    type Future = BodyFuture<Self, Self::Error>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        from_body(req, payload, body_limit(req), |req, bytes| {
            if bytes.iter().all(u8::is_ascii_whitespace) {
                return Ok(JsonOrEmpty(T::default()));
            }
            if !is_json_content_type(req) {
                return Err(RequestError::UnsupportedMediaType);
            }
            parse_json(&bytes).map(JsonOrEmpty)
        })
    }
}

/// Deserialises a field that may be absent (`None`), `null` (`Some(None)`) or a value: the three
/// meanings a PATCH or an optional-null body field needs. Use with `#[serde(default)]`.
pub fn double_option<'de, T, D>(de: D) -> Result<Option<Option<T>>, D::Error>
where
    T: serde::Deserialize<'de>,
    D: serde::Deserializer<'de>,
{
    <Option<T> as serde::Deserialize>::deserialize(de).map(Some)
}

/// Query strings and path segments that do not parse answer like bad bodies do.
pub fn extractor_config(cfg: &mut web::ServiceConfig) {
    cfg.app_data(
        web::QueryConfig::default().error_handler(|err, _| {
            RequestError::Validation(format!("query string: {err}")).into()
        }),
    )
    .app_data(
        web::PathConfig::default()
            .error_handler(|err, _| RequestError::Validation(format!("path: {err}")).into()),
    )
    .app_data(
        web::JsonConfig::default()
            .error_handler(|err, _| RequestError::Validation(err.to_string()).into()),
    );
}

/// Default service for unknown routes.
pub async fn not_found() -> HttpResponse {
    error_response(StatusCode::NOT_FOUND, "NOT_FOUND", "no such route")
}

/// `Cache-Control: no-store` on every answer of the wrapped scope that sets none itself: for
/// answers that carry personal data or credentials, which a shared browser's cache or a proxy
/// must never hand to someone else.
pub fn no_store() -> actix_web::middleware::DefaultHeaders {
    actix_web::middleware::DefaultHeaders::new().add((header::CACHE_CONTROL, "no-store"))
}

/// Default service of a known path called with a method it does not have.
pub async fn method_not_allowed() -> HttpResponse {
    error_response(
        StatusCode::METHOD_NOT_ALLOWED,
        "METHOD_NOT_ALLOWED",
        "this route does not accept that method",
    )
}

/// Something whose reachability decides readiness, usually a database pool. The check blocks,
/// so it runs on the blocking thread pool.
pub trait Readiness: Send + Sync + 'static {
    fn check(&self) -> Result<(), String>;
}

/// Shared handle registered as app data for the readiness probe.
pub type ReadinessProbe = Arc<dyn Readiness>;

/// `GET /health`: the process is up and serving.
pub async fn health() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({ "status": "ok" }))
}

/// `GET /ready`: 200 when the database answers, else 503 so that a load balancer stops routing here.
pub async fn ready(probe: web::Data<ReadinessProbe>) -> HttpResponse {
    let probe = Arc::clone(probe.get_ref());
    let outcome = web::block(move || probe.check()).await;
    match outcome {
        Ok(Ok(())) => HttpResponse::Ok().json(serde_json::json!({ "status": "ready" })),
        Ok(Err(cause)) => {
            tracing::warn!(%cause, "readiness check failed");
            unavailable()
        }
        Err(_) => unavailable(),
    }
}

fn unavailable() -> HttpResponse {
    let mut resp = error_response(
        StatusCode::SERVICE_UNAVAILABLE,
        "DATABASE_UNAVAILABLE",
        "the database cannot be reached",
    );
    resp.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    resp
}

/// The client's address. The peer is the client unless it is a trusted proxy; then the
/// `X-Forwarded-For` chain is read from the right (each proxy appends the address it saw), and
/// the first address that is not itself a trusted proxy is the client. Anything to its left was
/// written by the client and proves nothing; neither does anything left of a malformed entry.
/// Longest user agent a service keeps (on a session, a push device, a security event).
pub const MAX_USER_AGENT: usize = 512;

/// The request's user agent, cut at [`MAX_USER_AGENT`] characters.
pub fn user_agent(req: &HttpRequest) -> Option<String> {
    req.headers()
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .map(|ua| ua.chars().take(MAX_USER_AGENT).collect())
}

pub fn client_ip(req: &HttpRequest, trusted: &[ipnet::IpNet]) -> Option<std::net::IpAddr> {
    let peer = req.peer_addr().map(|a| a.ip())?;
    let is_trusted = |ip: &std::net::IpAddr| trusted.iter().any(|net| net.contains(ip));
    if !is_trusted(&peer) {
        return Some(peer);
    }
    let entries: Vec<&str> = req
        .headers()
        .get_all("x-forwarded-for")
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect();
    for raw in entries.iter().rev() {
        match raw.parse::<std::net::IpAddr>() {
            Ok(ip) if is_trusted(&ip) => {}
            Ok(ip) => return Some(ip),
            Err(_) => break,
        }
    }
    Some(peer)
}

/// A client address as a rate-limit subject: IPv4 as is (also when written as IPv4-mapped IPv6),
/// IPv6 as its /64 network, since one host or customer line holds a whole /64.
pub fn client_network(ip: std::net::IpAddr) -> String {
    match ip {
        std::net::IpAddr::V4(v4) => v4.to_string(),
        std::net::IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let prefix = u128::from(v6) & !(u128::MAX >> 64);
                format!("{}/64", std::net::Ipv6Addr::from(prefix))
            }
        },
    }
}

/// Mounts `/health` and `/ready`.
pub fn probes(cfg: &mut web::ServiceConfig) {
    cfg.route("/health", web::get().to(health))
        .route("/ready", web::get().to(ready));
}

/// The request span of every service: method, route, path and status, but never the query string,
/// which can carry capabilities (signed download addresses, OAuth codes and states) that must not
/// reach the logs.
pub struct RequestSpan;

impl tracing_actix_web::RootSpanBuilder for RequestSpan {
    fn on_request_start(request: &actix_web::dev::ServiceRequest) -> tracing::Span {
        use actix_web::HttpMessage;
        let request_id = request
            .extensions()
            .get::<tracing_actix_web::RequestId>()
            .map(ToString::to_string)
            .unwrap_or_default();
        request_span(
            request.method(),
            request.match_pattern().as_deref().unwrap_or_default(),
            request.headers(),
            &request_id,
        )
    }

    fn on_request_end<B: actix_web::body::MessageBody>(
        span: tracing::Span,
        outcome: &Result<actix_web::dev::ServiceResponse<B>, actix_web::Error>,
    ) {
        let status = match outcome {
            Ok(resp) => resp.status(),
            Err(err) => err.as_response_error().status_code(),
        };
        // A 503 is an answer (a database away, a service switched off or busy); any other 5xx
        // is a failure, logged with a fixed message that tests look for in service logs.
        if status.is_server_error() && status != StatusCode::SERVICE_UNAVAILABLE {
            span.in_scope(|| {
                tracing::error!(status = status.as_u16(), "{SERVER_ERROR_LOG}");
            });
        }
        tracing_actix_web::DefaultRootSpanBuilder::on_request_end(span, outcome);
    }
}

/// Logged at error level whenever a service answers a 5xx other than 503.
pub const SERVER_ERROR_LOG: &str = "answered a server error";

/// The span of one request, shared by [`RequestSpan`] and the requests served before actix (see
/// [`crate::files`]). It names the route's template, never the path: a path can carry a
/// capability (a reset link's token) or a person's identifiers, and every log line of the
/// request would repeat it.
pub(crate) fn request_span(
    method: &actix_web::http::Method,
    route: &str,
    headers: &header::HeaderMap,
    request_id: &str,
) -> tracing::Span {
    let span = tracing::info_span!(
        "http_request",
        otel.name = tracing::field::Empty,
        otel.kind = "server",
        http.method = %method,
        http.route = %route,
        http.status_code = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
        exception.message = tracing::field::Empty,
        exception.details = tracing::field::Empty,
        request_id = %request_id,
        trace_id = tracing::field::Empty,
    );
    if crate::telemetry::exporting() {
        // OpenTelemetry names a server span by method and route template; an unmatched
        // request gets the method alone, since its path may carry identifiers or
        // capabilities. Only an exported span needs the name, so the hot path without
        // export does not format it.
        let name = if route.is_empty() {
            method.to_string()
        } else {
            format!("{method} {route}")
        };
        span.record("otel.name", name.as_str());
    }
    let trace_id = crate::telemetry::trace_request(&span, headers, request_id);
    span.record("trace_id", trace_id.as_str());
    span
}

/// The HTTP server every service runs: request tracing and metrics, the shared extractor
/// settings, the probes, `/metrics`, the routes added by `configure`, and the contract's 404 for
/// everything else. On SIGTERM it stops accepting, lets open requests finish for up to ten
/// seconds, then returns.
pub fn server<F>(
    listener: std::net::TcpListener,
    readiness: ReadinessProbe,
    configure: F,
) -> std::io::Result<actix_web::dev::Server>
where
    F: Fn(&mut web::ServiceConfig) + Send + Clone + 'static,
{
    server_with(
        listener,
        readiness,
        crate::metrics::ServiceMetrics::new(),
        Limits::default(),
        configure,
    )
}

/// How much a slow or numerous client may hold of a service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// A request body that sends nothing for this long is answered 408 and the connection closed.
    pub body_idle_timeout: Duration,
    /// A request body not complete this long after its first byte was awaited is answered 408
    /// too, however steadily it trickles: the idle timeout alone lets a byte every few seconds
    /// hold a connection for days.
    pub body_deadline: Duration,
    /// Open connections per process; beyond it new ones wait in the listen backlog.
    pub max_connections: usize,
    /// Threads per process that run blocking work (database calls), when set: the service's pool
    /// size. More threads than pooled connections only wait on the pool, and every one of them
    /// costs a wake-up and a context switch per request under load; with as many threads as
    /// connections, requests beyond that queue as tasks instead, at no cost. `None` keeps
    /// actix's default (512 per process).
    pub blocking_threads: Option<usize>,
    /// HTTP worker threads. One per core suits a service whose workers only ever wait on
    /// sockets; one that runs short statements on its workers (licence-server) needs more,
    /// so that a core has another worker to run while one waits for the database.
    pub workers: std::num::NonZeroUsize,
}

pub const REQUEST_BODY_TIMEOUT_SECS: &str = "REQUEST_BODY_TIMEOUT_SECS";
pub const REQUEST_BODY_DEADLINE_SECS: &str = "REQUEST_BODY_DEADLINE_SECS";
pub const MAX_CONNECTIONS: &str = "MAX_CONNECTIONS";
pub const HTTP_WORKERS: &str = "HTTP_WORKERS";

/// The machine's cores, as the process may use them.
pub fn cores() -> std::num::NonZeroUsize {
    std::thread::available_parallelism().unwrap_or(std::num::NonZeroUsize::MIN)
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            body_idle_timeout: Duration::from_secs(15),
            body_deadline: Duration::from_secs(60),
            max_connections: 4096,
            blocking_threads: None,
            workers: cores(),
        }
    }
}

impl Limits {
    pub fn from_env(env: &crate::Env) -> Result<Self, crate::ConfigError> {
        Self::from_env_or(env, Self::default())
    }

    /// [`Limits::from_env`] with the service's own defaults for what the environment leaves
    /// unset.
    pub fn from_env_or(env: &crate::Env, default: Self) -> Result<Self, crate::ConfigError> {
        let workers = env.number(HTTP_WORKERS, default.workers.get(), 1, 256)?;
        Ok(Self {
            body_idle_timeout: Duration::from_secs(env.number(
                REQUEST_BODY_TIMEOUT_SECS,
                default.body_idle_timeout.as_secs(),
                1,
                300,
            )?),
            body_deadline: Duration::from_secs(env.number(
                REQUEST_BODY_DEADLINE_SECS,
                default.body_deadline.as_secs(),
                1,
                3_600,
            )?),
            max_connections: env.number(MAX_CONNECTIONS, default.max_connections, 16, 1_000_000)?,
            blocking_threads: default.blocking_threads,
            workers: std::num::NonZeroUsize::new(workers).unwrap_or(default.workers),
        })
    }
}

/// Cuts off a request body that stalls: each chunk must arrive within the idle timeout and the
/// whole body within the body deadline, else the body ends with an error and the answer is 408
/// `REQUEST_TIMEOUT` with `Connection: close`, whatever the handler made of the broken body.
/// Without it a client that sends headers and then trickles (or nothing) would hold a worker's
/// connection and buffer for as long as it likes.
async fn body_deadline(
    mut req: actix_web::dev::ServiceRequest,
    next: actix_web::middleware::Next<impl actix_web::body::MessageBody + 'static>,
) -> Result<
    actix_web::dev::ServiceResponse<actix_web::body::EitherBody<impl actix_web::body::MessageBody>>,
    actix_web::Error,
> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let limits = req
        .app_data::<web::Data<Limits>>()
        .map(|l| *l.get_ref())
        .unwrap_or_default();
    let (idle, whole) = (limits.body_idle_timeout, limits.body_deadline);
    let deadline = actix_web::rt::time::Instant::now() + whole;
    let stalled = Arc::new(AtomicBool::new(false));
    let payload = actix_web::HttpMessage::take_payload(&mut req);
    let flag = Arc::clone(&stalled);
    let stream = futures_util::stream::unfold(Some(payload), move |state| {
        let flag = Arc::clone(&flag);
        async move {
            let mut payload = state?;
            let left = deadline.saturating_duration_since(actix_web::rt::time::Instant::now());
            match actix_web::rt::time::timeout(idle.min(left), payload.next()).await {
                Ok(Some(item)) => Some((item, Some(payload))),
                Ok(None) => None,
                Err(_) => {
                    flag.store(true, Ordering::Relaxed);
                    let err =
                        std::io::Error::new(std::io::ErrorKind::TimedOut, "request body stalled");
                    Some((Err(actix_web::error::PayloadError::Io(err)), None))
                }
            }
        }
    });
    req.set_payload(Payload::Stream {
        payload: Box::pin(stream),
    });
    let outcome = next.call(req).await;
    if !stalled.load(Ordering::Relaxed) {
        return outcome.map(actix_web::dev::ServiceResponse::map_into_left_body);
    }
    tracing::info!("request body stalled; answered 408");
    let mut timeout = error_response(
        StatusCode::REQUEST_TIMEOUT,
        "REQUEST_TIMEOUT",
        format!(
            "the request body sent nothing for {} s, or was not complete within {} s",
            idle.as_secs(),
            whole.as_secs()
        ),
    );
    timeout
        .head_mut()
        .set_connection_type(actix_web::http::ConnectionType::Close);
    match outcome {
        Ok(resp) => Ok(resp.into_response(timeout).map_into_right_body()),
        Err(_) => Err(actix_web::error::InternalError::from_response(
            "request body stalled",
            timeout,
        )
        .into()),
    }
}

/// [`server`] with the service's own metrics (pool, outboxes, route outcomes) and limits.
pub fn server_with<F>(
    listener: std::net::TcpListener,
    readiness: ReadinessProbe,
    metrics: crate::metrics::ServiceMetrics,
    limits: Limits,
    configure: F,
) -> std::io::Result<actix_web::dev::Server>
where
    F: Fn(&mut web::ServiceConfig) + Send + Clone + 'static,
{
    server_with_files(listener, readiness, metrics, limits, None, configure)
}

/// [`server_with`], with a route whose successful answers are files sent by `sendfile(2)`
/// before actix sees the request (see [`crate::files`]); every other request, and every request
/// of that route the [`FileRoute`](crate::files::FileRoute) declines, goes to the app.
pub fn server_with_files<F>(
    listener: std::net::TcpListener,
    readiness: ReadinessProbe,
    metrics: crate::metrics::ServiceMetrics,
    limits: Limits,
    files: Option<crate::files::FileRoute>,
    configure: F,
) -> std::io::Result<actix_web::dev::Server>
where
    F: Fn(&mut web::ServiceConfig) + Send + Clone + 'static,
{
    use actix_service::{IntoServiceFactory, ServiceFactoryExt, map_config};

    crate::metrics::init_process_metrics();
    let metrics = web::Data::new(metrics);
    let workers = limits.workers.get();
    if let Some(limit) = crate::cli::open_files_limit() {
        match limit {
            Ok((soft, hard)) => tracing::info!(soft, hard, "open files limit"),
            Err(error) => tracing::warn!(%error, "open files limit could not be raised"),
        }
    }
    let addr = listener.local_addr()?;
    let builder = actix_server::Server::build();
    let shutdown = builder.graceful_shutdown_signal();
    // What actix-web's HttpServer does for a listener, with its defaults, plus the look at each
    // connection's first request that the file route needs.
    let builder = builder
        .shutdown_timeout(10)
        .workers(workers)
        // actix counts per worker; MAX_CONNECTIONS is per process.
        .max_concurrent_connections(limits.max_connections.div_ceil(workers));
    // Each worker has its own blocking pool; the limit is per process.
    let builder = match limits.blocking_threads {
        Some(total) => builder.worker_max_blocking_threads(total.div_ceil(workers).max(1)),
        None => builder,
    };
    let builder = builder.listen("http", listener, move || {
        let configure = configure.clone();
        let readiness = Arc::clone(&readiness);
        let app = actix_web::App::new()
            .wrap(actix_web::middleware::from_fn(body_deadline))
            .wrap(tracing_actix_web::TracingLogger::<RequestSpan>::new())
            .wrap(actix_web::middleware::from_fn(crate::metrics::record))
            .app_data(web::Data::new(limits))
            .app_data(web::Data::new(readiness))
            .app_data(metrics.clone())
            .configure(extractor_config)
            .configure(probes)
            .route("/metrics", web::get().to(crate::metrics::handler))
            .configure(configure)
            .default_service(web::to(not_found));
        let shutdown = shutdown.clone();
        let http = actix_http::HttpService::build()
            .graceful_shutdown_signal(move || {
                let signal = shutdown.clone();
                async move { signal.notified().await }
            })
            .keep_alive(actix_http::KeepAlive::default())
            .client_request_timeout(CLIENT_REQUEST_TIMEOUT)
            .client_disconnect_timeout(Duration::from_secs(1))
            .h1_allow_half_closed(true)
            .local_addr(addr)
            .finish(map_config(
                app.into_factory()
                    .map_err(|err: actix_web::Error| err.error_response()),
                |_| actix_web::dev::AppConfig::default(),
            ))
            .tcp();
        crate::files::front(http, files.clone(), metrics.clone())
    })?;
    Ok(builder.run())
}

/// How long a new connection may take to send its first request head (actix-web's default).
pub(crate) const CLIENT_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_come_from_the_service_unless_http_workers_says() {
        let env = |pairs: &[(&str, &str)]| crate::Env::from_pairs(pairs.iter().copied());
        let eight = Limits {
            workers: std::num::NonZeroUsize::new(8).expect("8"),
            ..Limits::default()
        };
        assert_eq!(Limits::from_env(&env(&[])).map(|l| l.workers), Ok(cores()));
        assert_eq!(Limits::from_env_or(&env(&[]), eight), Ok(eight));
        let three =
            Limits::from_env_or(&env(&[(HTTP_WORKERS, "3")]), eight).map(|l| l.workers.get());
        assert_eq!(three, Ok(3));
        for bad in ["0", "257", "four"] {
            let refused = Limits::from_env_or(&env(&[(HTTP_WORKERS, bad)]), eight);
            assert_eq!(
                refused.map_err(|e| e.var),
                Err(HTTP_WORKERS.to_owned()),
                "{bad}"
            );
        }
    }

    /// A log writer the test can read back.
    #[derive(Clone, Default)]
    struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if let Ok(mut v) = self.0.lock() {
                v.extend_from_slice(buf);
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
        type Writer = Captured;
        fn make_writer(&'a self) -> Self::Writer {
            self.clone()
        }
    }

    impl Captured {
        fn text(&self) -> String {
            self.0
                .lock()
                .map(|v| String::from_utf8_lossy(&v).into_owned())
                .unwrap_or_default()
        }
    }

    #[actix_web::test]
    async fn every_5xx_but_503_is_logged_as_a_server_error() {
        use actix_web::test::{TestRequest, call_service, init_service};
        let captured = Captured::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(captured.clone())
            .with_ansi(false)
            .finish();
        let _guard = tracing::subscriber::set_default(subscriber);
        let app = init_service(
            actix_web::App::new()
                .wrap(tracing_actix_web::TracingLogger::<RequestSpan>::new())
                .route(
                    "/ok",
                    web::get().to(|| async { HttpResponse::Ok().finish() }),
                )
                .route(
                    "/busy",
                    web::get().to(|| async { HttpResponse::ServiceUnavailable().finish() }),
                )
                .route(
                    "/fail",
                    web::get().to(|| async { HttpResponse::InternalServerError().finish() }),
                ),
        )
        .await;
        for path in ["/ok", "/busy"] {
            call_service(&app, TestRequest::get().uri(path).to_request()).await;
        }
        assert!(
            !captured.text().contains(SERVER_ERROR_LOG),
            "{}",
            captured.text()
        );
        let resp = call_service(&app, TestRequest::get().uri("/fail").to_request()).await;
        assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let log = captured.text();
        assert!(
            log.contains(SERVER_ERROR_LOG) && log.contains("status=500"),
            "{log}"
        );
        assert!(log.contains("ERROR"), "{log}");
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Body {
        #[allow(dead_code)]
        name: String,
        #[allow(dead_code)]
        days: Vec<Day>,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Day {
        #[allow(dead_code)]
        hours: u8,
    }

    fn msg(bytes: &str) -> String {
        match parse_json::<Body>(bytes.as_bytes()) {
            Err(RequestError::Validation(m)) => m,
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    #[test]
    fn names_the_field() {
        assert!(
            msg(r#"{"name":"a","days":[{"hours":"x"}]}"#)
                .starts_with("days[0].hours: invalid type")
        );
        assert!(msg(r#"{"name":"a","days":[],"extra":1}"#).contains("unknown field `extra`"));
        assert!(msg(r#"{"days":[]}"#).contains("missing field `name`"));
        assert!(msg(r#"{"name":"a","days":[{"hours":300}]}"#).starts_with("days[0].hours"));
    }

    #[test]
    fn a_nul_character_is_refused_naming_the_field() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Loose {
            name: String,
            days: Vec<serde_json::Value>,
        }
        let refused = |body: &str| match parse_json::<Loose>(body.as_bytes()) {
            Err(RequestError::Validation(m)) => m,
            other => panic!("expected a validation error, got {other:?}"),
        };
        assert_eq!(
            refused(r#"{"name":"a\u0000b","days":[]}"#),
            "name: must not contain the NUL character (\\u0000)"
        );
        assert!(
            refused(r#"{"name":"a","days":[{"x":["ok","\u0000"]}]}"#).starts_with("days[0].x[1]: ")
        );
        assert!(refused(r#"{"name":"a","days":[{"k\u0000":1}]}"#).starts_with("days[0]: "));
        // An escaped backslash before `u0000` is six ordinary characters.
        assert!(parse_json::<Loose>(br#"{"name":"a\\u0000b","days":[]}"#).is_ok());
        assert!(parse_json::<Loose>(br#"{"name":"\"\\","days":["u0000"]}"#).is_ok());
    }

    #[test]
    fn malformed_and_trailing() {
        assert!(msg(r#"{"name":"#).contains("ends too early"));
        assert!(msg(r#"{"name" "a"}"#).contains("malformed JSON"));
        assert!(msg(r#"{"name":"a","days":[]} x"#).contains("trailing"));
    }
}
