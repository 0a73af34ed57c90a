//! `POST /api/auth/sign-in/email`.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::helpers::{spawn_app, spawn_counting};

#[tokio::test]
async fn signs_in_with_the_right_password() {
    let app = spawn_app().await;
    app.sign_up("anna@example.com", "correct-horse").await;
    let resp = app.sign_in(" ANNA@example.com", "correct-horse").await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    assert_eq!(resp.body["redirect"], false);
    assert!(resp.body.get("url").is_none());
    assert_eq!(resp.body["user"]["email"], "anna@example.com");
    let token = resp.body["token"].as_str().expect("token");
    let cookie = resp.session_cookie().expect("cookie");
    assert!(cookie.contains(token));
    assert_eq!(app.count("auth.session"), 2, "a session per sign-in");

    let resp = app
        .post(
            "/api/auth/sign-in/email",
            json!({ "email": "anna@example.com", "password": "correct-horse", "callbackURL": "/plan", "rememberMe": false }),
            None,
        )
        .await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.body["redirect"], true);
    assert_eq!(resp.body["url"], "/plan");
    let set = resp.session_set_cookie().expect("cookie");
    assert!(
        !set.contains("Max-Age"),
        "not remembered: a browser-session cookie: {set}"
    );
}

#[tokio::test]
async fn every_credential_failure_is_the_same_401() {
    let app = spawn_app().await;
    app.sign_up("bob@example.com", "right-password").await;
    let wrong = app.sign_in("bob@example.com", "wrong-password").await;
    let unknown = app.sign_in("nobody@example.com", "wrong-password").await;
    for resp in [&wrong, &unknown] {
        assert_eq!(resp.status, 401, "{}", resp.text);
        assert_eq!(resp.body, wrong.body);
        assert!(resp.session_set_cookie().is_none());
    }
    assert_eq!(
        wrong.body,
        json!({ "code": "INVALID_EMAIL_OR_PASSWORD", "message": "Invalid email or password" })
    );
    assert_eq!(app.count("auth.session"), 1, "only the sign-up's session");
}

/// One failed sign-in, timed.
async fn timed(app: &crate::helpers::TestApp, email: &str) -> Duration {
    let start = Instant::now();
    let resp = app.sign_in(email, "not-the-password").await;
    assert_eq!(resp.status, 401);
    start.elapsed()
}

#[tokio::test]
async fn an_unknown_address_costs_as_much_as_a_wrong_password() {
    let app = spawn_app().await;
    app.sign_up("carla@example.com", "right-password").await;
    // Interleaved, so that load from other tests slows both kinds alike.
    let (mut known, mut unknown) = (Vec::new(), Vec::new());
    for _ in 0..9 {
        known.push(timed(&app, "carla@example.com").await);
        unknown.push(timed(&app, "nobody@example.com").await);
    }
    known.sort();
    unknown.sort();
    let (known, unknown) = (known[4], unknown[4]);
    // Without the decoy hash an unknown address would answer in a small fraction of the time.
    let ratio = unknown.as_secs_f64() / known.as_secs_f64();
    assert!(
        (0.5..2.0).contains(&ratio),
        "median known {known:?}, unknown {unknown:?}"
    );
}

/// The database work of a refused sign-in does not depend on whether the address belongs to
/// someone: the same statements, counted on the wire between the service and Postgres.
#[tokio::test]
async fn a_known_and_an_unknown_address_cost_the_same_statements() {
    let app = spawn_counting(&[]).await;
    app.sign_up("erin@example.com", "right-password").await;
    app.sign_up("gina@example.com", "right-password").await;
    // An account signed up with Google only: a user without a password.
    app.sql(
        "UPDATE auth.account SET provider_id = 'google', account_id = 'g-1', password = NULL \
         WHERE user_id = (SELECT id FROM auth.\"user\" WHERE email = 'gina@example.com')",
    );
    let cost = |email: &'static str| {
        let app = &app;
        async move {
            let before = app.proxy.statements();
            let r = app.sign_in(email, "wrong-password").await;
            assert_eq!(r.status, 401, "{}", r.text);
            app.proxy.statements() - before
        }
    };
    let mut seen = Vec::new();
    for _ in 0..3 {
        for email in ["erin@example.com", "nobody@example.com", "gina@example.com"] {
            seen.push((email, cost(email).await));
        }
    }
    println!("statements per refused sign-in: {seen:?}");
    let first = seen[0].1;
    assert!(first >= 3, "{seen:?}");
    assert!(seen.iter().all(|(_, n)| *n == first), "{seen:?}");
}

#[tokio::test]
async fn callback_urls_must_stay_on_trusted_origins() {
    let app = spawn_app().await;
    app.sign_up("dora@example.com", "right-password").await;
    let sign_in_then = async |callback: &str| {
        let credentials = json!({ "email": "dora@example.com", "password": "right-password", "callbackURL": callback });
        app.post("/api/auth/sign-in/email", credentials, None).await
    };
    for bad in [
        "https://evil.example.com/",
        "//evil.example.com",
        "javascript:alert(1)",
    ] {
        let resp = sign_in_then(bad).await;
        assert_eq!(
            resp.status_and_code(),
            (403, Some("INVALID_CALLBACK_URL")),
            "{bad}"
        );
    }
    let ok = sign_in_then("http://localhost:8080/plan").await;
    assert_eq!(ok.status, 200);
}
