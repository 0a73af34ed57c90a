//! Delivery that stays safe under pressure: queued pushes follow their endpoint, one slow push
//! service or one user with many devices cannot hold up everyone else, a milestone run does not
//! block the users' own writes, SIGTERM finishes what is in flight, every message carries a
//! `Topic`, and finished messages are purged.

use std::time::{Duration, Instant, SystemTime};

use chrono::Utc;
use reqwest::Method;
use serde_json::json;
use testkit::push_service::{Answer, FakePushService};

use crate::helpers::{Api, Person, Profile, World};

/// Nothing scheduled: `serve` runs its jobs but none of them has anyone to notify, so only the
/// rows a test queues itself are delivered.
const QUIET: Profile = Profile {
    meal_reminders: false,
    weekly_weigh_in: false,
    milestones: false,
    paused_until: None,
};

/// Queues `kind` for every device of `user_id`, as a run would, due now and expiring in
/// `expires_in`.
fn queue_for(w: &World, user_id: &str, kind: &str, expires_in: &str) {
    w.sql(&format!(
        "INSERT INTO scheduler.outbox (job, slot, user_id, device_id, endpoint, p256dh, auth, payload, expires_at)
         SELECT 'meal-lunch', TIMESTAMP '2026-01-05 13:00', d.user_id, d.id, d.endpoint, d.p256dh, d.auth,
                '{{\"kind\": \"{kind}\", \"tag\": \"{kind}\"}}'::jsonb, now() + INTERVAL '{expires_in}'
           FROM nutrition.device_token d WHERE d.user_id = '{user_id}'"
    ));
}

