//! Fasting: preferences, start and end, the diary, listing, statistics, the pause and the
//! break-fast suggestions.

use chrono::{DateTime, Duration, Utc};
use reqwest::Method;
use serde_json::json;

use crate::helpers::spawn_app;

fn ago(d: Duration) -> String {
    service_kit::time::format(&(Utc::now() - d))
}

fn time(v: &serde_json::Value) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(v.as_str().expect("timestamp"))
        .expect("RFC 3339")
        .with_timezone(&Utc)
}

#[tokio::test]
async fn preferences_default_set_and_clear() {
    let app = spawn_app().await;
    let u = app.user("p@example.com");
    let r = app.get("/me/preferences", &u).await;
    assert_eq!(
        r.body,
        json!({ "fastingProtocol": null, "fastingMilestones": false, "weightGoalKg": null, "heightCm": null, "waterGoalMl": 2000, "locale": "it", "longFastAcknowledged": false })
    );
    let r = app
        .patch("/me/preferences", &u, json!({ "fastingProtocol": "16:8" }))
        .await;
    assert_eq!(
        r.body,
        json!({ "fastingProtocol": "16:8", "fastingMilestones": false, "weightGoalKg": null, "heightCm": null, "waterGoalMl": 2000, "locale": "it", "longFastAcknowledged": false })
    );
    let r = app
        .patch("/me/preferences", &u, json!({ "fastingMilestones": true }))
        .await;
    assert_eq!(
        r.body,
        json!({ "fastingProtocol": "16:8", "fastingMilestones": true, "weightGoalKg": null, "heightCm": null, "waterGoalMl": 2000, "locale": "it", "longFastAcknowledged": false }),
        "absent fields stay"
    );
    let r = app
        .patch("/me/preferences", &u, json!({ "fastingProtocol": null }))
        .await;
    assert_eq!(
        r.body,
        json!({ "fastingProtocol": null, "fastingMilestones": true, "weightGoalKg": null, "heightCm": null, "waterGoalMl": 2000, "locale": "it", "longFastAcknowledged": false }),
        "null clears"
    );
    for (body, field) in [
        (json!({ "fastingProtocol": "15:9" }), "fastingProtocol"),
        (json!({ "fastingProtocol": 16 }), "fastingProtocol"),
        (json!({ "fastingMilestones": "yes" }), "fastingMilestones"),
        (json!({ "theme": "dark" }), "theme"),
    ] {
        let r = app.patch("/me/preferences", &u, body).await;
        r.assert_error(400, "VALIDATION_ERROR", field);
    }
    assert_eq!(
        app.get("/me/preferences", &u).await.body["fastingMilestones"],
        true
    );
    let other = app.user("q@example.com");
    assert_eq!(
        app.get("/me/preferences", &other).await.body["fastingProtocol"],
        json!(null)
    );
}

#[tokio::test]
async fn start_and_end_a_fast() {
    let app = spawn_app().await;
    let u = app.user("f@example.com");
    let r = app.post("/me/fast-events", &u, json!({})).await;
    assert_eq!(r.status, 400, "no protocol and no preference: {}", r.text);
    assert!(
        r.body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("protocol")
    );

    let r = app
        .post("/me/fast-events", &u, json!({ "protocol": "16:8" }))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let fast = r.body.clone();
    for field in [
        "id",
        "status",
        "protocol",
        "startedAt",
        "plannedEndAt",
        "endedAt",
        "notifiedMilestones",
        "symptoms",
        "autoStarted",
    ] {
        assert!(fast.get(field).is_some(), "{field} missing: {fast}");
    }
    assert_eq!(fast["status"], "IN_PROGRESS");
    assert_eq!(fast["autoStarted"], false);
    assert_eq!(fast["notifiedMilestones"], json!([]));
    assert_eq!(
        time(&fast["plannedEndAt"]) - time(&fast["startedAt"]),
        Duration::hours(16)
    );

    let again = app
        .post("/me/fast-events", &u, json!({ "protocol": "12:12" }))
        .await;
    again.assert_code(409, "FAST_ALREADY_RUNNING");
    let current = app.get("/me/fast-events/current", &u).await;
    assert_eq!(current.body["id"], fast["id"]);

    let id = fast["id"].as_str().expect("id");
    let ended = app
        .call(
            Method::POST,
            &format!("/me/fast-events/{id}/end"),
            Some(&u),
            None,
        )
        .await;
    assert_eq!(ended.status, 200, "{}", ended.text);
    assert_eq!(ended.body["status"], "ENDED_EARLY");
    assert!(ended.body["endedAt"].is_string());
    let twice = app
        .post(&format!("/me/fast-events/{id}/end"), &u, json!({}))
        .await;
    twice.assert_code(409, "FAST_NOT_RUNNING");
    assert_eq!(app.get("/me/fast-events/current", &u).await.status, 404);
}

