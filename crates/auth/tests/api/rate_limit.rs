//! Sign-in and sign-up rate limits, per client address and per e-mail address, shared by all
//! replicas through Postgres.

use serde_json::json;

use crate::helpers::{TestApp, read, spawn_auth_replica, spawn_with};

fn limits(max: u32, window: u32) -> Vec<(String, String)> {
    vec![
        ("AUTH_RATE_LIMIT_MAX".into(), max.to_string()),
        ("AUTH_RATE_LIMIT_WINDOW_SECS".into(), window.to_string()),
        ("TRUSTED_PROXIES".into(), "127.0.0.1".into()),
    ]
}

async fn attempt(
    app_base: &str,
    app: &TestApp,
    email: &str,
    client_ip: &str,
) -> crate::helpers::Resp {
    read(
        app.http
            .post(format!("{app_base}/api/auth/sign-in/email"))
            .header("x-forwarded-for", client_ip)
            .json(&json!({ "email": email, "password": "wrong-password" }))
            .send()
            .await
            .expect("POST"),
    )
    .await
}

#[tokio::test]
async fn per_address_limit_with_retry_after() {
    let app = spawn_with(&limits(3, 10)).await;
    for i in 0..3 {
        let r = attempt(
            &app.base,
            &app,
            &format!("user{i}@example.com"),
            "198.51.100.7",
        )
        .await;
        assert_eq!(r.status, 401, "attempt {i}");
    }
    let limited = attempt(&app.base, &app, "user9@example.com", "198.51.100.7").await;
    assert_eq!(
        (limited.status, limited.body["code"].as_str()),
        (429, Some("RATE_LIMITED"))
    );
    let retry: u64 = limited
        .header("retry-after")
        .and_then(|v| v.parse().ok())
        .expect("Retry-After");
    assert!((1..=10).contains(&retry), "{retry}");
    assert_eq!(
        limited.header("x-retry-after"),
        Some(retry.to_string()),
        "the header better-auth's client reads"
    );
    assert_eq!(
        limited.body["message"],
        "Too many requests. Please try again later."
    );
    // The counters name neither the client address nor the e-mail address.
    let keys = app
        .scalar("SELECT string_agg(key, ' ') AS v FROM auth.rate_limit")
        .unwrap_or_default();
    assert!(keys.contains("sign-in:ip:"), "{keys}");
    for clear in ["198.51.100.7", "user0@example.com", "example.com"] {
        assert!(!keys.contains(clear), "{clear} stored in clear: {keys}");
    }
    // Another client address is not affected.
    let other = attempt(&app.base, &app, "user9@example.com", "198.51.100.8").await;
    assert_eq!(other.status, 401);
}

#[tokio::test]
async fn per_email_limit_across_addresses() {
    let app = spawn_with(&limits(3, 10)).await;
    for i in 0..3 {
        let r = attempt(
            &app.base,
            &app,
            "target@example.com",
            &format!("203.0.113.{i}"),
        )
        .await;
        assert_eq!(r.status, 401);
    }
    let limited = attempt(&app.base, &app, "TARGET@example.com", "203.0.113.99").await;
    assert_eq!(
        limited.status, 429,
        "the address is normalised before counting"
    );
}

#[tokio::test]
async fn two_instances_share_the_limit_and_the_window_ends() {
    let app = spawn_with(&limits(3, 2)).await;
    let replica = spawn_auth_replica(&app, &limits(3, 2)).await;
    assert_eq!(
        attempt(&app.base, &app, "a@example.com", "192.0.2.1")
            .await
            .status,
        401
    );
    assert_eq!(
        attempt(&replica.base, &app, "b@example.com", "192.0.2.1")
            .await
            .status,
        401
    );
    assert_eq!(
        attempt(&app.base, &app, "c@example.com", "192.0.2.1")
            .await
            .status,
        401
    );
    assert_eq!(
        attempt(&replica.base, &app, "d@example.com", "192.0.2.1")
            .await
            .status,
        429
    );
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    assert_eq!(
        attempt(&replica.base, &app, "e@example.com", "192.0.2.1")
            .await
            .status,
        401
    );
}

#[tokio::test]
async fn sign_up_is_limited_too() {
    let app = spawn_with(&limits(2, 10)).await;
    for i in 0..2 {
        let r = app
            .post("/api/auth/sign-up/email", json!({ "name": "N", "email": format!("n{i}@example.com"), "password": "password-1" }), None)
            .await;
        assert_eq!(r.status, 200);
    }
    let r = app
        .post(
            "/api/auth/sign-up/email",
            json!({ "name": "N", "email": "n9@example.com", "password": "password-1" }),
            None,
        )
        .await;
    assert_eq!(r.status, 429);
    assert_eq!(app.count("auth.\"user\""), 2);
}
