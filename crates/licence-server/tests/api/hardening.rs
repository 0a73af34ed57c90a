//! Hostile and unlucky traffic: wrong methods, refunds that overtake their order, a cold release
//! cache under a burst, and clients hammering the licence routes.

use serde_json::json;

use crate::helpers::{assert_error, spawn_app};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_method_is_405_not_404() {
    let app = spawn_app().await;
    let cases = [
        ("GET", "/api/license/activate"),
        ("GET", "/api/license/validate"),
        ("PUT", "/api/license/deactivate"),
        ("POST", "/api/latest"),
        ("DELETE", "/api/download"),
        ("GET", "/api/webhook/lemonsqueezy"),
        ("GET", "/api/usage/consume"),
        ("POST", "/api/usage/status"),
        ("POST", "/api/health"),
    ];
    for (method, path) in cases {
        let resp = app
            .client
            .request(
                method.parse().expect("method"),
                format!("{}{path}", app.base),
            )
            .body("{}")
            .send()
            .await
            .expect("request");
        let status = resp.status().as_u16();
        let body: serde_json::Value = resp.json().await.unwrap_or(json!(null));
        assert_eq!(status, 405, "{method} {path}: {body}");
        assert_error(status, &body, 405, "METHOD_NOT_ALLOWED");
    }
}
