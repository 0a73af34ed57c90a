//! Fasts people can correct: past fasts, corrected times, deletion, import, and retried writes.

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{TestApp, User, spawn_app};

fn at(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Whole hours ago, on the hour, so that times compare as written.
fn hours_ago(h: i64) -> DateTime<Utc> {
    let now = Utc::now().timestamp();
    DateTime::from_timestamp(now - now % 3600, 0).expect("an instant") - Duration::hours(h)
}

async fn past(
    app: &TestApp,
    u: &User,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
) -> crate::helpers::Resp {
    app.post(
        "/me/fast-events",
        u,
        json!({"protocol": "16:8", "startedAt": at(start), "endedAt": at(end)}),
    )
    .await
}

#[tokio::test]
async fn past_fasts_obey_the_span_and_overlap_rules() {
    let app = spawn_app().await;
    let u = app.user("past@example.com");
    let r = past(&app, &u, hours_ago(60), hours_ago(43)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.body["status"], "COMPLETED");
    assert_eq!(r.body["endedAt"], at(hours_ago(43)));
    let r = past(&app, &u, hours_ago(30), hours_ago(20)).await;
    assert_eq!(r.body["status"], "ENDED_EARLY");

    // Half-open: one may start at the instant another ended, not a second earlier.
    let r = past(&app, &u, hours_ago(43), hours_ago(35)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = past(&app, &u, hours_ago(44), hours_ago(40)).await;
    r.assert_code(409, "FAST_OVERLAP");
    let r = past(&app, &u, hours_ago(70), hours_ago(10)).await;
    r.assert_code(409, "FAST_OVERLAP");

    // Order, future, 365 days.
    let r = past(&app, &u, hours_ago(5), hours_ago(6)).await;
    r.assert_code(400, "VALIDATION_ERROR");
    let r = past(&app, &u, hours_ago(2), Utc::now() + Duration::hours(2)).await;
    r.assert_code(400, "VALIDATION_ERROR");
    let r = past(
        &app,
        &u,
        Utc::now() - Duration::days(366),
        Utc::now() - Duration::days(365) - Duration::hours(1),
    )
    .await;
    r.assert_code(400, "VALIDATION_ERROR");
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM nutrition.fast_event WHERE user_id = '{}'",
            u.id
        )),
        3
    );

    // A running fast overlaps everything after its start.
    let r = app
        .post(
            "/me/fast-events",
            &u,
            json!({"protocol": "16:8", "startedAt": at(hours_ago(3))}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = past(&app, &u, hours_ago(4), hours_ago(2)).await;
    r.assert_code(409, "FAST_OVERLAP");
    // The past fast sends nothing: no milestone waits on it.
    assert_eq!(
        app.count(&format!("SELECT count(*) AS n FROM nutrition.fast_event WHERE user_id = '{}' AND status <> 'IN_PROGRESS' AND next_milestone_at IS NOT NULL", u.id)),
        0
    );
}

#[tokio::test]
async fn parallel_past_fasts_that_overlap_leave_one() {
    let app = spawn_app().await;
    let u = app.user("past-parallel@example.com");
    let tries = (0..8).map(|i| past(&app, &u, hours_ago(40 + i), hours_ago(20 + i)));
    let answers = futures_util::future::join_all(tries).await;
    assert_eq!(answers.iter().filter(|r| r.status == 201).count(), 1);
    for r in answers.iter().filter(|r| r.status != 201) {
        r.assert_code(409, "FAST_OVERLAP");
    }
}

#[tokio::test]
async fn a_corrected_start_changes_the_status_the_streak_and_the_statistics() {
    let app = spawn_app().await;
    let u = app.user("correct@example.com");
    // Ended early at 14 h of a planned 16.
    let r = past(&app, &u, hours_ago(20), hours_ago(6)).await;
    let id = r.body["id"].as_str().expect("id").to_owned();
    assert_eq!(r.body["status"], "ENDED_EARLY");
    let before = app.get("/me/fasting/stats", &u).await.body;
    assert_eq!(before["completedSessions"], 0);

    // "I started two hours earlier and forgot to press start."
    let r = app
        .patch(
            &format!("/me/fast-events/{id}"),
            &u,
            json!({"startedAt": at(hours_ago(22))}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "COMPLETED");
    assert_eq!(r.body["startedAt"], at(hours_ago(22)));
    assert_eq!(r.body["plannedEndAt"], at(hours_ago(6)));
    let after = app.get("/me/fasting/stats", &u).await.body;
    assert_eq!(after["completedSessions"], 1);
    assert_eq!(after["completionRate"], 1.0);
    assert_eq!(after["currentStreak"], 1, "{after}");

    // A protocol correction computes the status again.
    let r = app
        .patch(
            &format!("/me/fast-events/{id}"),
            &u,
            json!({"protocol": "18:6"}),
        )
        .await;
    assert_eq!(r.body["status"], "ENDED_EARLY");
    // An end for a running fast, times out of order, another's fast: refused, nothing changes.
    let r = app
        .patch(
            &format!("/me/fast-events/{id}"),
            &u,
            json!({"endedAt": at(hours_ago(23))}),
        )
        .await;
    r.assert_code(400, "VALIDATION_ERROR");
    let r = app
        .patch(&format!("/me/fast-events/{id}"), &u, json!({}))
        .await;
    r.assert_code(400, "VALIDATION_ERROR");
    let other = app.user("correct-other@example.com");
    let r = app
        .patch(
            &format!("/me/fast-events/{id}"),
            &other,
            json!({"protocol": "16:8"}),
        )
        .await;
    r.assert_code(404, "NOT_FOUND");

    // Deleting it takes it out of the statistics.
    let r = app.delete(&format!("/me/fast-events/{id}"), &u).await;
    assert_eq!(r.status, 204);
    let gone = app.get("/me/fasting/stats", &u).await.body;
    assert_eq!(gone["totalSessions"], 0);
    let r = app.delete(&format!("/me/fast-events/{id}"), &u).await;
    r.assert_code(404, "NOT_FOUND");
}

#[tokio::test]
async fn moving_a_running_fasts_start_back_sends_no_milestone_it_skips() {
    let app = spawn_app().await;
    let u = app.user("correct-running@example.com");
    let r = app
        .post("/me/fast-events", &u, json!({"protocol": "16:8"}))
        .await;
    let id = r.body["id"].as_str().expect("id").to_owned();
    let r = app
        .patch(
            &format!("/me/fast-events/{id}"),
            &u,
            json!({"startedAt": at(hours_ago(5))}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "IN_PROGRESS");
    let notified: Vec<&str> = r.body["notifiedMilestones"]
        .as_array()
        .expect("milestones")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        notified,
        ["hydration_2h", "hydration_4h"],
        "past milestones count as sent"
    );
    // The next one the scheduler looks for is the 6 h one, still ahead.
    assert_eq!(
        app.count(&format!("SELECT count(*) AS n FROM nutrition.fast_event WHERE id = '{id}' AND next_milestone_at > now()")),
        1
    );
}

const ZERO: &str = "Date,Start,End,Hours,Night Eating\n\
    1/17/25,19:15,12:00,16,1\n\
    1/16/25,19:45,10:14,14,2\n\
    1/16/25,21:00,09:00,12,0\n\
    not a date,19:00,12:00,16,0\n";

#[tokio::test]
async fn a_zero_file_imports_once_with_its_skipped_lines() {
    let app = spawn_app().await;
    let u = app.user("zero@example.com");
    let r = app.import(&u, ZERO).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["imported"], 2);
    assert_eq!(
        r.body["skipped"],
        json!([{"line": 4, "reason": "overlaps another fast"}, {"line": 5, "reason": "Date is not a date"}])
    );
    let list = app.get("/me/fast-events?limit=10", &u).await;
    assert_eq!(
        list.body["items"][0]["startedAt"],
        "2025-01-17T18:15:00.000Z"
    );
    assert_eq!(list.body["items"][0]["endedAt"], "2025-01-18T11:00:00.000Z");
    assert_eq!(list.body["items"][0]["status"], "COMPLETED");
    // Again: nothing new.
    let r = app.import(&u, ZERO).await;
    assert_eq!(r.body["imported"], 0);
    assert_eq!(
        r.body["skipped"][0],
        json!({"line": 2, "reason": "already recorded"})
    );
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM nutrition.fast_event WHERE user_id = '{}'",
            u.id
        )),
        2
    );
}

