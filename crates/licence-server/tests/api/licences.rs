//! Activate, validate and deactivate.

use futures_util::future::join_all;
use serde_json::{Value, json};

use licence_server::clock::Clock;

use crate::helpers::{TestApp, assert_error, spawn_app};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn activation_answers_token_instance_and_licence() {
    let app = spawn_app().await;
    let key = app.licence("pro", "active");
    let (status, body) = app.activate(&key, "mac-1").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["activated"], true);
    assert!(
        body["token"]
            .as_str()
            .is_some_and(|t| t.split('.').count() == 3)
    );
    let exp = body["tokenExpiresAt"].as_str().expect("tokenExpiresAt");
    assert!(exp.ends_with('Z') && chrono::DateTime::parse_from_rfc3339(exp).is_ok());
    assert_eq!(body["instance"], json!({"id": "mac-1", "name": "Test Mac"}));
    let licence = &body["license"];
    assert_eq!(licence["key"], key.as_str());
    assert_eq!(licence["status"], "active");
    assert_eq!(licence["plan"], "pro");
    assert_eq!(
        licence["features"],
        json!(["audio", "video", "image", "export"])
    );
    assert_eq!(licence["dailyQuota"], 30);
    assert_eq!(licence["activationLimit"], 3);
    assert_eq!(licence["activationUsage"], 1);
    assert_eq!(licence["expiresAt"], serde_json::Value::Null);

    // The snake_case twins, a lower-case key, and the same instance again: same slot.
    let (status, again) = app
        .post(
            "/api/license/activate",
            &json!({"license_key": key.to_lowercase(), "instance_id": "mac-1", "instance_name": "Renamed"}),
            None,
        )
        .await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["license"]["activationUsage"], 1);
    assert_eq!(again["instance"]["name"], "Renamed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn activation_errors() {
    let app = spawn_app().await;
    let (s, b) = app.activate("NOPE2-NOPE2-NOPE2-NOPE2-NOPE2", "i").await;
    assert_error(s, &b, 404, "LICENSE_NOT_FOUND");

    for status in ["expired", "unpaid", "paused", "refunded"] {
        let key = app.licence("basic", status);
        let (s, b) = app.activate(&key, "i").await;
        assert_error(s, &b, 403, "LICENSE_INACTIVE");
    }

    let key = app.licence("basic", "past_due");
    for i in 0..3 {
        let (s, b) = app.activate(&key, &format!("pc-{i}")).await;
        assert_eq!(s, 200, "{b}");
    }
    let (s, b) = app.activate(&key, "pc-4").await;
    assert_error(s, &b, 409, "ACTIVATION_LIMIT_REACHED");
    // An installation already holding a slot still gets in.
    assert_eq!(app.activate(&key, "pc-1").await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_bodies_are_400_naming_the_field() {
    let app = spawn_app().await;
    let cases = [
        (
            json!({"licenseKey": "K", "instanceId": "i", "extra": 1}),
            "extra",
        ),
        (json!({"licenseKey": 5, "instanceId": "i"}), "licenseKey"),
        (json!({"licenseKey": "K"}), "instanceId"),
        (
            json!({"licenseKey": "K", "instanceId": "i", "instanceName": ["x"]}),
            "instanceName",
        ),
        (json!({"licenseKey": "K", "instanceId": "  "}), "instanceId"),
        (json!({"licenseKey": "", "instanceId": "i"}), "licenseKey"),
        (
            json!({"licenseKey": "K", "instanceId": "x".repeat(192)}),
            "instanceId",
        ),
        (
            json!({"licenseKey": "K", "license_key": "K", "instanceId": "i"}),
            "license",
        ),
    ];
    for (body, field) in cases {
        for path in [
            "/api/license/activate",
            "/api/license/validate",
            "/api/license/deactivate",
        ] {
            if path != "/api/license/activate" && field == "instanceName" {
                continue;
            }
            let (s, b) = app.post(path, &body, None).await;
            assert_error(s, &b, 400, "VALIDATION_ERROR");
            assert!(
                b["message"].as_str().unwrap_or("").contains(field),
                "{path} {body}: {b}"
            );
        }
    }
    for raw in [
        "{",
        "[]",
        "null",
        "\"x\"",
        "{\"licenseKey\": \"K\", \"instanceId\": \"i\"} x",
    ] {
        let (s, b) = app.post_raw("/api/license/activate", raw).await;
        assert_error(s, &b, 400, "VALIDATION_ERROR");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_concurrent_activations_take_exactly_three_slots() {
    let app = spawn_app().await;
    let key = app.licence("premium", "active");
    let attempts = (0..20).map(|i| {
        let app = &app;
        let key = key.clone();
        async move { app.activate(&key, &format!("machine-{i}")).await }
    });
    let results = join_all(attempts).await;
    let ok = results.iter().filter(|(s, _)| *s == 200).count();
    let refused = results
        .iter()
        .filter(|(s, b)| *s == 409 && b["code"] == "ACTIVATION_LIMIT_REACHED")
        .count();
    assert_eq!((ok, refused), (3, 17), "{results:?}");
    assert_eq!(app.count("activation"), 3);
    // The licence's seat count, kept by triggers, agrees with the rows, and validate reports it.
    let winner = results
        .iter()
        .position(|(s, _)| *s == 200)
        .map(|i| format!("machine-{i}"))
        .expect("a winner");
    assert_eq!(app.seats_seen_by_validate(&key, &winner).await, 3);
}

/// Validate reads the seat count from the licence row, which triggers keep with every insert and
/// delete of an activation: after activations, a deactivation and another activation it must
/// equal the rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validate_counts_the_seats_every_change_left() {
    let app = spawn_app().await;
    let key = app.licence("pro", "active");
    app.token(&key, "a").await;
    assert_eq!(app.seats_seen_by_validate(&key, "a").await, 1);
    app.token(&key, "b").await;
    app.token(&key, "c").await;
    assert_eq!(app.seats_seen_by_validate(&key, "a").await, 3);
    let (s, b) = app.deactivate(&key, "b").await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(app.seats_seen_by_validate(&key, "c").await, 2);
    app.token(&key, "d").await;
    assert_eq!(app.seats_seen_by_validate(&key, "d").await, 3);
    assert_eq!(app.count("activation"), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validation_by_token_or_key_returns_a_fresh_token() {
    let app = spawn_app().await;
    let key = app.licence("basic", "on_trial");
    let token = app.token(&key, "laptop").await;

    app.clock.advance(chrono::Duration::seconds(5));
    // With a token, whatever body comes along is not looked at.
    let (s, b) = app
        .post("/api/license/validate", &json!(null), Some(&token))
        .await;
    assert_eq!(s, 200, "{b}");

    let (s, b) = validate_authorized(&app, Some(&format!("Bearer {token}"))).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["valid"], true);
    assert_ne!(b["token"], token.as_str(), "a fresh token");
    assert_eq!(b["license"]["plan"], "basic");
    assert_eq!(b["license"]["features"], json!(["audio"]));

    let (s, b) = app
        .post("/api/license/validate", &snake_case(&key, "laptop"), None)
        .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["valid"], true);

    let (s, b) = app.validate(&key, "other").await;
    assert_error(s, &b, 403, "INSTANCE_NOT_ACTIVE");
    assert_eq!(b["valid"], false);

    let (s, b) = app
        .validate("ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ", "laptop")
        .await;
    assert_error(s, &b, 404, "LICENSE_NOT_FOUND");

    // Neither a token nor a body; a token that is not one; another scheme.
    let (s, b) = validate_authorized(&app, None).await;
    assert_error(s, &b, 401, "INVALID_TOKEN");
    let (s, b) = app
        .post(
            "/api/license/validate",
            &json!({"licenseKey": key, "instanceId": "laptop"}),
            Some("garbage"),
        )
        .await;
    assert_error(s, &b, 401, "INVALID_TOKEN");
    let (s, b) = validate_authorized(&app, Some(&format!("Basic {token}"))).await;
    assert_error(s, &b, 401, "INVALID_TOKEN");
}

/// A licence key and installation named in snake_case, which the routes take as well.
fn snake_case(key: &str, instance: &str) -> Value {
    json!({"license_key": key, "instance_id": instance})
}

/// A validation without a body whose `Authorization` header, if any, is `authorization`; the
/// answer.
async fn validate_authorized(app: &TestApp, authorization: Option<&str>) -> (u16, Value) {
    let mut req = app
        .client
        .post(format!("{}/api/license/validate", app.base));
    if let Some(value) = authorization {
        req = req.header("authorization", value);
    }
    crate::helpers::answer(req.send().await.expect("POST")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validation_follows_the_licence_state() {
    let app = spawn_app().await;
    let key = app.licence("pro", "active");
    let token = app.token(&key, "desk").await;
    let mut conn = app.conn();
    use diesel::prelude::*;
    use licence_server::schema::licence;
    diesel::update(licence::table.filter(licence::license_key.eq(&key)))
        .set(licence::status.eq("expired"))
        .execute(&mut conn)
        .expect("expire");
    let (s, b) = app.validate_by_token(&token).await;
    assert_error(s, &b, 403, "LICENSE_INACTIVE");
    assert_eq!(b["valid"], false);

    // A cancelled subscription runs to its end.
    let ends = app.clock.now() + chrono::Duration::days(3);
    diesel::update(licence::table.filter(licence::license_key.eq(&key)))
        .set((
            licence::status.eq("cancelled"),
            licence::expires_at.eq(Some(ends.naive_utc())),
        ))
        .execute(&mut conn)
        .expect("cancel");
    let (s, b) = app.validate_by_token(&token).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["license"]["status"], "cancelled");
    app.clock.advance(chrono::Duration::days(3));
    let (s, b) = app.validate(&key, "desk").await;
    assert_error(s, &b, 403, "LICENSE_INACTIVE");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deactivation_frees_the_slot() {
    let app = spawn_app().await;
    let key = app.licence("pro", "active");
    let token = app.token(&key, "a").await;
    app.token(&key, "b").await;
    app.token(&key, "c").await;
    assert_eq!(app.activate(&key, "d").await.0, 409);

    let (s, b) = app.deactivate(&key, "b").await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["deactivated"], true);
    assert_eq!(b["license"]["activationUsage"], 2);
    assert_eq!(app.activate(&key, "d").await.0, 200);

    let (s, b) = app.deactivate_by_token(&token, None).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["license"]["activationUsage"], 2);
    // The token's installation is gone.
    let (s, b) = app.validate_by_token(&token).await;
    assert_error(s, &b, 403, "INSTANCE_NOT_ACTIVE");
    let (s, b) = app.deactivate_by_token(&token, None).await;
    assert_error(s, &b, 404, "INSTANCE_NOT_FOUND");
    let (s, b) = app
        .post("/api/license/deactivate", &snake_case(&key, "zzz"), None)
        .await;
    assert_error(s, &b, 404, "INSTANCE_NOT_FOUND");
    let (s, b) = app.deactivate("QQQQQ-QQQQQ-QQQQQ-QQQQQ-QQQQQ", "a").await;
    assert_error(s, &b, 404, "INSTANCE_NOT_FOUND");
}

/// Many installations validating at once: while a worker has its statements in flight, the seats
/// asked for meanwhile are read together in one statement, and each answer is still its own
/// licence's, with its own seat. In the same crowd, an installation deactivated since its token
/// was issued and a licence disabled since are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seats_read_together_each_answer_their_own_licence() {
    use diesel::prelude::*;
    use licence_server::schema::licence;
    let app = spawn_app().await;
    let plans = ["basic", "pro", "premium"];
    let mut valid = Vec::new();
    for i in 0..18 {
        let key = app.licence(plans[i % 3], "active");
        let token = app.token(&key, &format!("pc-{i}")).await;
        valid.push((key, plans[i % 3], token));
    }
    let gone_key = app.licence("pro", "active");
    let gone = app.token(&gone_key, "pc").await;
    let (s, _) = app.deactivate(&gone_key, "pc").await;
    assert_eq!(s, 200);
    let disabled_key = app.licence("pro", "active");
    let disabled = app.token(&disabled_key, "pc").await;
    diesel::update(licence::table.filter(licence::license_key.eq(&disabled_key)))
        .set(licence::disabled_at.eq(Some(app.clock.now().naive_utc())))
        .execute(&mut app.conn())
        .expect("disable");
    // A replica of its own, whose limit lets the whole crowd from this one address through.
    let base = app
        .start_instance_with(&[("LICENCE_RATE_LIMIT_PER_MINUTE", "100000")])
        .await;
    let together = app
        .metric("db_requests_together_total{kind=\"validate\"}")
        .await;
    let mut asks: Vec<(usize, &str)> = Vec::new();
    for _ in 0..6 {
        asks.extend(valid.iter().enumerate().map(|(i, v)| (i, v.2.as_str())));
        asks.push((18, &gone));
        asks.push((19, &disabled));
    }
    let (app, base) = (&app, &base);
    let results = join_all(
        asks.iter()
            .map(|(i, token)| async move { (*i, app.validate_at(base, token).await) }),
    )
    .await;
    for (i, (s, b)) in &results {
        match *i {
            18 => assert_error(*s, b, 403, "INSTANCE_NOT_ACTIVE"),
            19 => assert_error(*s, b, 403, "LICENSE_INACTIVE"),
            i => {
                let (key, plan, _) = &valid[i];
                assert_eq!(*s, 200, "{b}");
                assert_eq!(
                    (&b["license"]["key"], &b["license"]["plan"]),
                    (&json!(key), &json!(plan)),
                    "{b}"
                );
                assert_eq!(b["license"]["activationUsage"], 1, "{b}");
            }
        }
    }
    assert!(
        app.metric("db_requests_together_total{kind=\"validate\"}")
            .await
            > together,
        "some seats were read together"
    );
}
