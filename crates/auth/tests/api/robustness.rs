//! Hostile input never produces a 500 and never writes anything.

use crate::helpers::{send, spawn_app};

#[tokio::test]
async fn malformed_bodies_are_400_naming_the_field() {
    let app = spawn_app().await;
    let cases: [(&str, &str, &str); 7] = [
        ("/api/auth/sign-up/email", "{", "malformed"),
        (
            "/api/auth/sign-up/email",
            r#"{"name":"a","email":"a@b.co","password":12345678}"#,
            "password",
        ),
        (
            "/api/auth/sign-up/email",
            r#"{"name":"a","email":"a@b.co","password":"12345678","admin":true}"#,
            "admin",
        ),
        (
            "/api/auth/sign-up/email",
            r#"{"email":"a@b.co","password":"12345678"}"#,
            "name",
        ),
        (
            "/api/auth/sign-in/email",
            r#"{"email":["x"],"password":"p"}"#,
            "email",
        ),
        ("/api/auth/sign-in/email", r#"[]"#, "expected struct"),
        ("/api/auth/sign-in/social", r#"{"provider":1}"#, "provider"),
    ];
    for (path, body, mentions) in cases {
        let resp = send(
            app.http
                .post(app.url(path))
                .header("content-type", "application/json")
                .body(body),
        )
        .await;
        assert_eq!(
            resp.status_and_code(),
            (400, Some("VALIDATION_ERROR")),
            "{path} {body}: {}",
            resp.text
        );
        let message = resp.body["message"].as_str().unwrap_or_default();
        assert!(message.contains(mentions), "{path} {body}: {message}");
    }
    let empty = send(app.http.post(app.url("/api/auth/sign-in/email"))).await;
    assert_eq!(empty.status, 400);
    assert_eq!(app.count("auth.\"user\""), 0);
}

#[tokio::test]
async fn oversized_bodies_are_refused() {
    let app = spawn_app().await;
    let huge = format!(
        r#"{{"name":"{}","email":"a@b.co","password":"12345678"}}"#,
        "x".repeat(200_000)
    );
    let resp = send(
        app.http
            .post(app.url("/api/auth/sign-up/email"))
            .header("content-type", "application/json")
            .body(huge),
    )
    .await;
    assert_eq!(resp.status, 413, "{}", resp.text);
    assert_eq!(resp.body["code"], "PAYLOAD_TOO_LARGE");
    assert_eq!(app.count("auth.\"user\""), 0);
}

#[tokio::test]
async fn wrong_methods_and_bad_queries_are_4xx() {
    let app = spawn_app().await;
    let resp = app.get("/api/auth/sign-in/email", None).await;
    assert_eq!(resp.status_and_code(), (405, Some("METHOD_NOT_ALLOWED")));
    let resp = app.get("/api/auth/nothing-here", None).await;
    assert_eq!(resp.status, 404);
    let resp = app
        .get("/api/auth/callback/google?code=%ZZ&state=%", None)
        .await;
    assert!(resp.status < 500, "{}", resp.status);
    let resp = app.get("/sign-in?error=%FF%FE", None).await;
    assert!(resp.status < 500);
}
