//! The API document every service serves: `GET /openapi.json` (OpenAPI 3.1) and `GET /docs`, a
//! page that renders it with nothing loaded from outside the service.
//!
//! Each service declares its operations with `utoipa` next to its wire types; this module adds
//! the routes every service shares (probes and the documents themselves), the contract's error
//! body, and a way to list the routes an actix application really mounts, so that tests can
//! hold the document and the router to each other.

use std::sync::Arc;

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, web};
use utoipa::OpenApi;
use utoipa::openapi::path::{HttpMethod, Operation};
use utoipa::openapi::{ContentBuilder, OpenApi as Document, RefOr, Response, ResponseBuilder};

use crate::http::ErrorBody;

/// The renderer behind `/docs`: plain HTML and script, compiled into the binary.
const DOCS_PAGE: &str = include_str!("docs.html");

/// Only the page's own inline script and style run, and it may fetch only from this origin.
const DOCS_CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; \
     style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; \
     base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// `{"status": "ok"}` from `/health`, `{"status": "ready"}` from `/ready`.
#[derive(utoipa::ToSchema)]
#[schema(example = json!({"status": "ok"}))]
pub struct ProbeStatus {
    #[allow(dead_code)]
    pub status: String,
}

/// The liveness probe.
#[utoipa::path(
    get, path = "/health", tag = "operations",
    responses((status = 200, description = "The process serves requests.", body = ProbeStatus,
               example = json!({"status": "ok"})))
)]
pub fn health_doc() {}

/// The readiness probe: 200 while the database answers, else 503 with `Retry-After`.
#[utoipa::path(
    get, path = "/ready", tag = "operations",
    responses(
        (status = 200, description = "The database answers.", body = ProbeStatus,
         example = json!({"status": "ready"})),
        (status = 503, description = "The database cannot be reached; retry after the given seconds.",
         body = ErrorBody, headers(("Retry-After" = u32, description = "Seconds to wait")),
         example = json!({"code": "DATABASE_UNAVAILABLE", "message": "the database cannot be reached"})),
    )
)]
pub fn ready_doc() {}

/// Prometheus metrics: requests by route and status with latency histograms, pool connections,
/// outbox depth and age, delivery outcomes.
#[utoipa::path(
    get, path = "/metrics", tag = "operations",
    responses((status = 200, description = "The Prometheus text format, version 0.0.4.",
               content_type = "text/plain", body = String))
)]
pub fn metrics_doc() {}

/// This document.
#[utoipa::path(
    get, path = "/openapi.json", tag = "operations",
    responses((status = 200, description = "The OpenAPI 3.1 document of this service.",
               content_type = "application/json", body = Object))
)]
pub fn openapi_doc() {}

/// A page rendering this document, with no asset from outside the service.
#[utoipa::path(
    get, path = "/docs", tag = "operations",
    responses((status = 200, description = "HTML page.", content_type = "text/html", body = String))
)]
pub fn docs_doc() {}

#[derive(OpenApi)]
#[openapi(
    paths(health_doc, ready_doc, metrics_doc, openapi_doc, docs_doc),
    components(schemas(ErrorBody, ProbeStatus))
)]
struct Shared;

/// The rendered document, built once at start-up.
#[derive(Clone)]
pub struct Docs {
    json: Arc<str>,
}

impl Docs {
    /// Renders a complete document (see [`complete`]).
    pub fn new(doc: &Document) -> Self {
        let json = doc
            .to_pretty_json()
            .unwrap_or_else(|e| format!("{{\"error\": \"the document did not render: {e}\"}}"));
        Self { json: json.into() }
    }

    pub fn json(&self) -> &str {
        &self.json
    }
}

/// A service's document plus the shared routes and schemas, in OpenAPI 3.1.
pub fn complete(service: Document) -> Document {
    let mut doc = service;
    doc.merge(Shared::openapi());
    doc
}

