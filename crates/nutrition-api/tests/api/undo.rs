//! Taking back a fast ended a moment ago, and answers no cache may keep.

use reqwest::Method;
use serde_json::json;

use crate::helpers::{TestApp, User, spawn_app};

async fn start(app: &TestApp, u: &User) -> String {
    let r = app
        .post("/me/fast-events", u, json!({ "protocol": "16:8" }))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    r.body["id"].as_str().expect("id").to_owned()
}

async fn end(app: &TestApp, u: &User, id: &str) {
    let r = app
        .post(&format!("/me/fast-events/{id}/end"), u, json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
}

#[tokio::test]
async fn a_fast_ended_by_mistake_resumes_within_ten_minutes() {
    let app = spawn_app().await;
    let u = app.user("resume@example.com");
    let id = start(&app, &u).await;
    let before = app.get(&format!("/me/fast-events/{id}"), &u).await.body;
    end(&app, &u, &id).await;

    let r = app
        .post(&format!("/me/fast-events/{id}/resume"), &u, json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "IN_PROGRESS");
    assert_eq!(r.body["endedAt"], serde_json::Value::Null);
    assert_eq!(r.body["startedAt"], before["startedAt"]);
    assert_eq!(r.body["plannedEndAt"], before["plannedEndAt"]);
    let current = app.get("/me/fast-events/current", &u).await;
    assert_eq!(current.body["id"].as_str(), Some(id.as_str()));

    // It runs: resuming it again is refused, and so is any other fast.
    let again = app
        .post(&format!("/me/fast-events/{id}/resume"), &u, json!({}))
        .await;
    again.assert_code(409, "FAST_ALREADY_RUNNING");

    // Another person's fast is unknown here.
    let other = app.user("resume-other@example.com");
    let r = app
        .post(&format!("/me/fast-events/{id}/resume"), &other, json!({}))
        .await;
    r.assert_code(404, "NOT_FOUND");
    let r = app.post("/me/fast-events/nope/resume", &u, json!({})).await;
    assert_eq!(r.status, 404);

    // Ten minutes after the end it is history.
    end(&app, &u, &id).await;
    app.sql(&format!(
        "UPDATE nutrition.fast_event SET ended_at = ended_at - interval '601 seconds' WHERE id = '{id}'"
    ));
    let late = app
        .post(&format!("/me/fast-events/{id}/resume"), &u, json!({}))
        .await;
    late.assert_code(422, "TOO_LATE_TO_RESUME");
    assert_eq!(
        app.get(&format!("/me/fast-events/{id}"), &u).await.body["status"],
        "ENDED_EARLY"
    );
}

#[tokio::test]
async fn resuming_is_refused_while_another_fast_runs_or_came_after() {
    let app = spawn_app().await;
    let u = app.user("resume-two@example.com");
    let first = start(&app, &u).await;
    end(&app, &u, &first).await;
    let second = start(&app, &u).await;
    let r = app
        .post(&format!("/me/fast-events/{first}/resume"), &u, json!({}))
        .await;
    r.assert_code(409, "FAST_ALREADY_RUNNING");
    // Once the later fast ended too, the first one cannot run on across it.
    end(&app, &u, &second).await;
    let r = app
        .post(&format!("/me/fast-events/{first}/resume"), &u, json!({}))
        .await;
    r.assert_code(409, "FAST_OVERLAP");
    // The later one resumes.
    let r = app
        .post(&format!("/me/fast-events/{second}/resume"), &u, json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_resumes_leave_one_running_fast() {
    let app = spawn_app().await;
    let u = app.user("resume-parallel@example.com");
    let first = start(&app, &u).await;
    end(&app, &u, &first).await;
    let path = format!("/me/fast-events/{first}/resume");
    let calls = (0..8).map(|_| app.call(Method::POST, &path, Some(&u), Some(json!({}))));
    let statuses: Vec<u16> = futures_util::future::join_all(calls)
        .await
        .into_iter()
        .map(|r| r.status)
        .collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert!(
        statuses.iter().all(|s| [200, 409].contains(s)),
        "{statuses:?}"
    );
}

/// Personal answers must not stay in a shared browser's or a proxy's cache.
#[tokio::test]
async fn personal_answers_are_never_stored_by_caches() {
    let app = spawn_app().await;
    let u = app.user("no-store@example.com");
    for path in [
        "/me",
        "/me/preferences",
        "/me/fast-events",
        "/me/fast-events/current",
        "/me/fasting/stats",
        "/me/export",
        "/me/notifications/settings",
    ] {
        let r = app.get(path, &u).await;
        assert_eq!(
            r.header("cache-control"),
            Some("no-store"),
            "{path} ({})",
            r.status
        );
    }
    // Without a session too: the 401 says nothing a cache should keep either.
    let r = app.call(Method::GET, "/me", None, None).await;
    assert_eq!(
        (r.status, r.header("cache-control")),
        (401, Some("no-store"))
    );
}

/// A fast has a length: ending it at the instant it started is refused, so that no account can
/// pile up fasts of no duration (and two fasts never share a start, which paging relies on).
#[tokio::test]
async fn a_fast_cannot_end_at_the_instant_it_started() {
    let app = spawn_app().await;
    let u = app.user("zero@example.com");
    let r = app
        .post(
            "/me/fast-events",
            &u,
            json!({ "protocol": "16:8", "startedAt": "2026-11-26T20:00:00Z" }),
        )
        .await;
    // A fixed instant may lie more than 7 days back when the tests run late: fall back to now.
    let (id, started) = if r.status == 201 {
        (
            r.body["id"].as_str().expect("id").to_owned(),
            r.body["startedAt"].clone(),
        )
    } else {
        let r = app
            .post("/me/fast-events", &u, json!({ "protocol": "16:8" }))
            .await;
        (
            r.body["id"].as_str().expect("id").to_owned(),
            r.body["startedAt"].clone(),
        )
    };
    let r = app
        .post(
            &format!("/me/fast-events/{id}/end"),
            &u,
            json!({ "endedAt": started }),
        )
        .await;
    r.assert_error(400, "VALIDATION_ERROR", "endedAt");
}

/// Fasts started on one day are bounded per person, so that one account cannot grow its history
/// (and every read of it: statistics, export) without end.
#[tokio::test]
async fn fasts_started_on_one_day_are_bounded() {
    let app = spawn_app().await;
    let u = app.user("many@example.com");
    let mut refused = None;
    for i in 0..40 {
        let r = app
            .post("/me/fast-events", &u, json!({ "protocol": "16:8" }))
            .await;
        if r.status != 201 {
            refused = Some((i, r.status, r.body["code"].as_str().map(str::to_owned)));
            break;
        }
        let id = r.body["id"].as_str().expect("id").to_owned();
        let e = app
            .post(&format!("/me/fast-events/{id}/end"), &u, json!({}))
            .await;
        assert_eq!(e.status, 200, "{}", e.text);
    }
    assert_eq!(
        refused,
        Some((20, 422, Some("DAILY_LIMIT_REACHED".to_owned()))),
        "the 21st fast of the day is refused"
    );
}
