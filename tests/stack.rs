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

    // Query strings can carry capabilities (OAuth codes, signed download addresses): the services
    // log the request's path, never its query.
    let (status, _) = get_json(&format!(
        "{base}/api/auth/callback/google?code=SECRET-CODE-123&state=STATE-456"
    ))
    .await;
    assert_eq!(status, 302);
    let log = stack.auth.log();
    assert!(
        log.contains("Google sign-in failed") && log.contains("/api/auth/callback/google"),
        "{log}"
    );
    assert!(
        !log.contains("SECRET-CODE-123") && !log.contains("STATE-456"),
        "{log}"
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
    let set_cookie = testkit::http::header(&resp, "set-cookie").expect("cookie");
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dinner_through_nginx_starts_the_preferred_fast() {
    let stack = start_stack().await;
    let base = stack.base();
    let http = client();
    let resp = http
        .post(format!("{base}/api/auth/sign-up/email"))
        .json(&json!({ "name": "Cena", "email": "cena@example.com", "password": "through-nginx" }))
        .send()
        .await
        .expect("sign up");
    let cookie = testkit::http::header(&resp, "set-cookie")
        .and_then(|c| c.split(';').next().map(str::to_owned))
        .expect("cookie");
    let send = |method: reqwest::Method, path: &str, body: Option<serde_json::Value>| {
        let mut req = http
            .request(method, format!("{base}{path}"))
            .header("cookie", &cookie)
            .header("origin", &base);
        if let Some(b) = body {
            req = req.json(&b);
        }
        async move {
            let r = req.send().await.expect("request");
            let status = r.status().as_u16();
            (
                status,
                r.json::<serde_json::Value>().await.unwrap_or_default(),
            )
        }
    };
    let (status, prefs) = send(
        reqwest::Method::PATCH,
        "/me/preferences",
        Some(json!({ "fastingProtocol": "16:8" })),
    )
    .await;
    assert_eq!(
        (status, prefs["fastingProtocol"].as_str()),
        (200, Some("16:8"))
    );
    let today = domain::rome::local_date(chrono::Utc::now()).to_string();
    let (status, plan) = send(
        reqwest::Method::POST,
        "/me/meal-plans",
        Some(json!({ "intermittentFasting": false, "days": [{ "date": today, "slots": [{ "category": "PRA" }, { "category": "CENA", "title": "Minestrone" }] }] })),
    )
    .await;
    assert_eq!(status, 201, "{plan}");
    let dinner = plan["days"][0]["slots"][1]["id"]
        .as_str()
        .expect("slot")
        .to_owned();
    let (status, consumed) = send(
        reqwest::Method::POST,
        &format!("/me/meal-plans/slots/{dinner}/consumed"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{consumed}");
    let fast_id = consumed["autoStartedFast"]["id"]
        .as_str()
        .expect("the dinner started a fast")
        .to_owned();
    let (status, current) = send(reqwest::Method::GET, "/me/fast-events/current", None).await;
    assert_eq!(status, 200);
    assert_eq!(current["id"], json!(fast_id));
    assert_eq!(current["protocol"], "16:8");
    assert_eq!(current["autoStarted"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_desktop_app_activates_and_consumes_through_nginx() {
    let stack = start_stack().await;
    let base = stack.base();
    // An operator creates a licence by hand, as the running service's admin command.
    let out = testkit::process::run(
        &testkit::stack::bin("licence-server"),
        &[
            "admin",
            "create",
            "--email",
            "desk@example.com",
            "--plan",
            "basic",
            "--no-email",
        ],
        &[("DATABASE_URL", stack.my.url())],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let created: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let key = created["key"].as_str().expect("key").to_owned();

    let http = client();
    let activated: serde_json::Value = http
        .post(format!("{base}/api/license/activate"))
        .json(&json!({ "licenseKey": key, "instanceId": "desk-1", "instanceName": "Studio" }))
        .send()
        .await
        .expect("activate")
        .json()
        .await
        .expect("JSON");
    assert_eq!(activated["activated"], true, "{activated}");
    assert_eq!(activated["license"]["plan"], "basic");
    let token = activated["token"].as_str().expect("token").to_owned();
    let consumed = http
        .post(format!("{base}/api/usage/consume"))
        .bearer_auth(&token)
        .send()
        .await
        .expect("consume");
    assert_eq!(consumed.status(), 200);
    let status: serde_json::Value = http
        .get(format!("{base}/api/usage/status"))
        .bearer_auth(&token)
        .send()
        .await
        .expect("status")
        .json()
        .await
        .expect("JSON");
    assert_eq!(
        (status["used"].as_i64(), status["limit"].as_i64()),
        (Some(1), Some(10)),
        "{status}"
    );
    let (code, latest) = get_json(&format!("{base}/api/latest")).await;
    assert!(
        code == 200 || code == 503,
        "the release route is routed to the licence server: {code} {latest}"
    );
}
