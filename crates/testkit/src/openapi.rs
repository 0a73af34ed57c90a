//! Holds a service's OpenAPI document and its router to each other: every documented operation
//! is mounted, and every mounted route and method is documented.

use std::collections::BTreeSet;

use reqwest::Method;
use serde_json::Value;

const METHODS: [&str; 6] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];

/// Every `(METHOD, path template)` the document declares.
pub fn documented(doc: &Value) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths object") {
        for method in METHODS {
            if item.get(method.to_ascii_lowercase()).is_some() {
                out.insert((method.to_owned(), path.clone()));
            }
        }
    }
    out
}

/// `/me/fast-events/{id}` with every parameter filled in, and actix's `{name:regex}` reduced to
/// `{name}` for comparison with the document.
fn concrete(template: &str) -> String {
    let mut out = String::new();
    let mut in_param = false;
    for c in template.chars() {
        match c {
            '{' => {
                in_param = true;
                out.push_str("openapi-probe");
            }
            '}' => in_param = false,
            c if !in_param => out.push(c),
            _ => {}
        }
    }
    out
}

fn normalise(template: &str) -> String {
    let mut out = String::new();
    let (mut in_param, mut skipping) = (false, false);
    for c in template.chars() {
        match c {
            '{' => in_param = true,
            '}' => (in_param, skipping) = (false, false),
            ':' if in_param => skipping = true,
            _ => {}
        }
        if !skipping || c == '}' {
            out.push(c);
        }
    }
    out
}

/// Every local `$ref` under `value` that names nothing in `doc` (a schema used but never
/// registered), which a validator refuses the whole document for.
fn unresolved_refs(doc: &Value, value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get("$ref")
                && let Some(pointer) = target.strip_prefix('#')
                && doc.pointer(pointer).is_none()
            {
                out.push(target.clone());
            }
            map.values().for_each(|v| unresolved_refs(doc, v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| unresolved_refs(doc, v, out)),
        _ => {}
    }
}

/// Whether a response says that no route exists for this path, or none for this method: the
/// router's 404 `NOT_FOUND` "no such route" (not a handler's 404 for a missing resource) and 405.
async fn unrouted(resp: reqwest::Response) -> bool {
    let status = resp.status().as_u16();
    if status == 405 {
        return true;
    }
    if status != 404 {
        return false;
    }
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    body["code"] == "NOT_FOUND" && body["message"] == "no such route"
}

async fn probe(http: &reqwest::Client, base: &str, method: &str, path: &str) -> bool {
    let method = Method::from_bytes(method.as_bytes()).expect("method");
    let mut req = http.request(method.clone(), format!("{base}{path}"));
    if method != Method::GET {
        req = req.header("content-type", "application/json").body("{}");
    }
    let resp = req.send().await.expect("probe request");
    if method == Method::HEAD {
        // A HEAD answer has no body to tell the router's 404 from a handler's.
        return !matches!(resp.status().as_u16(), 404 | 405);
    }
    !unrouted(resp).await
}

/// Fetches `/openapi.json` from the running service at `base` and asserts that it is an
/// OpenAPI 3.1 document identical to `expected` (what the binary's `openapi` subcommand prints).
async fn served_document(http: &reqwest::Client, base: &str, expected: Value) -> Value {
    let resp = http
        .get(format!("{base}/openapi.json"))
        .send()
        .await
        .expect("GET /openapi.json");
    assert_eq!(resp.status(), 200);
    let doc: Value = resp.json().await.expect("/openapi.json is JSON");
    assert_eq!(doc["openapi"], "3.1.0");
    let mut dangling = Vec::new();
    unresolved_refs(&doc, &doc, &mut dangling);
    assert!(dangling.is_empty(), "references to nothing: {dangling:?}");
    let paths = doc["paths"].as_object().cloned().unwrap_or_default();
    for (path, operations) in &paths {
        let operations = operations.as_object().cloned().unwrap_or_default();
        for parameter in operations
            .values()
            .filter_map(|op| op["parameters"].as_array())
            .flatten()
        {
            if parameter["in"] == "path" {
                let name = parameter["name"].as_str().unwrap_or_default();
                assert!(
                    path.contains(&format!("{{{name}}}")),
                    "{path}: the path parameter `{name}` is not in the path"
                );
            }
        }
    }
    assert_eq!(
        doc, expected,
        "/openapi.json serves the document the binary prints"
    );
    doc
}

/// Asserts that the running service at `base` mounts every operation of `doc`, and that every
/// route pattern in `mounted` (from the same router, see `service_kit::openapi::mounted_routes`)
/// is documented with exactly the methods it answers.
async fn assert_document_matches_routes(
    http: &reqwest::Client,
    base: &str,
    doc: &Value,
    mounted: &[String],
) {
    let documented = documented(doc);
    let mut problems = Vec::new();
    for (method, path) in &documented {
        if !probe(http, base, method, &concrete(path)).await {
            problems.push(format!("documented but not mounted: {method} {path}"));
        }
    }
    let documented_paths: BTreeSet<&str> = documented.iter().map(|(_, p)| p.as_str()).collect();
    for pattern in mounted {
        let path = normalise(pattern);
        if !documented_paths.contains(path.as_str()) {
            problems.push(format!("mounted but not documented: {path}"));
            continue;
        }
        for method in METHODS {
            let is_documented = documented.contains(&(method.to_owned(), path.clone()));
            if !is_documented && probe(http, base, method, &concrete(&path)).await {
                problems.push(format!("answers but is not documented: {method} {path}"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(!documented.is_empty(), "the document has no operation");
}

/// The service at `base` serves `document` at `/openapi.json`; the document lists exactly the
/// routes and methods that `routes` mounts beside the docs; `/docs` renders it under a policy
/// that allows nothing else. Returns the mounted routes.
pub async fn assert_documents_its_routes(
    http: &reqwest::Client,
    base: &str,
    document: utoipa::openapi::OpenApi,
    routes: impl FnOnce(&mut actix_web::web::ServiceConfig),
) -> Vec<String> {
    let expected = serde_json::to_value(&document).expect("the document serialises");
    let doc = served_document(http, base, expected).await;
    let mounted = service_kit::openapi::mounted_routes(|cfg| {
        cfg.configure(service_kit::openapi::mount(
            service_kit::openapi::Docs::new(&document),
        ));
        routes(cfg);
    })
    .await;
    assert_document_matches_routes(http, base, &doc, &mounted).await;
    let page = http
        .get(format!("{base}/docs"))
        .send()
        .await
        .expect("GET /docs");
    assert_eq!(page.status(), 200);
    let policy = crate::http::header(&page, "content-security-policy").unwrap_or_default();
    assert!(policy.contains("default-src 'none'"), "{policy}");
    let html = page.text().await.expect("the docs page");
    assert!(html.contains("fetch(\"openapi.json\""), "{html}");
    mounted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates() {
        assert_eq!(concrete("/me/a/{id}/end"), "/me/a/openapi-probe/end");
        assert_eq!(normalise("/files/{name:.*}"), "/files/{name}");
        assert_eq!(normalise("/me/a/{id}"), "/me/a/{id}");
        assert_eq!(normalise("/x:y"), "/x:y");
    }
}
