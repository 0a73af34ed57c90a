//! The trusted-origin check on cookie-carrying writes, in auth and nutrition-api.

use crate::helpers::{BASE_URL, send, spawn_app, spawn_nutrition, spawn_with};

#[tokio::test]
async fn foreign_origins_are_refused_and_change_nothing() {
    let app = spawn_app().await;
    let api = spawn_nutrition(&app).await;
    let (cookie, _) = app.sign_up("ugo@example.com", "password-123").await;
    let sign_out = app.url("/api/auth/sign-out");
    for (name, value) in [
        ("origin", "https://evil.example.com"),
        ("referer", "https://evil.example.com/page"),
        ("origin", "null"),
    ] {
        let resp = send(
            app.http
                .post(&sign_out)
                .header("cookie", &cookie)
                .header(name, value),
        )
        .await;
        assert_eq!(
            resp.status_and_code(),
            (403, Some("INVALID_ORIGIN")),
            "{name}: {value}"
        );
    }
    // No Origin or Referer at all, with a cookie: refused too.
    let resp = send(app.http.post(&sign_out).header("cookie", &cookie)).await;
    assert_eq!(resp.status, 403);
    assert_eq!(
        app.count("auth.session"),
        1,
        "the session survived every forged sign-out"
    );

    // nutrition-api applies the same rule to its writes.
    let resp = send(
        app.http
            .post(format!("{}/me", api.base))
            .header("cookie", &cookie)
            .header("origin", "https://evil.example.com"),
    )
    .await;
    assert_eq!(resp.status_and_code(), (403, Some("INVALID_ORIGIN")));

    // The trusted origin, via Referer as well, passes.
    let ok = send(
        app.http
            .post(&sign_out)
            .header("cookie", &cookie)
            .header("referer", format!("{BASE_URL}/settings")),
    )
    .await;
    assert_eq!(ok.status, 200);
}

#[tokio::test]
async fn configured_extra_origins_are_trusted() {
    let app = spawn_with(&[(
        "AUTH_TRUSTED_ORIGINS".into(),
        "https://m.example.com".into(),
    )])
    .await;
    let (cookie, _) = app.sign_up("vera@example.com", "password-123").await;
    let resp = send(
        app.http
            .post(app.url("/api/auth/sign-out"))
            .header("cookie", &cookie)
            .header("origin", "https://m.example.com"),
    )
    .await;
    assert_eq!(resp.status, 200);
}