#[tokio::test]
async fn backdated_fast_completes_and_preference_is_the_default() {
    let app = spawn_app().await;
    let u = app.user("b@example.com");
    app.patch("/me/preferences", &u, json!({ "fastingProtocol": "16:8" }))
        .await;
    let r = app
        .post(
            "/me/fast-events",
            &u,
            json!({ "startedAt": ago(Duration::hours(17)) }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.body["protocol"], "16:8");
    let id = r.body["id"].as_str().expect("id").to_owned();
    let end_at = service_kit::time::format(&(time(&r.body["plannedEndAt"]) + Duration::minutes(5)));
    let ended = app
        .post(
            &format!("/me/fast-events/{id}/end"),
            &u,
            json!({ "endedAt": end_at }),
        )
        .await;
    assert_eq!(ended.body["status"], "COMPLETED");
    assert_eq!(ended.body["endedAt"], json!(end_at));

    // A new fast may not start before the previous one ended.
    let overlap = app
        .post(
            "/me/fast-events",
            &u,
            json!({ "startedAt": ago(Duration::hours(2)) }),
        )
        .await;
    assert_eq!(overlap.status, 400, "{}", overlap.text);
}

#[tokio::test]
async fn started_at_rules() {
    let app = spawn_app().await;
    let u = app.user("s@example.com");
    let future = service_kit::time::format(&(Utc::now() + Duration::minutes(10)));
    for body in [
        json!({ "protocol": "16:8", "startedAt": future }),
        json!({ "protocol": "16:8", "startedAt": ago(Duration::days(7) + Duration::minutes(1)) }),
        json!({ "protocol": "16:8", "startedAt": "yesterday" }),
        json!({ "protocol": "17:7" }),
        json!({ "protocol": "16:8", "extra": 1 }),
    ] {
        let r = app.post("/me/fast-events", &u, body.clone()).await;
        r.assert_code(400, "VALIDATION_ERROR");
    }
    let malformed = app
        .raw(Method::POST, "/me/fast-events", &u, "{\"protocol\":")
        .await;
    assert_eq!(malformed.status, 400);
    assert_eq!(
        app.count("SELECT count(*) AS n FROM nutrition.fast_event"),
        0,
        "nothing written"
    );
    let ok = app
        .post("/me/fast-events", &u, json!({ "protocol": "16:8", "startedAt": ago(Duration::days(7) - Duration::minutes(1)) }))
        .await;
    assert_eq!(ok.status, 201);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_parallel_starts_make_one_fast() {
    let app = spawn_app().await;
    let u = app.user("par@example.com");
    let attempts = (0..10).map(|_| app.post("/me/fast-events", &u, json!({ "protocol": "14:10" })));
    let results = futures_util::future::join_all(attempts).await;
    let created = results.iter().filter(|r| r.status == 201).count();
    let refused = results.iter().filter(|r| r.status == 409).count();
    assert_eq!(
        (created, refused),
        (1, 9),
        "{:?}",
        results.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    assert_eq!(
        app.count("SELECT count(*) AS n FROM nutrition.fast_event"),
        1
    );
}

/// An end and a backdated start sent together: the start must see the end (400, overlapping) or
/// the running fast (409), never slip in between and overlap it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parallel_end_and_start_never_overlap() {
    let app = spawn_app().await;
    let rounds = 40;
    let users: Vec<_> = (0..4)
        .map(|i| app.user(&format!("overlap{i}@example.com")))
        .collect();
    let base = Utc::now() - Duration::days(6);
    let at = |minutes: i64| service_kit::time::format(&(base + Duration::minutes(minutes)));
    let round = |u: crate::helpers::User| {
        let app = &app;
        async move {
            let first = app
                .post(
                    "/me/fast-events",
                    &u,
                    json!({ "protocol": "16:8", "startedAt": at(0) }),
                )
                .await;
            assert_eq!(first.status, 201, "{}", first.text);
            let mut running = first.body["id"].as_str().expect("id").to_owned();
            for i in 0..rounds {
                // Spread over days: at most 20 fasts may start on one day.
                let start = i * 80;
                let end_path = format!("/me/fast-events/{running}/end");
                let end = app.post(&end_path, &u, json!({ "endedAt": at(start + 10) }));
                // Starts inside the fast being ended.
                let next = app.post(
                    "/me/fast-events",
                    &u,
                    json!({ "protocol": "16:8", "startedAt": at(start + 5) }),
                );
                let (end, next) = tokio::join!(end, next);
                assert_eq!(end.status, 200, "{}", end.text);
                running = if next.status == 201 {
                    next.body["id"].as_str().expect("id").to_owned()
                } else {
                    assert!([400, 409].contains(&next.status), "{}", next.text);
                    let r = app
                        .post(
                            "/me/fast-events",
                            &u,
                            json!({ "protocol": "16:8", "startedAt": at(start + 20) }),
                        )
                        .await;
                    assert_eq!(r.status, 201, "{}", r.text);
                    r.body["id"].as_str().expect("id").to_owned()
                };
            }
            u
        }
    };
    let users = futures_util::future::join_all(users.into_iter().map(round)).await;
    for u in &users {
        let list = app.get("/me/fast-events?limit=100", u).await;
        let mut fasts: Vec<(DateTime<Utc>, Option<DateTime<Utc>>)> = list.body["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|f| {
                (
                    time(&f["startedAt"]),
                    f["endedAt"].as_str().map(|_| time(&f["endedAt"])),
                )
            })
            .collect();
        fasts.sort();
        for pair in fasts.windows(2) {
            let ended = pair[0].1.expect("only the last fast runs");
            assert!(
                ended <= pair[1].0,
                "fasts overlap: one ended at {ended}, the next started at {}",
                pair[1].0
            );
        }
    }
}

#[tokio::test]
async fn another_users_fast_is_not_found() {
    let app = spawn_app().await;
    let owner = app.user("owner@example.com");
    let other = app.user("other@example.com");
    let id = app
        .post("/me/fast-events", &owner, json!({ "protocol": "24:0" }))
        .await
        .body["id"]
        .as_str()
        .expect("id")
        .to_owned();
    for (method, path, body) in [
        (Method::GET, format!("/me/fast-events/{id}"), None),
        (
            Method::POST,
            format!("/me/fast-events/{id}/end"),
            Some(json!({})),
        ),
        (
            Method::PATCH,
            format!("/me/fast-events/{id}"),
            Some(json!({ "symptoms": { "headache": true } })),
        ),
        (
            Method::GET,
            format!("/me/fast-events/{id}/break-fast-suggestions"),
            None,
        ),
        (Method::GET, "/me/fast-events/no-such-id".to_owned(), None),
    ] {
        let r = app.call(method, &path, Some(&other), body).await;
        r.assert_code(404, "NOT_FOUND");
    }
    assert_eq!(
        app.get(&format!("/me/fast-events/{id}"), &owner).await.body["status"],
        "IN_PROGRESS",
        "untouched"
    );
    assert_eq!(app.get("/me/fast-events/current", &other).await.status, 404);
}

#[tokio::test]
async fn symptom_diary_keeps_the_timer_running() {
    let app = spawn_app().await;
    let u = app.user("d@example.com");
    let fast = app
        .post("/me/fast-events", &u, json!({ "protocol": "16:8" }))
        .await
        .body;
    let id = fast["id"].as_str().expect("id");
    let path = format!("/me/fast-events/{id}");
    let r = app
        .patch(&path, &u, json!({ "symptoms": { "headache": true, "energy": 7, "hunger": 3, "clarity": 10, "note": "ok" } }))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.body["symptoms"],
        json!({ "headache": true, "energy": 7, "hunger": 3, "clarity": 10, "note": "ok" })
    );
    assert_eq!(
        (r.body["status"].clone(), r.body["startedAt"].clone()),
        (fast["status"].clone(), fast["startedAt"].clone())
    );
    // Given fields replace stored ones, the rest stays.
    let r = app
        .patch(&path, &u, json!({ "symptoms": { "energy": 2 } }))
        .await;
    assert_eq!(r.body["symptoms"]["energy"], 2);
    assert_eq!(r.body["symptoms"]["note"], "ok");
    for bad in [
        json!({ "symptoms": { "energy": 0 } }),
        json!({ "symptoms": { "hunger": 11 } }),
        json!({ "symptoms": { "clarity": -1 } }),
        json!({ "symptoms": { "note": "x".repeat(2001) } }),
        json!({ "symptoms": { "headache": "yes" } }),
        json!({ "symptoms": { "mood": 5 } }),
        json!({ "status": "COMPLETED" }),
    ] {
        let r = app.patch(&path, &u, bad.clone()).await;
        r.assert_code(400, "VALIDATION_ERROR");
    }
    let now = app.get(&path, &u).await.body;
    assert_eq!(
        now["symptoms"]["energy"], 2,
        "refused patches changed nothing"
    );
    assert_eq!(now["status"], "IN_PROGRESS");
    let boundary = app
        .patch(
            &path,
            &u,
            json!({ "symptoms": { "note": "é".repeat(2000), "energy": 1 } }),
        )
        .await;
    assert_eq!(boundary.status, 200);
}