fn outbox(w: &World, filter: &str) -> i64 {
    w.count(&format!(
        "SELECT count(*) AS n FROM scheduler.outbox WHERE {filter}"
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_pushes_follow_the_endpoint_not_its_owner() {
    let w = World::new().await;
    let api = Api::start(&w).await;
    let u = api.user(&w, "first@example.com");
    let v = api.user(&w, "second@example.com");
    let r = api
        .call(
            Method::PATCH,
            "/me/notifications/settings",
            &u,
            Some(json!({ "mealReminders": true })),
        )
        .await;
    assert_eq!(r.status, 200);
    // Three browsers of the first user: one will be taken over on a shared computer, one removed,
    // one replaced as the least recently seen when twenty newer ones arrive.
    let (evicted, shared, removed) = (w.push.subscribe(), w.push.subscribe(), w.push.subscribe());
    for d in [&evicted, &shared, &removed] {
        assert_eq!(api.register(&u, d).await.status, 201);
        w.push.respond(d, Answer::Unavailable503);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // The push service is busy: the lunch reminders wait for their retry.
    let r = w.fire("meal-lunch", "2026-11-23T12:00:00Z", 0);
    assert_eq!(
        (r["queued"].as_i64(), r["pending"].as_bool()),
        (Some(3), Some(true)),
        "{r}"
    );

    assert_eq!(api.register(&v, &shared).await.status, 201);
    let r = api
        .call(
            Method::DELETE,
            "/me/device-tokens",
            &u,
            Some(json!({ "endpoint": removed.endpoint })),
        )
        .await;
    assert_eq!(r.status, 204);
    for _ in 0..20 {
        assert_eq!(api.register(&u, &w.push.subscribe()).await.status, 201);
    }

    for d in [&evicted, &shared, &removed] {
        w.push.respond(d, Answer::Created);
    }
    w.sql("UPDATE scheduler.outbox SET next_attempt_at = now() WHERE status = 'pending'");
    let r = w.fire("meal-snack", "2026-11-23T15:00:00Z", 5);
    assert_eq!(
        r["sent"], 20,
        "the first user's twenty browsers get the snack: {r}"
    );
    for (name, d) in [
        ("taken over", &shared),
        ("removed", &removed),
        ("replaced", &evicted),
    ] {
        assert!(
            w.push.received(d).is_empty(),
            "a {name} browser got the previous owner's reminder: {:?}",
            w.payloads(d)
        );
    }
    assert_eq!(
        outbox(&w, "job = 'meal-lunch' AND status = 'pending'"),
        0,
        "the retries are settled, not left waiting"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_push_service_does_not_hold_up_the_others() {
    let w = World::new().await;
    let slow = FakePushService::start().await;
    // Twenty people whose browsers use a slow push service, queued first.
    for i in 0..20 {
        let p = w.person_on(
            &format!("slow{i}@example.com"),
            Some(Profile::default()),
            &slow,
        );
        slow.respond(&p.device, Answer::Slow(Duration::from_millis(1000)));
    }
    let quick: Vec<Person> = (0..6)
        .map(|i| w.person(&format!("quick{i}@example.com"), Some(Profile::default())))
        .collect();
    let r = w.fire("meal-lunch", "2026-11-23T12:00:00Z", 30);
    assert_eq!(r["sent"], 26, "{r}");
    let first = slow
        .all_received()
        .iter()
        .chain(w.push.all_received().iter())
        .map(|m| m.received_at)
        .min()
        .expect("something arrived");
    for p in &quick {
        let got = w.push.received(&p.device);
        assert_eq!(got.len(), 1);
        let after = got[0].received_at.duration_since(first).unwrap_or_default();
        assert!(
            after < Duration::from_millis(1500),
            "a reminder via another push service waited {after:?} behind the slow one"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_users_many_slow_devices_do_not_hold_up_the_others() {
    let w = World::new().await;
    let big = w.person("big@example.com", Some(QUIET));
    w.push
        .respond(&big.device, Answer::Slow(Duration::from_secs(3)));
    for _ in 0..19 {
        let d = w.device(&big.id, &w.push);
        w.push.respond(&d, Answer::Slow(Duration::from_secs(3)));
    }
    let others: Vec<Person> = (0..6)
        .map(|i| w.person(&format!("o{i}@example.com"), Some(QUIET)))
        .collect();
    // The big user's messages are queued first and fall due first.
    queue_for(&w, &big.id, "weekly_weigh_in", "30 minutes");
    let dir = testkit::stack::ScratchDir::new("fair-user");
    let serve = w.serve("serve", &dir);
    let deadline = Instant::now() + Duration::from_secs(20);
    while w.push.in_flight() == 0 {
        assert!(Instant::now() < deadline, "nothing sent: {}", serve.log());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let queued_at = SystemTime::now();
    for p in &others {
        queue_for(&w, &p.id, "meal_lunch", "1 hour");
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while others.iter().any(|p| w.push.received(&p.device).is_empty()) {
        assert!(Instant::now() < deadline, "not delivered: {}", serve.log());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for p in &others {
        let waited = w.push.received(&p.device)[0]
            .received_at
            .duration_since(queued_at)
            .unwrap_or_default();
        assert!(
            waited < Duration::from_secs(2),
            "another user's reminder waited {waited:?} behind one user's twenty slow devices"
        );
    }
    drop(serve);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_milestone_run_does_not_block_ending_a_fast_or_the_diary() {
    let w = World::new().await;
    let api = Api::start(&w).await;
    let u = api.user(&w, "runner@example.com");
    let started = Utc::now() - chrono::Duration::minutes(125);
    let fast = api.start_fast(&u, started).await;
    let diary = api.user(&w, "diary@example.com");
    let diary_fast = api.start_fast(&diary, started).await;
    for id in [&u.id, &diary.id] {
        w.sql(&format!(
            "INSERT INTO nutrition.profile (user_id, fasting_milestones) VALUES ('{id}', TRUE)"
        ));
    }
    // Thousands of running fasts whose milestones fall due in the same run.
    let n = 4000;
    w.sql(&format!("INSERT INTO auth.\"user\" (id, name, email) SELECT 'bulk' || i, 'T', 'bulk' || i || '@example.com' FROM generate_series(1, {n}) i"));
    w.sql(&format!("INSERT INTO nutrition.profile (user_id, fasting_milestones) SELECT 'bulk' || i, TRUE FROM generate_series(1, {n}) i"));
    w.sql(&format!(
        "INSERT INTO nutrition.fast_event (id, user_id, status, protocol, started_at, planned_end_at, next_milestone_at)
         SELECT 'bf' || i, 'bulk' || i, 'IN_PROGRESS', '16:8', now() - INTERVAL '125 minutes', now() + INTERVAL '14 hours', now() - INTERVAL '5 minutes'
           FROM generate_series(1, {n}) i"
    ));
    let at = service_kit::time::format(&Utc::now());
    let mut run = w.fire_command("milestones", &at, 0).spawn().expect("spawn");
    // Wait until the run is recording milestones.
    let deadline = Instant::now() + Duration::from_secs(20);
    while w.count(
        "SELECT count(*) AS n FROM pg_stat_activity
          WHERE datname = current_database() AND pid <> pg_backend_pid()
            AND query ILIKE '%notified_milestones ||%'",
    ) == 0
    {
        assert!(Instant::now() < deadline, "the run did not start");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let started = Instant::now();
    let end_path = format!("/me/fast-events/{fast}/end");
    let patch_path = format!("/me/fast-events/{diary_fast}");
    let timed = |fut| async move {
        let r: crate::helpers::ApiResp = fut.await;
        (r, started.elapsed())
    };
    let ((end, end_took), (patch, patch_took)) = tokio::join!(
        timed(api.call(Method::POST, &end_path, &u, None)),
        timed(api.call(
            Method::PATCH,
            &patch_path,
            &diary,
            Some(json!({ "symptoms": { "energy": 7 } })),
        )),
    );
    let still_running = run.try_wait().expect("wait").is_none();
    let out = run.wait_with_output().expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!((end.status, patch.status), (200, 200));
    assert!(
        still_running,
        "the run must still be going when both answers arrive, or this proves nothing"
    );
    assert!(
        end_took < Duration::from_millis(1000) && patch_took < Duration::from_millis(1000),
        "ending a fast took {end_took:?} and a diary write {patch_took:?} during a milestone run"
    );
    assert_eq!(
        w.count("SELECT count(*) AS n FROM nutrition.fast_event WHERE id LIKE 'bf%' AND 'hydration_2h' = ANY(notified_milestones)"),
        n,
        "every running fast got its milestone"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_delivery_and_finishes_what_is_in_flight() {
    let w = World::new().await;
    let people: Vec<Person> = (0..12)
        .map(|i| w.person(&format!("t{i}@example.com"), Some(QUIET)))
        .collect();
    for p in &people {
        w.push
            .respond(&p.device, Answer::Slow(Duration::from_millis(1500)));
        queue_for(&w, &p.id, "meal_lunch", "1 hour");
    }
    let dir = testkit::stack::ScratchDir::new("sigterm");
    let mut serve = w.serve("serve", &dir);
    let deadline = Instant::now() + Duration::from_secs(20);
    while w.push.in_flight() == 0 {
        assert!(Instant::now() < deadline, "nothing sent: {}", serve.log());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let stopping = Instant::now();
    let status = tokio::task::spawn_blocking(move || {
        let status = serve.terminate(Duration::from_secs(20));
        (status, serve.log())
    });
    let (status, log) = status.await.expect("terminate");
    let took = stopping.elapsed();
    assert!(
        status.is_some_and(|s| s.success()),
        "exit 0: {status:?}\n{log}"
    );
    assert!(took < Duration::from_secs(10), "stopped in {took:?}");
    let delivered = outbox(&w, "status = 'delivered'");
    assert!(delivered >= 1, "what was in flight was finished");
    assert_eq!(
        usize::try_from(delivered).unwrap_or(0),
        w.push.all_received().len(),
        "every message the push service took is recorded as delivered"
    );
    assert_eq!(
        outbox(
            &w,
            "status = 'pending' AND attempts = 0 AND last_error IS NULL"
        ),
        12 - delivered,
        "nothing else was started, and nothing was charged a failed attempt"
    );
    // The rest goes out with the next run, once each.
    for p in &people {
        w.push.respond(&p.device, Answer::Created);
    }
    let r = w.fire("meal-lunch", "2026-11-23T12:00:00Z", 10);
    assert_eq!(r["sent"].as_i64(), Some(12 - delivered), "{r}");
    for p in &people {
        assert_eq!(w.push.received(&p.device).len(), 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_message_has_a_topic_and_a_repeat_after_a_crash_is_the_same_message() {
    let w = World::new().await;
    let a = w.person("a@example.com", Some(Profile::default()));
    let b = w.person("b@example.com", Some(Profile::default()));
    let topics = |p: &Person| -> Vec<String> {
        w.push
            .received(&p.device)
            .iter()
            .map(|m| m.topic.clone().unwrap_or_default())
            .collect()
    };
    w.fire("meal-lunch", "2026-11-23T12:00:00Z", 10);
    w.fire("meal-snack", "2026-11-23T15:00:00Z", 10);
    w.fire("meal-lunch", "2026-11-24T12:00:00Z", 10);
    let (ta, tb) = (topics(&a), topics(&b));
    assert_eq!(ta.len(), 3);
    for t in &ta {
        assert!(
            (1..=32).contains(&t.len())
                && t.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
            "a Topic of at most 32 base64url characters (RFC 8030): {t:?}"
        );
    }
    assert_eq!(ta, tb, "one message, one topic, whichever device");
    assert!(
        ta[0] != ta[1] && ta[0] != ta[2] && ta[1] != ta[2],
        "another job or another slot is another message: {ta:?}"
    );

    // The push service takes the dinner reminder, and the sender dies before it writes that down.
    w.push
        .respond(&a.device, Answer::Slow(Duration::from_secs(10)));
    let mut child = w
        .fire_command("meal-dinner", "2026-11-23T18:00:00Z", 30)
        .spawn()
        .expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(20);
    while w.push.received(&a.device).len() < 4 {
        assert!(
            Instant::now() < deadline,
            "the dinner reminder never arrived"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    std::process::Command::new("kill")
        .args(["-KILL", &child.id().to_string()])
        .status()
        .expect("kill");
    let _ = child.wait();
    w.push.respond(&a.device, Answer::Created);
    let again = w.fire("meal-dinner", "2026-11-23T18:00:00Z", 10);
    assert_eq!(again["alreadyRan"], true);
    let got = w.push.received(&a.device);
    assert_eq!(
        got.len(),
        5,
        "the dinner reminder came twice (the documented window)"
    );
    assert_eq!(
        got[3].topic, got[4].topic,
        "a push service collapses the repeat"
    );
    assert_eq!(
        got[3].json()["tag"],
        got[4].json()["tag"],
        "and the device shows one notification"
    );
    assert_eq!(got[3].plaintext, got[4].plaintext);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finished_messages_are_purged_after_thirty_days() {
    let w = World::new().await;
    let p = w.person("old@example.com", Some(QUIET));
    for (i, (status, age)) in [
        ("delivered", 31),
        ("gone", 31),
        ("failed", 40),
        ("expired", 31),
        ("delivered", 29),
    ]
    .into_iter()
    .enumerate()
    {
        w.sql(&format!(
            "INSERT INTO scheduler.outbox (job, slot, user_id, device_id, endpoint, p256dh, auth, payload, status,
                                           expires_at, created_at, finished_at)
             SELECT 'meal-lunch', TIMESTAMP '2025-01-01 13:00' + INTERVAL '{i} days', d.user_id, d.id, d.endpoint, d.p256dh, d.auth,
                    '{{}}'::jsonb, '{status}', now() - INTERVAL '{age} days', now() - INTERVAL '{age} days', now() - INTERVAL '{age} days'
               FROM nutrition.device_token d WHERE d.user_id = '{}'",
            p.id
        ));
    }
    w.sql(
        "INSERT INTO scheduler.job_run (job, slot, claimed_at, finished_at)
         VALUES ('meal-lunch', '2025-01-01 13:00', now() - INTERVAL '31 days', now() - INTERVAL '31 days'),
                ('meal-lunch', '2025-01-02 13:00', now() - INTERVAL '29 days', now() - INTERVAL '29 days')",
    );
    w.fire("meal-snack", "2026-11-23T15:00:00Z", 1);
    assert_eq!(
        outbox(&w, "TRUE"),
        1,
        "only the message finished 29 days ago is left"
    );
    assert_eq!(outbox(&w, "finished_at > now() - INTERVAL '30 days'"), 1);
    assert_eq!(
        w.count("SELECT count(*) AS n FROM scheduler.job_run WHERE slot < '2026-01-01'"),
        1,
        "old job runs go too"
    );
}
