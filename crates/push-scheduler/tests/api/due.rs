//! Which running fasts a milestone run reads: only those whose next milestone instant has come,
//! kept by nutrition-api's writes (start, end, pause, resume, milestones switched on) and by the
//! run itself, and found through the partial index whatever the number of running fasts.

use chrono::{DateTime, Duration, Utc};
use reqwest::Method;
use serde_json::json;

use crate::helpers::{Api, ApiUser, World};

fn format(t: DateTime<Utc>) -> String {
    service_kit::time::format(&t)
}

/// The fast's stored next instant, as text (`NULL` when none).
fn next_of(w: &World, fast: &str) -> Option<DateTime<Utc>> {
    use diesel::prelude::*;
    #[derive(QueryableByName)]
    struct Next {
        #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Timestamptz>)]
        next_milestone_at: Option<DateTime<Utc>>,
    }
    let mut conn = w.db.connect();
    diesel::sql_query("SELECT next_milestone_at FROM nutrition.fast_event WHERE id = $1")
        .bind::<diesel::sql_types::Text, _>(fast)
        .get_result::<Next>(&mut conn)
        .expect("fast")
        .next_milestone_at
}

async fn milestones_on(api: &Api, user: &ApiUser) {
    let r = api
        .call(
            Method::PATCH,
            "/me/preferences",
            user,
            Some(json!({ "fastingMilestones": true })),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
}

fn sent_skipped(r: &serde_json::Value) -> (Option<u64>, Option<i64>) {
    (r["sent"].as_u64(), r["skipped"].as_i64())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_reads_the_fasts_that_are_due_across_pause_resume_end_and_recording() {
    let w = World::new().await;
    let api = Api::start(&w).await;
    // The API keeps instants to the millisecond.
    let now = DateTime::from_timestamp_millis(Utc::now().timestamp_millis()).expect("now");
    let started = now - Duration::minutes(125);
    let mut people = Vec::new();
    for name in ["runner", "paused", "quiet", "done"] {
        let user = api.user(&w, &format!("{name}@example.com"));
        let device = w.push.subscribe();
        assert_eq!(api.register(&user, &device).await.status, 201);
        people.push((user, device));
    }
    let [
        (runner, runner_device),
        (paused, paused_device),
        (quiet, quiet_device),
        (done, _),
    ] = &people[..]
    else {
        unreachable!("four people")
    };
    for u in [runner, paused, done] {
        milestones_on(&api, u).await;
    }
    let runner_fast = api.start_fast(runner, started).await;
    assert_eq!(
        next_of(&w, &runner_fast),
        Some(started + Duration::hours(2)),
        "a new fast is due at its first milestone"
    );
    let paused_fast = api.start_fast(paused, started).await;
    let r = api
        .call(Method::POST, "/me/fasting/pause", paused, Some(json!({})))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let paused_until =
        DateTime::parse_from_rfc3339(r.body["fastingPausedUntil"].as_str().expect("paused until"))
            .expect("instant")
            .with_timezone(&Utc);
    let quiet_fast = api.start_fast(quiet, started).await;
    let done_fast = api.start_fast(done, started).await;
    let r = api
        .call(
            Method::POST,
            &format!("/me/fast-events/{done_fast}/end"),
            done,
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(next_of(&w, &done_fast), None, "an ended fast is never due");

    // The runner is pushed; the paused and the quiet user are skipped; the ended fast is not read.
    let first = w.fire("milestones", &format(now), 10);
    assert_eq!(sent_skipped(&first), (Some(1), Some(2)), "{first}");
    assert_eq!(kinds(&w, runner_device), ["hydration_2h"]);
    assert_eq!(
        next_of(&w, &runner_fast),
        Some(started + Duration::hours(4)),
        "after recording, the next milestone"
    );
    assert_eq!(
        next_of(&w, &paused_fast),
        Some(paused_until),
        "a paused fast is looked at again when the pause ends"
    );
    assert_eq!(
        next_of(&w, &quiet_fast),
        Some(started + Duration::hours(4)),
        "milestones off: looked at again at the next milestone"
    );

    // Nothing is due five minutes later: nobody is read, so nobody is skipped again.
    let idle = w.fire("milestones", &format(now + Duration::minutes(5)), 10);
    assert_eq!(sent_skipped(&idle), (Some(0), Some(0)), "{idle}");

    // Resuming and switching milestones on bring the fasts forward: the next run pushes what is
    // due for them now.
    let r = api
        .call(
            Method::POST,
            "/me/fasting/pause",
            paused,
            Some(json!({ "until": null })),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    milestones_on(&api, quiet).await;
    let second = w.fire("milestones", &format(now + Duration::minutes(10)), 10);
    assert_eq!(sent_skipped(&second), (Some(2), Some(0)), "{second}");
    for (fast, device) in [(&paused_fast, paused_device), (&quiet_fast, quiet_device)] {
        assert_eq!(kinds(&w, device), ["hydration_2h"]);
        assert_eq!(next_of(&w, fast), Some(started + Duration::hours(4)));
    }

    // When the 4 h milestone falls due, all three running fasts are read and pushed once.
    let later = started + Duration::hours(4) + Duration::minutes(1);
    let third = w.fire("milestones", &format(later), 10);
    assert_eq!(sent_skipped(&third), (Some(3), Some(0)), "{third}");
    assert_eq!(kinds(&w, runner_device), ["hydration_2h", "hydration_4h"]);
    assert_eq!(
        next_of(&w, &runner_fast),
        Some(started + Duration::hours(6))
    );
}

fn kinds(w: &World, device: &testkit::push_service::FakeSubscription) -> Vec<String> {
    w.payloads(device)
        .iter()
        .map(|p| p["kind"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_due_fasts_are_found_through_the_index() {
    let w = World::new().await;
    // Twenty thousand running fasts, the first milestone of 700 of them due: more than one batch.
    let n = 20_000;
    let due = 700;
    w.sql(&format!("INSERT INTO auth.\"user\" (id, name, email) SELECT 'u' || i, 'T', 'u' || i || '@example.com' FROM generate_series(1, {n}) i"));
    w.sql(&format!("INSERT INTO nutrition.profile (user_id, fasting_milestones) SELECT 'u' || i, TRUE FROM generate_series(1, {n}) i"));
    w.sql(&format!(
        "INSERT INTO nutrition.fast_event (id, user_id, status, protocol, started_at, planned_end_at, next_milestone_at)
         SELECT 'f' || i, 'u' || i, 'IN_PROGRESS', '16:8', s, s + INTERVAL '16 hours', s + INTERVAL '2 hours'
           FROM generate_series(1, {n}) i,
                LATERAL (SELECT now() - CASE WHEN i <= {due} THEN INTERVAL '125 minutes'
                                             ELSE (i % 110) * INTERVAL '1 minute' END AS s) t"
    ));
    w.sql("ANALYZE nutrition.fast_event");
    w.sql("ANALYZE nutrition.profile");
    let now = Utc::now();
    let mut conn = w.db.connect();
    let first = push_scheduler::run::explain_due_fasts(&mut conn, now, None).expect("explain");
    let next = push_scheduler::run::explain_due_fasts(
        &mut conn,
        now,
        Some(&(now - Duration::minutes(5), "f1".to_owned())),
    )
    .expect("explain");
    for plan in [&first, &next] {
        assert!(
            plan.contains("fast_event_next_milestone_idx"),
            "the due fasts are read through the index:\n{plan}"
        );
        assert!(
            !plan.contains("Seq Scan on fast_event"),
            "no scan of every fast:\n{plan}"
        );
    }
    let r = w.fire("milestones", &format(now), 0);
    assert_eq!(r["skipped"], 0, "{r}");
    assert_eq!(
        w.count("SELECT count(*) AS n FROM nutrition.fast_event WHERE notified_milestones = '{hydration_2h}' AND next_milestone_at > now()"),
        due,
        "exactly the due fasts were recorded, each moved on to its next milestone"
    );
    assert_eq!(
        w.count("SELECT count(*) AS n FROM nutrition.fast_event WHERE notified_milestones = '{}'"),
        n - due
    );
}