#[tokio::test]
async fn listing_pages_newest_first() {
    let app = spawn_app().await;
    let u = app.user("l@example.com");
    let mut ids = Vec::new();
    for i in (1..=5).rev() {
        let start = ago(Duration::hours(i * 20));
        let f = app
            .post(
                "/me/fast-events",
                &u,
                json!({ "protocol": "12:12", "startedAt": start }),
            )
            .await;
        assert_eq!(f.status, 201, "{}", f.text);
        let id = f.body["id"].as_str().expect("id").to_owned();
        let end = ago(Duration::hours(i * 20 - 13));
        app.post(
            &format!("/me/fast-events/{id}/end"),
            &u,
            json!({ "endedAt": end }),
        )
        .await;
        ids.push(id);
    }
    ids.reverse();
    let mut seen = Vec::new();
    let mut path = "/me/fast-events?limit=2".to_owned();
    loop {
        let page = app.get(&path, &u).await;
        assert_eq!(page.status, 200, "{}", page.text);
        let items = page.body["items"].as_array().expect("items").clone();
        assert!(items.len() <= 2);
        seen.extend(
            items
                .iter()
                .map(|i| i["id"].as_str().unwrap_or_default().to_owned()),
        );
        match page.body["nextBefore"].as_str() {
            Some(next) => {
                path = format!(
                    "/me/fast-events?limit=2&before={}",
                    next.replace('+', "%2B")
                )
            }
            None => break,
        }
    }
    assert_eq!(seen, ids, "every fast once, newest first");
    for bad in ["limit=0", "limit=101", "limit=ten", "before=yesterday"] {
        let r = app.get(&format!("/me/fast-events?{bad}"), &u).await;
        assert_eq!(r.status, 400, "{bad}");
    }
    let other = app.user("l2@example.com");
    assert_eq!(
        app.get("/me/fast-events", &other).await.body,
        json!({ "items": [], "nextBefore": null })
    );
}

