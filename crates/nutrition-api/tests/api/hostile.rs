//! Input Postgres would refuse (a NUL character, invalid UTF-8, dates outside its range) is
//! refused first with a 4xx in the contract's shape, on every route, and changes nothing.

use push::VapidKeyPair;
use reqwest::Method;
use serde_json::{Value, json};
use testkit::push_service::FakePushService;

use crate::helpers::{Resp, spawn_with};

fn assert_refused(r: &Resp, what: &str) {
    assert!(
        (400..500).contains(&r.status),
        "{what}: {} {}",
        r.status,
        r.text
    );
    assert!(
        r.body["code"].is_string() && r.body["message"].is_string(),
        "{what}: contract body expected, got {}",
        r.text
    );
}

#[tokio::test]
async fn nul_and_invalid_utf8_in_paths_and_queries_are_4xx() {
    let pair = VapidKeyPair::generate();
    let app = spawn_with(&[
        ("VAPID_PUBLIC_KEY".into(), pair.public_key.clone()),
        (
            "VAPID_PRIVATE_KEY".into(),
            pair.private_key.expose().to_owned(),
        ),
        ("VAPID_SUBJECT".into(), "mailto:ops@example.com".into()),
        ("PUSH_ALLOW_HTTP_ENDPOINTS".into(), "true".into()),
    ])
    .await;
    let u = app.user("nul@example.com");
    let symptoms = json!({ "symptoms": { "energy": 5 } });
    for bad in ["a%00b", "%00", "%FF", "%C3%28", "x%ED%A0%80"] {
        let cases: Vec<(Method, String, Option<Value>)> = vec![
            (Method::GET, format!("/me/fast-events/{bad}"), None),
            (
                Method::PATCH,
                format!("/me/fast-events/{bad}"),
                Some(symptoms.clone()),
            ),
            (Method::POST, format!("/me/fast-events/{bad}/end"), None),
            (
                Method::GET,
                format!("/me/fast-events/{bad}/break-fast-suggestions"),
                None,
            ),
            (Method::GET, format!("/me/meal-plans/{bad}"), None),
            (
                Method::POST,
                format!("/me/meal-plans/slots/{bad}/consumed"),
                None,
            ),
            (
                Method::DELETE,
                format!("/me/meal-plans/slots/{bad}/consumed"),
                None,
            ),
            (Method::GET, format!("/me/recipes/{bad}"), None),
            (Method::GET, format!("/me/fast-events?before={bad}"), None),
            (Method::GET, format!("/me/fast-events?limit={bad}"), None),
            (Method::GET, format!("/me/recipes?category={bad}"), None),
            (Method::GET, format!("/me/preferences?x={bad}"), None),
        ];
        for (method, path, body) in cases {
            let r = app.call(method.clone(), &path, Some(&u), body).await;
            assert_refused(&r, &format!("{method} {path}"));
        }
    }
}