#[tokio::test]
async fn import_refuses_what_is_not_a_history() {
    let app = spawn_app().await;
    let u = app.user("import-bad@example.com");
    app.import(&u, "a,b\n1,2\n")
        .await
        .assert_code(400, "VALIDATION_ERROR");
    let big = format!("Date,Start,End\n{}", "1/1/21,20:00,12:00\n".repeat(5001));
    app.import(&u, &big)
        .await
        .assert_code(413, "PAYLOAD_TOO_LARGE");
    let huge = format!("Date,Start,End\n{}", "x".repeat(1024 * 1024));
    app.import(&u, &huge)
        .await
        .assert_code(413, "PAYLOAD_TOO_LARGE");
    let r = app
        .raw(Method::POST, "/me/fast-events/import", &u, "{}")
        .await;
    r.assert_code(415, "UNSUPPORTED_MEDIA_TYPE");
    assert_eq!(
        app.count("SELECT count(*) AS n FROM nutrition.fast_event"),
        0
    );
}

#[tokio::test]
async fn an_exported_history_imported_into_a_new_account_gives_the_same_statistics() {
    let app = spawn_app().await;
    let a = app.user("export-from@example.com");
    for (start, end) in [(200, 184), (170, 150), (120, 110), (60, 40), (30, 14)] {
        let r = past(&app, &a, hours_ago(start), hours_ago(end)).await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
    let csv = app
        .http
        .get(format!("{}/me/export?format=csv", app.base))
        .header("cookie", &a.cookie)
        .send()
        .await
        .expect("export")
        .text()
        .await
        .expect("csv");
    let b = app.user("export-to@example.com");
    let r = app.import(&b, &csv).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["imported"], 5, "{}", r.text);
    let mut stats_a = app.get("/me/fasting/stats", &a).await.body;
    let mut stats_b = app.get("/me/fasting/stats", &b).await.body;
    assert_eq!(stats_a, stats_b);
    stats_a["totalSessions"] = Value::Null;
    stats_b["totalSessions"] = Value::Null;
    assert_eq!(stats_a, stats_b);
}