#[tokio::test]
async fn statistics_from_the_users_fasts() {
    let app = spawn_app().await;
    let u = app.user("st@example.com");
    let empty = app.get("/me/fasting/stats", &u).await.body;
    assert_eq!(
        empty,
        json!({ "weeklyHours": 0.0, "monthlyHours": 0.0, "currentStreak": 0, "longestStreak": 0,
                "completionRate": 0.0, "totalSessions": 0, "completedSessions": 0 })
    );
    // One completed fast ending now, one ended early before it.
    let early = app
        .post(
            "/me/fast-events",
            &u,
            json!({ "protocol": "16:8", "startedAt": ago(Duration::hours(60)) }),
        )
        .await;
    let early_id = early.body["id"].as_str().expect("id").to_owned();
    app.post(
        &format!("/me/fast-events/{early_id}/end"),
        &u,
        json!({ "endedAt": ago(Duration::hours(50)) }),
    )
    .await;
    let done = app
        .post(
            "/me/fast-events",
            &u,
            json!({ "protocol": "16:8", "startedAt": ago(Duration::hours(20)) }),
        )
        .await;
    let done_id = done.body["id"].as_str().expect("id").to_owned();
    let ended = app
        .post(
            &format!("/me/fast-events/{done_id}/end"),
            &u,
            json!({ "endedAt": ago(Duration::hours(2)) }),
        )
        .await;
    assert_eq!(ended.body["status"], "COMPLETED");
    // And one running for an hour.
    app.post(
        "/me/fast-events",
        &u,
        json!({ "protocol": "16:8", "startedAt": ago(Duration::hours(1)) }),
    )
    .await;

    let s = app.get("/me/fasting/stats", &u).await.body;
    assert_eq!(
        (s["totalSessions"].clone(), s["completedSessions"].clone()),
        (json!(2), json!(1))
    );
    assert_eq!(s["completionRate"], 0.5);
    assert_eq!(
        s["currentStreak"], 1,
        "the day the completed fast ended counts, and today breaks nothing"
    );
    assert_eq!(s["longestStreak"], 1);
    // The hours inside this Rome week and month, as the domain rules count them.
    let now = Utc::now();
    let spans = [
        (now - Duration::hours(60), now - Duration::hours(50)),
        (now - Duration::hours(20), now - Duration::hours(2)),
        (now - Duration::hours(1), now),
    ];
    let expect = |(from, to): (DateTime<Utc>, DateTime<Utc>)| {
        let secs: i64 = spans
            .iter()
            .map(|(s, e)| ((*e).min(to) - (*s).max(from)).num_seconds().max(0))
            .sum();
        #[allow(clippy::cast_precision_loss)]
        let hours = secs as f64 / 3600.0;
        (hours * 10.0).round() / 10.0
    };
    let week = expect(domain::rome::week_range(now));
    let month = expect(domain::rome::month_range(now));
    let close = |a: f64, b: f64| (a - b).abs() <= 0.11;
    assert!(
        close(s["weeklyHours"].as_f64().unwrap_or(-1.0), week),
        "{s} vs {week}"
    );
    assert!(
        close(s["monthlyHours"].as_f64().unwrap_or(-1.0), month),
        "{s} vs {month}"
    );
}

