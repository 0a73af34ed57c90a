//! The stack behind nginx: routing, a browser-like sign-up reaching `/me`, and clean stops.

mod common;

use std::time::Duration;

use serde_json::json;
use testkit::http::{client, get_json};

use common::start_stack;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn services_answer_behind_nginx_and_stop_cleanly_on_sigterm() {
    let mut stack = start_stack().await;
    let base = stack.base();

    let (status, body) = get_json(&format!("{base}/api/auth/ok")).await;
    assert_eq!(
        (status, &body),
        (200, &json!({ "ok": true })),
        "{}",
        stack.auth.log()
    );
    let (status, body) = get_json(&format!("{base}/api/health")).await;
    assert_eq!(status, 200, "licence-server's historical probe: {body}");
    let (status, body) = get_json(&format!("{base}/me")).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (401, Some("UNAUTHORIZED")),
        "nutrition-api's guard answers"
    );

    // Routes the proxy does not know, and the services' internal probes, are not exposed.
    for path in ["/ready", "/health", "/api/nothing"] {
        let (status, body) = get_json(&format!("{base}{path}")).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (404, Some("NOT_FOUND")),
            "{path}"
        );
    }

    // SIGTERM: each service drains and exits 0.
    for process in [
        &mut stack.nutrition,
        &mut stack.auth,
        &mut stack.scheduler,
        &mut stack.licence,
    ] {
        let status = process.terminate(Duration::from_secs(20));
        let name = process.name().to_owned();
        assert!(
            status.is_some_and(|s| s.success()),
            "{name} did not exit 0 on SIGTERM: {status:?}\n{}",
            process.log()
        );
    }
    let (status, body) = get_json(&format!("{base}/me")).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (503, Some("SERVICE_UNAVAILABLE")),
        "nginx reports the stopped upstream"
    );
    for port in stack.ports {
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
            "port {port} still open"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_up_through_nginx_then_me_with_the_browsers_cookie() {
    let stack = start_stack().await;
    let base = stack.base();
    let http = client();
    let resp = http
        .post(format!("{base}/api/auth/sign-up/email"))
        .header("origin", &base)
        .header("user-agent", "e2e-browser/1.0")
        .json(&json!({ "name": "End To End", "email": "E2E@Example.com", "password": "through-nginx" }))
        .send()
        .await
        .expect("sign up");
    assert_eq!(resp.status(), 200);
    let set_cookie = resp
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .expect("cookie")
        .to_owned();
    assert!(
        set_cookie.starts_with("digiuno.session_token="),
        "{set_cookie}"
    );
    let cookie = set_cookie.split(';').next().expect("pair").to_owned();

    let me = http
        .get(format!("{base}/me"))
        .header("cookie", &cookie)
        .send()
        .await
        .expect("GET /me");
    assert_eq!(me.status(), 200);
    let body: serde_json::Value = me.json().await.expect("JSON");
    assert_eq!(body["user"]["email"], "e2e@example.com");
    assert_eq!(body["session"]["userAgent"], "e2e-browser/1.0");
    assert_eq!(
        body["session"]["ipAddress"], "127.0.0.1",
        "the address nginx saw, via X-Forwarded-For"
    );

    // Sign-out through nginx ends the session for the API too.
    let out = http
        .post(format!("{base}/api/auth/sign-out"))
        .header("cookie", &cookie)
        .header("origin", &base)
        .send()
        .await
        .expect("sign out");
    assert_eq!(out.status(), 200);
    let me = http
        .get(format!("{base}/me"))
        .header("cookie", &cookie)
        .send()
        .await
        .expect("GET /me");
    assert_eq!(me.status(), 401);
    assert!(!stack.pg.url().is_empty());
}