#[tokio::test]
async fn a_retried_write_answers_the_first_result_once_under_parallel_retries() {
    let app = spawn_app().await;
    let u = app.user("retry@example.com");
    let tries = (0..8).map(|_| {
        app.keyed(
            Method::POST,
            "/me/fast-events",
            &u,
            "start-1",
            json!({"protocol": "16:8"}),
        )
    });
    let answers = futures_util::future::join_all(tries).await;
    let first = &answers[0];
    assert_eq!(first.status, 201, "{}", first.text);
    for r in &answers {
        assert_eq!(r.status, 201, "{}", r.text);
        assert_eq!(r.body["id"], first.body["id"]);
    }
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM nutrition.fast_event WHERE user_id = '{}'",
            u.id
        )),
        1
    );
    let id = first.body["id"].as_str().expect("id").to_owned();

    let end_path = format!("/me/fast-events/{id}/end");
    let end = |k: &'static str| app.keyed(Method::POST, &end_path, &u, k, json!({}));
    let (e1, e2) = tokio::join!(end("end-1"), end("end-1"));
    assert_eq!(
        (e1.status, e2.status),
        (200, 200),
        "{} {}",
        e1.text,
        e2.text
    );
    assert_eq!(e1.body, e2.body);
    // The same key for another request is refused.
    let r = app
        .keyed(Method::POST, "/me/water", &u, "end-1", json!({"ml": 250}))
        .await;
    r.assert_code(422, "IDEMPOTENCY_KEY_REUSED");

    let drinks =
        (0..6).map(|_| app.keyed(Method::POST, "/me/water", &u, "drink-1", json!({"ml": 250})));
    let answers = futures_util::future::join_all(drinks).await;
    assert!(
        answers
            .iter()
            .all(|r| r.status == 201 && r.body["id"] == answers[0].body["id"])
    );
    assert_eq!(app.get("/me/water", &u).await.body["totalMl"], 250);

    let w = |k: &'static str| app.keyed(Method::POST, "/me/weights", &u, k, json!({"kg": 70.0}));
    let (w1, w2) = tokio::join!(w("weight-1"), w("weight-1"));
    assert_eq!(w1.body["id"], w2.body["id"]);

    // A refusal is not remembered: the same key is judged again.
    let r = app
        .keyed(
            Method::POST,
            "/me/water",
            &u,
            "too-much",
            json!({"ml": 5000}),
        )
        .await;
    r.assert_code(400, "VALIDATION_ERROR");
    let r = app
        .keyed(
            Method::POST,
            "/me/water",
            &u,
            "too-much",
            json!({"ml": 500}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    // Keys are bounded.
    let long = "k".repeat(65);
    let r = app
        .keyed(Method::POST, "/me/water", &u, &long, json!({"ml": 500}))
        .await;
    r.assert_code(400, "VALIDATION_ERROR");
}