#[tokio::test]
async fn pause_default_explicit_and_end() {
    let app = spawn_app().await;
    let u = app.user("pause@example.com");
    assert_eq!(
        app.get("/me/fasting/pause", &u).await.body,
        json!({ "fastingPausedUntil": null, "paused": false })
    );

    let before = Utc::now();
    let r = app
        .call(Method::POST, "/me/fasting/pause", Some(&u), None)
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["paused"], true);
    let until = time(&r.body["fastingPausedUntil"]);
    let expected = [
        domain::rome::next_day_at(before, 6),
        domain::rome::next_day_at(Utc::now(), 6),
    ];
    assert!(expected.contains(&until), "next day 06:00 Rome: {until}");
    assert_eq!(app.get("/me/fasting/pause", &u).await.body, r.body);
    assert_eq!(
        app.get("/me", &u).await.body["user"]["fastingPausedUntil"],
        r.body["fastingPausedUntil"]
    );

    let explicit = service_kit::time::format(&(Utc::now() + Duration::days(3)));
    let r = app
        .post("/me/fasting/pause", &u, json!({ "until": explicit }))
        .await;
    assert_eq!(
        r.body,
        json!({ "fastingPausedUntil": explicit, "paused": true })
    );

    let r = app
        .post("/me/fasting/pause", &u, json!({ "until": null }))
        .await;
    assert_eq!(
        r.body,
        json!({ "fastingPausedUntil": null, "paused": false })
    );
    assert_eq!(
        app.count("SELECT count(*) AS n FROM nutrition.pause_period WHERE ends_at > now()"),
        0
    );
    assert_eq!(
        app.count("SELECT count(*) AS n FROM nutrition.pause_period"),
        1,
        "the history stays for streaks, as one span for the pauses touching today"
    );

    for bad in [
        json!({ "until": ago(Duration::minutes(1)) }),
        json!({ "until": service_kit::time::format(&(Utc::now() + Duration::days(31))) }),
        json!({ "until": "tomorrow" }),
        json!({ "from": "now" }),
    ] {
        let r = app.post("/me/fasting/pause", &u, bad.clone()).await;
        r.assert_code(400, "VALIDATION_ERROR");
    }
    assert_eq!(app.get("/me/fasting/pause", &u).await.body["paused"], false);
}

#[tokio::test]
async fn break_fast_suggestions_after_24_hours() {
    let app = spawn_app().await;
    let u = app.user("bf@example.com");
    let short = app
        .post(
            "/me/fast-events",
            &u,
            json!({ "protocol": "24:0", "startedAt": ago(Duration::hours(23)) }),
        )
        .await;
    let id = short.body["id"].as_str().expect("id").to_owned();
    let r = app
        .get(&format!("/me/fast-events/{id}/break-fast-suggestions"), &u)
        .await;
    r.assert_code(422, "FAST_TOO_SHORT");
    app.sql(&format!(
        "UPDATE nutrition.fast_event SET started_at = started_at - interval '2 hours', planned_end_at = planned_end_at - interval '2 hours' WHERE id = '{id}'"
    ));
    let r = app
        .get(&format!("/me/fast-events/{id}/break-fast-suggestions"), &u)
        .await;
    assert_eq!(
        r.status, 200,
        "a running fast of 25 hours qualifies: {}",
        r.text
    );
    let recipes = r.body["recipes"].as_array().expect("recipes");
    assert_eq!(recipes.len(), 3);
    for recipe in recipes {
        assert!(
            recipe["prepMinutes"].as_u64().is_some_and(|m| m <= 20),
            "{recipe}"
        );
        assert!(
            recipe["kcal"].as_f64().is_some_and(|k| k <= 350.0),
            "{recipe}"
        );
        assert!(
            ["COLAZIONE", "SPUNTINO"].contains(&recipe["category"].as_str().unwrap_or_default()),
            "{recipe}"
        );
    }
}