#[tokio::test]
async fn nul_in_bodies_is_4xx_and_changes_nothing() {
    let pair = VapidKeyPair::generate();
    let app = spawn_with(&[
        ("VAPID_PUBLIC_KEY".into(), pair.public_key.clone()),
        (
            "VAPID_PRIVATE_KEY".into(),
            pair.private_key.expose().to_owned(),
        ),
        ("VAPID_SUBJECT".into(), "mailto:ops@example.com".into()),
        ("PUSH_ALLOW_HTTP_ENDPOINTS".into(), "true".into()),
    ])
    .await;
    let push = FakePushService::start().await;
    let sub = push.subscribe();
    let u = app.user("body@example.com");
    let fast = app
        .post("/me/fast-events", &u, json!({ "protocol": "16:8" }))
        .await;
    assert_eq!(fast.status, 201, "{}", fast.text);
    let id = fast.body["id"].as_str().expect("id").to_owned();
    let r = app
        .patch(
            &format!("/me/fast-events/{id}"),
            &u,
            json!({ "symptoms": { "note": "a\u{0}b", "energy": 4 } }),
        )
        .await;
    assert_refused(&r, "symptom note with NUL");
    assert!(
        r.body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("symptoms.note"),
        "names the field: {}",
        r.text
    );
    assert_eq!(
        app.get(&format!("/me/fast-events/{id}"), &u).await.body["symptoms"],
        Value::Null,
        "nothing stored"
    );

    let device = |endpoint: &str, token: Option<&str>| json!({ "platform": "web", "endpoint": endpoint, "keys": { "p256dh": sub.p256dh, "auth": sub.auth }, "token": token });
    let with_nul = format!("{}\u{0}x", sub.endpoint);
    for body in [
        device(&sub.endpoint, Some("tok\u{0}en")),
        device(&with_nul, None),
        json!({ "platform": "web\u{0}", "endpoint": sub.endpoint, "keys": { "p256dh": sub.p256dh, "auth": sub.auth } }),
        json!({ "platform": "web", "endpoint": sub.endpoint, "keys": { "p256dh": format!("{}\u{0}", sub.p256dh), "auth": sub.auth } }),
    ] {
        let r = app.post("/me/device-tokens", &u, body.clone()).await;
        assert_refused(&r, &format!("register {body}"));
    }
    let r = app
        .call(
            Method::DELETE,
            "/me/device-tokens",
            Some(&u),
            Some(json!({ "endpoint": with_nul })),
        )
        .await;
    assert_refused(&r, "remove an endpoint with NUL");
    assert_eq!(
        app.count("SELECT count(*) AS n FROM nutrition.device_token"),
        0
    );

    for body in [
        json!({ "intermittentFasting": false, "days": [{ "date": "2026-12-01", "slots": [{ "category": "PRA", "title": "pa\u{0}sta" }] }] }),
        json!({ "intermittentFasting": false, "days": [{ "date": "2026-12-01", "slots": [{ "category": "PRA", "recipeId": "x\u{0}" }] }] }),
        json!({ "fastingProtocol": "16:8\u{0}" }),
    ] {
        let path = if body.get("days").is_some() {
            "/me/meal-plans"
        } else {
            "/me/preferences"
        };
        let method = if path == "/me/meal-plans" {
            Method::POST
        } else {
            Method::PATCH
        };
        let r = app.call(method, path, Some(&u), Some(body.clone())).await;
        assert_refused(&r, &format!("{path} {body}"));
    }
    // A key with NUL is an unknown field like any other.
    let r = app
        .raw(
            Method::PATCH,
            "/me/notifications/settings",
            &u,
            r#"{"meal\u0000Reminders": true}"#,
        )
        .await;
    assert_refused(&r, "key with NUL");
    // The text `\u0000` (an escaped backslash before it) is six harmless characters.
    let r = app
        .raw(
            Method::PATCH,
            &format!("/me/fast-events/{id}"),
            &u,
            r#"{"symptoms": {"note": "a\\u0000b"}}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["symptoms"]["note"], "a\\u0000b");
}

#[tokio::test]
async fn dates_outside_the_databases_range_are_4xx() {
    let app = crate::helpers::spawn_app().await;
    let u = app.user("dates@example.com");
    for date in [
        "-5000-01-01",
        "-0001-12-31",
        "0000-01-01",
        "+10000-01-01",
        "+262142-12-31",
        "10000-01-01",
    ] {
        let r = app
            .post(
                "/me/meal-plans",
                &u,
                json!({ "intermittentFasting": false, "days": [{ "date": date, "slots": [{ "category": "PRA" }] }] }),
            )
            .await;
        assert_refused(&r, &format!("plan day {date}"));
        assert!(
            r.body["message"]
                .as_str()
                .unwrap_or_default()
                .contains("days[0].date"),
            "names the field: {}",
            r.text
        );
    }
    assert_eq!(
        app.count("SELECT count(*) AS n FROM nutrition.meal_plan"),
        0
    );
    for before in [
        "0000-01-01T00:00:00Z",
        "0001-01-01T00:00:00%2B23:59",
        "-5000-01-01T00:00:00Z",
        "%2B275760-09-13T00:00:00Z",
        "99999-01-01T00:00:00Z",
    ] {
        let r = app
            .get(&format!("/me/fast-events?before={before}"), &u)
            .await;
        assert_refused(&r, &format!("before={before}"));
    }
    // The extremes of the accepted range work.
    for before in ["0001-01-02T00:00:00Z", "9999-12-31T00:00:00Z"] {
        let r = app
            .get(&format!("/me/fast-events?before={before}"), &u)
            .await;
        assert_eq!(r.status, 200, "before={before}: {}", r.text);
    }
    for body in [
        json!({ "protocol": "16:8", "startedAt": "0000-01-01T00:00:00Z" }),
        json!({ "protocol": "16:8", "startedAt": "+275760-09-13T00:00:00Z" }),
    ] {
        let r = app.post("/me/fast-events", &u, body.clone()).await;
        assert_refused(&r, &format!("{body}"));
    }
    for body in [
        json!({ "until": "0000-01-01T00:00:00Z" }),
        json!({ "until": "+275760-09-13T00:00:00Z" }),
    ] {
        let r = app.post("/me/fasting/pause", &u, body.clone()).await;
        assert_refused(&r, &format!("{body}"));
    }
}

/// A body dripped one byte at a time, each byte well within the idle timeout, still ends at the
/// whole-body deadline: otherwise one client could hold a connection (and its buffer) for days
/// where the service is reachable without nginx in front.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_dripped_byte_by_byte_ends_at_the_whole_body_deadline() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = spawn_with(&[
        ("REQUEST_BODY_TIMEOUT_SECS".into(), "2".into()),
        ("REQUEST_BODY_DEADLINE_SECS".into(), "3".into()),
    ])
    .await;
    let u = app.user("drip@example.com");
    let addr = app.base.trim_start_matches("http://").to_owned();
    let mut stream = tokio::net::TcpStream::connect(&addr)
        .await
        .expect("connect");
    let head = format!(
        "POST /me/fast-events HTTP/1.1\r\nHost: {addr}\r\nOrigin: {}\r\nCookie: {}\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n",
        crate::helpers::BASE_URL,
        u.cookie
    );
    stream.write_all(head.as_bytes()).await.expect("head");
    let started = std::time::Instant::now();
    let mut answer = Vec::new();
    for _ in 0..12 {
        if stream.write_all(b" ").await.is_err() {
            break;
        }
        let mut buf = [0u8; 1024];
        if let Ok(Ok(n)) =
            tokio::time::timeout(std::time::Duration::from_millis(700), stream.read(&mut buf)).await
        {
            answer.extend_from_slice(&buf[..n]);
            break;
        }
    }
    let text = String::from_utf8_lossy(&answer);
    assert!(
        text.starts_with("HTTP/1.1 408"),
        "no 408 after {:?}: {text}",
        started.elapsed()
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
}
