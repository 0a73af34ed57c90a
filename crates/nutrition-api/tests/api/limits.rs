//! Work and storage per user are bounded: devices, the test push, meal plans and the pause
//! history, also under parallel requests and across replicas.

use std::time::Duration;

use chrono::Utc;
use futures_util::future::join_all;
use push::VapidKeyPair;
use reqwest::Method;
use serde_json::json;
use testkit::push_service::{Answer, FakePushService, FakeSubscription};

use crate::helpers::{Resp, TestApp, User, spawn_app, spawn_with};

fn vapid_env() -> Vec<(String, String)> {
    let pair = VapidKeyPair::generate();
    vec![
        ("VAPID_PUBLIC_KEY".into(), pair.public_key.clone()),
        (
            "VAPID_PRIVATE_KEY".into(),
            pair.private_key.expose().to_owned(),
        ),
        ("VAPID_SUBJECT".into(), "mailto:ops@example.com".into()),
        ("PUSH_ALLOW_HTTP_ENDPOINTS".into(), "true".into()),
    ]
}

async fn register(app: &TestApp, u: &User, sub: &FakeSubscription) -> Resp {
    app.post(
        "/me/device-tokens",
        u,
        json!({ "platform": "web", "endpoint": sub.endpoint, "keys": { "p256dh": sub.p256dh, "auth": sub.auth } }),
    )
    .await
}

fn devices_of(app: &TestApp, u: &User) -> i64 {
    app.count(&format!(
        "SELECT count(*) AS n FROM nutrition.device_token WHERE user_id = '{}'",
        u.id
    ))
}

fn has_device(app: &TestApp, u: &User, sub: &FakeSubscription) -> bool {
    app.count(&format!(
        "SELECT count(*) AS n FROM nutrition.device_token WHERE user_id = '{}' AND endpoint = '{}'",
        u.id, sub.endpoint
    )) == 1
}

async fn test_push(app: &TestApp, base: &str, u: &User) -> Resp {
    app.call_on(base, Method::POST, "/me/notifications/test", Some(u), None)
        .await
}