/// Mounts `GET /openapi.json` and `GET /docs`.
pub fn mount(docs: Docs) -> impl Fn(&mut web::ServiceConfig) + Clone {
    move |cfg| {
        cfg.app_data(web::Data::new(docs.clone()))
            .route("/openapi.json", web::get().to(serve_json))
            .route("/docs", web::get().to(serve_page));
    }
}

async fn serve_json(docs: web::Data<Docs>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .body(docs.json.to_string())
}

async fn serve_page() -> HttpResponse {
    let mut resp = HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .body(DOCS_PAGE);
    let headers = resp.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(DOCS_CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    resp
}

/// A response documented with the contract's error body and an example of it.
pub fn error_response(description: &str, code: &str, message: &str) -> RefOr<Response> {
    RefOr::T(
        ResponseBuilder::new()
            .description(description)
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
                        "ErrorBody",
                    ))))
                    .example(Some(serde_json::json!({"code": code, "message": message})))
                    .build(),
            )
            .build(),
    )
}

/// Every operation of the paths `select` picks, as a mutable reference.
pub fn operations_mut<'a>(
    doc: &'a mut Document,
    select: impl Fn(&str) -> bool + 'a,
) -> impl Iterator<Item = (HttpMethod, &'a mut Operation)> + 'a {
    doc.paths
        .paths
        .iter_mut()
        .filter(move |(path, _)| select(path))
        .flat_map(|(_, item)| {
            [
                (HttpMethod::Get, item.get.as_mut()),
                (HttpMethod::Put, item.put.as_mut()),
                (HttpMethod::Post, item.post.as_mut()),
                (HttpMethod::Patch, item.patch.as_mut()),
                (HttpMethod::Delete, item.delete.as_mut()),
                (HttpMethod::Head, item.head.as_mut()),
            ]
        })
        .filter_map(|(method, op)| op.map(|op| (method, op)))
}

/// Adds a `default` response with the contract's error body to the operations of the paths
/// `select` picks: whatever else fails (405, 413, 415, 503 while the database is unreachable)
/// still answers `{code, message}`.
pub fn add_default_error(doc: &mut Document, select: impl Fn(&str) -> bool) {
    for (_, op) in operations_mut(doc, select) {
        op.responses
            .responses
            .entry("default".into())
            .or_insert_with(|| {
                error_response(
                    "Any other error: 405, 413, 415, or 503 while the database is unreachable.",
                    "DATABASE_UNAVAILABLE",
                    "the database cannot be reached",
                )
            });
    }
}

/// The route patterns an application mounts (`/me/fast-events/{id}`), read from its resource
/// map. actix offers no iterator over its routes, but its `Debug` output holds the whole tree:
/// every node with its pattern, and `nodes: None` on the leaves, the resources themselves.
pub fn mounted_patterns(map: &actix_web::dev::ResourceMap) -> Vec<String> {
    let text = format!("{map:?}");
    let bytes = text.as_bytes();
    // One frame per open `ResourceMap {`: the brace depth it opened at, its pattern, and
    // whether it is a leaf.
    struct Frame {
        depth: usize,
        pattern: Option<String>,
        leaf: bool,
    }
    let mut frames: Vec<Frame> = Vec::new();
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        let rest = &text[i..];
        if rest.starts_with("ResourceMap {") {
            depth += 1;
            frames.push(Frame {
                depth,
                pattern: None,
                leaf: false,
            });
            i += "ResourceMap {".len();
            continue;
        }
        if rest.starts_with("nodes: None") {
            if let Some(f) = frames.last_mut() {
                f.leaf = true;
            }
            i += "nodes: None".len();
            continue;
        }
        if rest.starts_with("Single(\"") {
            let start = i + "Single(\"".len();
            let (literal, end) = read_string(&text, start);
            if let Some(f) = frames.last_mut()
                && f.pattern.is_none()
            {
                f.pattern = Some(literal);
            }
            i = end;
            continue;
        }
        match bytes[i] {
            b'"' => {
                let (_, end) = read_string(&text, i + 1);
                i = end;
                continue;
            }
            b'{' => depth += 1,
            b'}' => {
                if frames.last().is_some_and(|f| f.depth == depth) {
                    let frame = frames.pop().unwrap_or(Frame {
                        depth,
                        pattern: None,
                        leaf: false,
                    });
                    if frame.leaf {
                        let prefix: String =
                            frames.iter().filter_map(|f| f.pattern.as_deref()).collect();
                        out.push(format!(
                            "{prefix}{}",
                            frame.pattern.as_deref().unwrap_or_default()
                        ));
                    }
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        i += 1;
    }
    out.sort();
    out.dedup();
    out
}

/// The route patterns of an application made of the shared probes plus what `configure` adds:
/// for tests that compare them with the document.
pub async fn mounted_routes(configure: impl FnOnce(&mut web::ServiceConfig)) -> Vec<String> {
    use actix_web::test::{TestRequest, call_and_read_body_json, init_service};
    const ROUTES: &str = "/__mounted-routes";
    let app = init_service(
        actix_web::App::new()
            .configure(crate::http::probes)
            .route("/metrics", web::get().to(crate::metrics::handler))
            .configure(configure)
            .route(
                ROUTES,
                web::get().to(|req: actix_web::HttpRequest| async move {
                    HttpResponse::Ok().json(mounted_patterns(req.resource_map()))
                }),
            ),
    )
    .await;
    let all: Vec<String> =
        call_and_read_body_json(&app, TestRequest::get().uri(ROUTES).to_request()).await;
    all.into_iter().filter(|p| p != ROUTES).collect()
}

/// Reads a Debug-escaped string literal starting after its opening quote; returns its text and
/// the index after the closing quote.
fn read_string(text: &str, start: usize) -> (String, usize) {
    let mut out = String::new();
    let mut chars = text[start..].char_indices();
    while let Some((off, c)) = chars.next() {
        match c {
            '"' => return (out, start + off + 1),
            '\\' => {
                if let Some((_, escaped)) = chars.next() {
                    out.push(escaped);
                }
            }
            c => out.push(c),
        }
    }
    (out, text.len())
}

/// Every `(METHOD, path)` pair of a document, methods upper-case.
pub fn documented_operations(doc: &Document) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (path, item) in &doc.paths.paths {
        let value = serde_json::to_value(item).unwrap_or_default();
        for method in ["get", "put", "post", "patch", "delete", "head", "options"] {
            if value.get(method).is_some() {
                out.push((method.to_ascii_uppercase(), path.clone()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[actix_web::test]
    async fn lists_the_mounted_patterns_with_their_scopes() {
        let got = mounted_routes(|cfg| {
            cfg.route("/x", web::get().to(HttpResponse::Ok)).service(
                web::scope("/me")
                    .service(web::resource("").to(HttpResponse::Ok))
                    .service(web::resource("/things/{id}").to(HttpResponse::Ok)),
            );
        })
        .await;
        assert_eq!(
            got,
            [
                "/health",
                "/me",
                "/me/things/{id}",
                "/metrics",
                "/ready",
                "/x"
            ]
        );
    }

    #[test]
    fn the_document_is_openapi_3_1_with_the_shared_routes() {
        let docs = Docs::new(&complete(utoipa::openapi::OpenApiBuilder::new().build()));
        let value: serde_json::Value = serde_json::from_str(docs.json()).unwrap();
        assert!(value["openapi"].as_str().unwrap().starts_with("3.1"));
        for path in ["/health", "/ready", "/openapi.json", "/docs"] {
            assert!(value["paths"][path]["get"].is_object(), "{path}");
        }
        assert!(value["components"]["schemas"]["ErrorBody"].is_object());
    }
}
