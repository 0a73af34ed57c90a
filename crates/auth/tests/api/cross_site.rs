//! Sign-up, sign-in and social sign-in refuse cross-site requests, with and without cookies.

use serde_json::json;

use crate::helpers::{BASE_URL, send, spawn_app};

#[tokio::test]
async fn cross_site_sign_in_and_sign_up_are_refused() {
    let app = spawn_app().await;
    app.sign_up("tea@example.com", "password-123").await;
    let sign_in = json!({ "email": "tea@example.com", "password": "password-123" });
    let sign_up = json!({ "name": "N", "email": "new@example.com", "password": "password-123" });
    let cases: [(&[(&str, &str)], &str); 5] = [
        (&[("origin", "https://evil.example.com")], "INVALID_ORIGIN"),
        (
            &[("referer", "https://evil.example.com/page")],
            "INVALID_ORIGIN",
        ),
        (
            &[("origin", "null"), ("sec-fetch-site", "cross-site")],
            "MISSING_OR_NULL_ORIGIN",
        ),
        (
            &[
                ("sec-fetch-site", "cross-site"),
                ("sec-fetch-mode", "navigate"),
            ],
            "MISSING_OR_NULL_ORIGIN",
        ),
        (
            &[
                ("cookie", "digiuno.session_token=x.y"),
                ("origin", "https://evil.example.com"),
            ],
            "INVALID_ORIGIN",
        ),
    ];
    for (path, body) in [
        ("/api/auth/sign-in/email", &sign_in),
        ("/api/auth/sign-up/email", &sign_up),
    ] {
        for (headers, code) in &cases {
            let mut req = app.http.post(app.url(path)).json(body);
            for (k, v) in *headers {
                req = req.header(*k, *v);
            }
            let resp = send(req).await;
            assert_eq!(resp.status, 403, "{path} {headers:?}: {}", resp.text);
            assert_eq!(resp.body["code"], *code, "{path} {headers:?}");
            assert!(resp.session_set_cookie().is_none());
        }
    }
    assert_eq!(app.count("auth.session"), 1, "only the first sign-up's");
    assert_eq!(app.count("auth.\"user\""), 1);
    let resp = send(
        app.http
            .post(app.url("/api/auth/sign-in/email"))
            .header("origin", "https://evil.example.com")
            .json(&sign_in),
    )
    .await;
    assert_eq!(
        resp.body,
        json!({ "code": "INVALID_ORIGIN", "message": "Invalid origin" })
    );

    // The site itself, a browser's same-origin post, and a client without any browser headers.
    for headers in [
        vec![
            ("origin", BASE_URL),
            ("sec-fetch-site", "same-origin"),
            ("sec-fetch-mode", "cors"),
        ],
        vec![],
    ] {
        let mut req = app
            .http
            .post(app.url("/api/auth/sign-in/email"))
            .json(&sign_in);
        for (k, v) in &headers {
            req = req.header(*k, *v);
        }
        let resp = send(req).await;
        assert_eq!(resp.status, 200, "{headers:?}: {}", resp.text);
    }
}

#[tokio::test]
async fn sign_in_with_a_malformed_address_is_invalid_email() {
    let app = spawn_app().await;
    let resp = app.sign_in("not an address", "password-123").await;
    assert_eq!(resp.status, 400);
    assert_eq!(
        resp.body,
        json!({ "code": "INVALID_EMAIL", "message": "Invalid email" })
    );
}