#[tokio::test]
async fn at_most_twenty_devices_the_least_recently_seen_is_replaced() {
    let app = spawn_with(&vapid_env()).await;
    let push = FakePushService::start().await;
    let u = app.user("many@example.com");
    let subs: Vec<FakeSubscription> = (0..25).map(|_| push.subscribe()).collect();
    for (i, sub) in subs.iter().enumerate() {
        let r = register(&app, &u, sub).await;
        assert_eq!(r.status, 201, "device {i}: {}", r.text);
        // lastSeenAt must differ between devices for "least recently seen" to mean something.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(devices_of(&app, &u), 20);
    for (i, sub) in subs.iter().enumerate() {
        assert_eq!(has_device(&app, &u, sub), i >= 5, "device {i}");
    }
    // Seeing a device again makes it the most recent: the next newcomer replaces the one after it.
    assert_eq!(register(&app, &u, &subs[5]).await.status, 201);
    let newcomer = push.subscribe();
    assert_eq!(register(&app, &u, &newcomer).await.status, 201);
    assert_eq!(devices_of(&app, &u), 20);
    assert!(has_device(&app, &u, &subs[5]), "seen again, kept");
    assert!(
        !has_device(&app, &u, &subs[6]),
        "least recently seen, replaced"
    );
    assert!(has_device(&app, &u, &newcomer));

    // Thirty registrations at once still leave twenty.
    let v = app.user("parallel@example.com");
    let subs: Vec<FakeSubscription> = (0..30).map(|_| push.subscribe()).collect();
    let answers = join_all(subs.iter().map(|s| register(&app, &v, s))).await;
    assert!(answers.iter().all(|r| r.status == 201), "{answers:?}");
    assert_eq!(devices_of(&app, &v), 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_push_is_rate_limited_per_user_across_replicas() {
    let env = vapid_env();
    let app = spawn_with(&env).await;
    let other = app.replica(&env).await;
    let push = FakePushService::start().await;
    let u = app.user("rl@example.com");
    assert_eq!(register(&app, &u, &push.subscribe()).await.status, 201);
    // Five per ten minutes, whichever replica answers.
    for i in 0..5 {
        let base = if i % 2 == 0 { &app.base } else { &other };
        let r = test_push(&app, base, &u).await;
        assert_eq!(r.status, 200, "push {i}: {}", r.text);
    }
    for base in [&app.base, &other] {
        let r = test_push(&app, base, &u).await;
        r.assert_code(429, "RATE_LIMITED");
        let retry: u64 = r
            .header("retry-after")
            .and_then(|v| v.parse().ok())
            .expect("Retry-After in seconds");
        assert!((1..=600).contains(&retry), "{retry}");
        assert_eq!(r.header("x-retry-after"), r.header("retry-after"));
        assert!(
            r.body["message"].as_str().unwrap_or_default().contains('5'),
            "the message names the limit: {}",
            r.text
        );
    }
    assert_eq!(push.all_received().len(), 5, "refused pushes send nothing");
    // Another user has a budget of their own.
    let v = app.user("rl2@example.com");
    assert_eq!(test_push(&app, &other, &v).await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_push_sends_a_bounded_number_at_once() {
    let app = spawn_with(&vapid_env()).await;
    let push = FakePushService::start().await;
    let u = app.user("fan@example.com");
    for _ in 0..12 {
        let sub = push.subscribe();
        push.respond(&sub, Answer::Slow(Duration::from_millis(400)));
        assert_eq!(register(&app, &u, &sub).await.status, 201);
    }
    let r = test_push(&app, &app.base, &u).await;
    assert_eq!(
        r.body,
        json!({ "sent": 12, "removed": 0, "failed": 0 }),
        "{}",
        r.text
    );
    assert!(
        push.max_in_flight() <= 4,
        "one test push sends to at most 4 devices at once, saw {}",
        push.max_in_flight()
    );

    // Many users at once: the process as a whole keeps at most 16 sends in flight.
    let mut users = Vec::new();
    for i in 0..6 {
        let v = app.user(&format!("fan{i}@example.com"));
        for _ in 0..12 {
            let sub = push.subscribe();
            push.respond(&sub, Answer::Slow(Duration::from_millis(400)));
            assert_eq!(register(&app, &v, &sub).await.status, 201);
        }
        users.push(v);
    }
    let answers = join_all(users.iter().map(|v| test_push(&app, &app.base, v))).await;
    let sent: u64 = answers
        .iter()
        .map(|r| r.body["sent"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(sent, 72, "{answers:?}");
    assert!(
        push.max_in_flight() <= 16,
        "at most 16 test sends in flight per process, saw {}",
        push.max_in_flight()
    );
}

fn plan_on(date: chrono::NaiveDate) -> serde_json::Value {
    json!({ "intermittentFasting": false, "days": [{ "date": date.to_string(), "slots": [{ "category": "PRA" }] }] })
}

fn plans_of(app: &TestApp, u: &User) -> i64 {
    app.count(&format!(
        "SELECT count(*) AS n FROM nutrition.meal_plan WHERE user_id = '{}'",
        u.id
    ))
}

#[tokio::test]
async fn meal_plans_are_capped_at_fifty_ended_ones_making_room() {
    let app = spawn_app().await;
    let tomorrow = domain::rome::local_date(Utc::now()) + chrono::Duration::days(1);
    let u = app.user("plans@example.com");
    for i in 0..50 {
        let r = app.post("/me/meal-plans", &u, plan_on(tomorrow)).await;
        assert_eq!(r.status, 201, "plan {i}: {}", r.text);
    }
    let r = app.post("/me/meal-plans", &u, plan_on(tomorrow)).await;
    r.assert_error(409, "MEAL_PLAN_LIMIT_REACHED", "50");
    assert_eq!(plans_of(&app, &u), 50);

    // Plans whose days are all past make room for a new one, the oldest first.
    let w = app.user("history@example.com");
    let long_ago = chrono::NaiveDate::from_ymd_opt(2024, 1, 1).expect("date");
    let mut first_id = None;
    for i in 0..50 {
        let r = app
            .post(
                "/me/meal-plans",
                &w,
                plan_on(long_ago + chrono::Duration::days(i)),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
        first_id.get_or_insert(r.body["id"].as_str().unwrap_or_default().to_owned());
    }
    let r = app.post("/me/meal-plans", &w, plan_on(tomorrow)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(plans_of(&app, &w), 50);
    let first = first_id.expect("first plan");
    assert_eq!(
        app.get(&format!("/me/meal-plans/{first}"), &w).await.status,
        404,
        "the plan that ended first made room"
    );

    // Sixty at once: fifty are made, the rest refused.
    let x = app.user("rush@example.com");
    let answers =
        join_all((0..60).map(|_| app.post("/me/meal-plans", &x, plan_on(tomorrow)))).await;
    let made = answers.iter().filter(|r| r.status == 201).count();
    let refused = answers.iter().filter(|r| r.status == 409).count();
    assert_eq!((made, refused), (50, 10));
    assert_eq!(plans_of(&app, &x), 50);
}

#[tokio::test]
async fn the_pause_history_keeps_one_row_per_day() {
    let app = spawn_app().await;
    let u = app.user("pauses@example.com");
    for i in 0..40 {
        let body = if i % 2 == 0 {
            json!({})
        } else {
            json!({ "until": null })
        };
        let r = app.post("/me/fasting/pause", &u, body).await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    let r = app.post("/me/fasting/pause", &u, json!({})).await;
    assert_eq!(r.body["paused"], true);
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM nutrition.pause_period WHERE user_id = '{}'",
            u.id
        )),
        1,
        "pauses touching the same days are one span"
    );
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM nutrition.pause_period WHERE user_id = '{}'
               AND starts_at <= now() AND ends_at > now()",
            u.id
        )),
        1,
        "and it runs now"
    );
}
