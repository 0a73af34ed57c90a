//! The jobs end to end: the real `push-scheduler` binary against real Postgres and a push service
//! that verifies VAPID and decrypts every message.

use std::time::Duration;

use chrono::{DateTime, Utc};
use testkit::push_service::Answer;

use crate::helpers::{Profile, World};

fn utc(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s)
        .expect("valid")
        .with_timezone(&Utc)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weekly_weigh_in_reaches_who_wants_it() {
    let w = World::new().await;
    let default = w.person("default@example.com", None);
    let on = w.person("on@example.com", Some(Profile::default()));
    let off = w.person(
        "off@example.com",
        Some(Profile {
            weekly_weigh_in: false,
            ..Profile::default()
        }),
    );
    let paused = w.person(
        "paused@example.com",
        Some(Profile {
            paused_until: Some(utc("2026-12-01T00:00:00Z")),
            ..Profile::default()
        }),
    );
    // Monday 23 November 2026, 09:00 in Rome.
    let r = w.fire("weekly-weigh-in", "2026-11-23T08:00:00Z", 10);
    assert_eq!(r["slot"], "2026-11-23T09:00:00");
    assert_eq!(
        (
            r["queued"].as_i64(),
            r["sent"].as_u64(),
            r["skipped"].as_i64()
        ),
        (Some(3), Some(3), Some(1)),
        "{r}"
    );
    assert_eq!(w.kinds(&default), ["weekly_weigh_in"], "on by default");
    assert_eq!(w.kinds(&on), ["weekly_weigh_in"]);
    assert_eq!(
        w.kinds(&paused),
        ["weekly_weigh_in"],
        "the pause skips fasting and meal notifications only"
    );
    assert!(w.kinds(&off).is_empty());
    assert!(w.push.rejected().is_empty(), "every VAPID header verified");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn meal_reminders_skip_paused_users_and_those_who_switched_them_off() {
    let w = World::new().await;
    let at = utc("2026-11-23T12:00:00Z"); // 13:00 in Rome
    let on = w.person("on@example.com", Some(Profile::default()));
    let default = w.person("default@example.com", None);
    let off = w.person(
        "off@example.com",
        Some(Profile {
            meal_reminders: false,
            ..Profile::default()
        }),
    );
    let paused = w.person(
        "paused@example.com",
        Some(Profile {
            paused_until: Some(at + chrono::Duration::hours(5)),
            ..Profile::default()
        }),
    );
    let was_paused = w.person(
        "was@example.com",
        Some(Profile {
            paused_until: Some(at - chrono::Duration::hours(1)),
            ..Profile::default()
        }),
    );
    let r = w.fire("meal-lunch", "2026-11-23T12:00:00Z", 10);
    assert_eq!(
        (r["sent"].as_u64(), r["skipped"].as_i64()),
        (Some(2), Some(3)),
        "{r}"
    );
    assert_eq!(w.kinds(&on), ["meal_lunch"]);
    assert_eq!(
        w.kinds(&was_paused),
        ["meal_lunch"],
        "a pause that ended skips nothing"
    );
    for p in [&default, &off, &paused] {
        assert!(
            w.kinds(p).is_empty(),
            "meal reminders default off, and paused users are skipped"
        );
    }
    let lunch: serde_json::Value =
        serde_json::from_slice(&w.push.received(&on.device)[0].plaintext).expect("JSON");
    assert_eq!(lunch["url"], "/plan");
    assert!(
        lunch["body"]
            .as_str()
            .unwrap_or_default()
            .contains("pranzo")
    );
    assert_eq!(w.fire("meal-snack", "2026-11-23T15:00:00Z", 10)["sent"], 2);
    // The pause ended at 17:00 UTC: dinner reaches that user again.
    assert_eq!(w.fire("meal-dinner", "2026-11-23T18:00:00Z", 10)["sent"], 3);
    assert_eq!(w.kinds(&on), ["meal_lunch", "meal_snack", "meal_dinner"]);
    assert_eq!(w.kinds(&paused), ["meal_dinner"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn milestones_once_per_fast_and_only_while_it_runs() {
    let w = World::new().await;
    let at = utc("2026-11-23T10:05:00Z");
    let runner = w.person("runner@example.com", Some(Profile::default()));
    let quiet = w.person(
        "quiet@example.com",
        Some(Profile {
            milestones: false,
            ..Profile::default()
        }),
    );
    let paused = w.person(
        "paused@example.com",
        Some(Profile {
            paused_until: Some(at + chrono::Duration::hours(1)),
            ..Profile::default()
        }),
    );
    let done = w.person("done@example.com", Some(Profile::default()));
    let fast = w.fast(&runner, at - chrono::Duration::minutes(125), 16, &[]);
    w.fast(&quiet, at - chrono::Duration::minutes(125), 16, &[]);
    w.fast(&paused, at - chrono::Duration::minutes(125), 16, &[]);
    let ended = w.fast(&done, at - chrono::Duration::minutes(125), 16, &[]);
    w.sql(&format!("UPDATE nutrition.fast_event SET status = 'ENDED_EARLY', ended_at = '{}' WHERE id = '{ended}'", (at - chrono::Duration::minutes(60)).to_rfc3339()));

    let r = w.fire("milestones", "2026-11-23T10:05:00Z", 10);
    assert_eq!(
        (r["sent"].as_u64(), r["skipped"].as_i64()),
        (Some(1), Some(2)),
        "{r}"
    );
    assert_eq!(w.kinds(&runner), ["hydration_2h"]);
    for p in [&quiet, &paused, &done] {
        assert!(w.kinds(p).is_empty());
    }
    assert_eq!(
        w.count(&format!("SELECT count(*) AS n FROM nutrition.fast_event WHERE id = '{fast}' AND notified_milestones = '{{hydration_2h}}'")),
        1,
        "recorded in notifiedMilestones"
    );
    // The next slot finds nothing new; two hours later the next milestone comes, also to the user
    // whose pause has ended meanwhile (only the latest of the two milestones due for them).
    assert_eq!(w.fire("milestones", "2026-11-23T10:10:00Z", 10)["sent"], 0);
    assert_eq!(w.fire("milestones", "2026-11-23T12:05:00Z", 10)["sent"], 2);
    assert_eq!(w.kinds(&runner), ["hydration_2h", "hydration_4h"]);
    assert_eq!(w.kinds(&paused), ["hydration_4h"]);
    assert!(w.kinds(&quiet).is_empty());
}

/// A fast written by something other than nutrition-api (an import, an operator's SQL) does not
/// know the instant of its next milestone; the run still finds it and schedules it from then on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fast_written_without_its_next_milestone_is_still_found() {
    let w = World::new().await;
    let at = utc("2026-11-23T10:05:00Z");
    let runner = w.person("imported@example.com", Some(Profile::default()));
    let started = at - chrono::Duration::minutes(125);
    let id = session::ids::id();
    w.sql(&format!(
        "INSERT INTO nutrition.fast_event (id, user_id, status, protocol, started_at, planned_end_at)
         VALUES ('{id}', '{}', 'IN_PROGRESS', '16:0', '{}', '{}')",
        runner.id,
        started.to_rfc3339(),
        (started + chrono::Duration::hours(16)).to_rfc3339()
    ));

    let r = w.fire("milestones", "2026-11-23T10:05:00Z", 10);
    assert_eq!(r["sent"].as_u64(), Some(1), "{r}");
    assert_eq!(w.kinds(&runner), ["hydration_2h"]);
    assert_eq!(w.fire("milestones", "2026-11-23T10:10:00Z", 10)["sent"], 0);
    assert_eq!(w.fire("milestones", "2026-11-23T12:05:00Z", 10)["sent"], 1);
    assert_eq!(w.kinds(&runner), ["hydration_2h", "hydration_4h"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_downtime_only_the_latest_milestone_is_pushed_and_old_slots_are_dropped() {
    let w = World::new().await;
    let runner = w.person("late@example.com", Some(Profile::default()));
    let at = utc("2026-11-23T17:00:00Z");
    let fast = w.fast(&runner, at - chrono::Duration::hours(7), 16, &[]);
    let r = w.fire("milestones", "2026-11-23T17:00:00Z", 10);
    assert_eq!(r["sent"], 1);
    assert_eq!(
        w.kinds(&runner),
        ["hydration_6h"],
        "2 h and 4 h are recorded, not pushed"
    );
    assert_eq!(
        w.count(&format!(
            "SELECT count(*) AS n FROM nutrition.fast_event WHERE id = '{fast}'
               AND notified_milestones @> '{{hydration_2h,hydration_4h,hydration_6h}}'"
        )),
        1
    );
    // A lunch reminder 40 minutes late is outside its window: nothing runs.
    let late = w.fire("meal-lunch", "2026-11-23T12:40:00Z", 10);
    assert_eq!(
        (late["slot"].clone(), late["sent"].as_u64()),
        (serde_json::Value::Null, Some(0))
    );
    // 25 minutes late is still inside it.
    let ok = w.fire("meal-lunch", "2026-11-23T12:25:00Z", 10);
    assert_eq!(ok["slot"], "2026-11-23T13:00:00");
    assert_eq!(ok["sent"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slot_runs_once_even_when_fired_twice_or_by_two_processes() {
    let w = World::new().await;
    let people: Vec<_> = (0..6)
        .map(|i| w.person(&format!("p{i}@example.com"), Some(Profile::default())))
        .collect();
    let first = w.fire("meal-dinner", "2026-11-23T18:00:00Z", 10);
    assert_eq!(first["sent"], 6);
    let again = w.fire("meal-dinner", "2026-11-23T18:01:00Z", 10);
    assert_eq!(
        (
            again["alreadyRan"].as_bool(),
            again["queued"].as_i64(),
            again["sent"].as_u64()
        ),
        (Some(true), Some(0), Some(0))
    );

    // Two processes at the same instant on the next day's slot.
    let children: Vec<_> = (0..2)
        .map(|_| {
            w.fire_command("meal-dinner", "2026-11-24T18:00:00Z", 10)
                .spawn()
                .expect("spawn")
        })
        .collect();
    let reports: Vec<serde_json::Value> = children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().expect("wait");
            assert!(out.status.success());
            serde_json::from_slice(out.stdout.trim_ascii()).expect("JSON line")
        })
        .collect();
    assert_eq!(
        reports.iter().filter(|r| r["alreadyRan"] == false).count(),
        1,
        "{reports:?}"
    );
    for p in &people {
        assert_eq!(
            w.kinds(p),
            ["meal_dinner", "meal_dinner"],
            "once per day, never twice"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gone_devices_are_deleted_and_busy_services_retried() {
    let w = World::new().await;
    let gone = w.person("gone@example.com", Some(Profile::default()));
    let gone404 = w.person("gone404@example.com", Some(Profile::default()));
    let limited = w.person("limited@example.com", Some(Profile::default()));
    let busy = w.person("busy@example.com", Some(Profile::default()));
    w.push.respond(&gone.device, Answer::Gone410);
    w.push.respond(&gone404.device, Answer::Gone404);
    w.push.respond_sequence(
        &limited.device,
        vec![
            Answer::TooMany {
                retry_after: Some(1),
            },
            Answer::Created,
        ],
    );
    w.push
        .respond_sequence(&busy.device, vec![Answer::Unavailable503, Answer::Created]);
    let r = w.fire("meal-lunch", "2026-11-23T12:00:00Z", 20);
    assert_eq!(
        (
            r["sent"].as_u64(),
            r["removed"].as_u64(),
            r["failed"].as_u64()
        ),
        (Some(2), Some(2), Some(0)),
        "{r}"
    );
    assert_eq!(
        w.kinds(&limited),
        ["meal_lunch"],
        "delivered after Retry-After"
    );
    assert_eq!(w.kinds(&busy), ["meal_lunch"], "delivered after a backoff");
    assert_eq!(
        w.count("SELECT count(*) AS n FROM nutrition.device_token"),
        2,
        "404 and 410 deleted the devices"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_killed_during_delivery_loses_nothing_and_doubles_nothing() {
    let w = World::new().await;
    let people: Vec<_> = (0..4)
        .map(|i| w.person(&format!("k{i}@example.com"), Some(Profile::default())))
        .collect();
    let stuck = &people[3];
    w.push.respond(&stuck.device, Answer::Hang);
    let mut child = w
        .fire_command("meal-snack", "2026-11-23T15:00:00Z", 60)
        .spawn()
        .expect("spawn");
    // Wait until the three others are delivered and recorded as such (a push service sees a
    // message before its sender commits the outcome; a kill in between would rightly send it
    // again) and the fourth is hanging at the push service.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let recorded =
        || w.count("SELECT count(*) AS n FROM scheduler.outbox WHERE status = 'delivered'");
    while people[..3].iter().any(|p| w.kinds(p).is_empty())
        || w.push.requests() < 4
        || recorded() < 3
    {
        assert!(
            std::time::Instant::now() < deadline,
            "delivery did not progress"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    std::process::Command::new("kill")
        .args(["-KILL", &child.id().to_string()])
        .status()
        .expect("kill");
    let _ = child.wait();
    w.push.respond(&stuck.device, Answer::Created);
    // The next run (any job) drains what is still queued.
    let next = w.fire("meal-dinner", "2026-11-23T18:00:00Z", 20);
    assert_eq!(
        next["sent"], 5,
        "{next}: four dinners and the snack that was stuck"
    );
    // A user's messages may be in flight together (two per user), so the stuck snack and the
    // dinner can arrive in either order: what counts is that each arrives once.
    let sorted = |p: &crate::helpers::Person| {
        let mut kinds = w.kinds(p);
        kinds.sort();
        kinds
    };
    for p in &people[..3] {
        assert_eq!(
            sorted(p),
            ["meal_dinner", "meal_snack"],
            "nothing delivered twice"
        );
    }
    assert_eq!(sorted(stuck), ["meal_dinner", "meal_snack"], "nothing lost");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dst_weekly_at_nine_local_and_no_double_run_in_the_repeated_hour() {
    let w = World::new().await;
    let p = w.person("dst@example.com", Some(Profile::default()));
    // Monday after the March change: 09:00 CEST is 07:00 UTC.
    let march = w.fire("weekly-weigh-in", "2026-03-30T07:00:00Z", 10);
    assert_eq!(
        (march["slot"].as_str(), march["sent"].as_u64()),
        (Some("2026-03-30T09:00:00"), Some(1))
    );
    // At 07:00 UTC in winter it is 08:00 in Rome: no slot yet.
    let winter_early = w.fire("weekly-weigh-in", "2026-10-26T07:00:00Z", 10);
    assert_eq!(winter_early["slot"], serde_json::Value::Null);
    let winter = w.fire("weekly-weigh-in", "2026-10-26T08:00:00Z", 10);
    assert_eq!(
        (winter["slot"].as_str(), winter["sent"].as_u64()),
        (Some("2026-10-26T09:00:00"), Some(1))
    );

    // 25 October: 02:05 happens twice (CEST, then CET). The second is the same slot.
    w.fast(&p, utc("2026-10-24T22:00:00Z"), 16, &[]);
    let first = w.fire("milestones", "2026-10-25T00:05:00Z", 10);
    let second = w.fire("milestones", "2026-10-25T01:05:00Z", 10);
    assert_eq!(first["slot"], second["slot"]);
    assert_eq!(
        (
            first["alreadyRan"].as_bool(),
            second["alreadyRan"].as_bool()
        ),
        (Some(false), Some(true))
    );
    assert_eq!(
        w.kinds(&p),
        ["weekly_weigh_in", "weekly_weigh_in", "hydration_2h"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_serve_replicas_push_each_milestone_once() {
    let w = World::new().await;
    let people: Vec<_> = (0..3)
        .map(|i| w.person(&format!("r{i}@example.com"), Some(Profile::default())))
        .collect();
    let now = Utc::now();
    for p in &people {
        w.fast(p, now - chrono::Duration::minutes(121), 16, &[]);
    }
    let dir = testkit::stack::ScratchDir::new("replicas");
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_push-scheduler"));
    let replicas: Vec<_> = (0..2)
        .map(|i| {
            let mut env: Vec<(&str, &str)> = w
                .env
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            env.retain(|(k, _)| *k != "LISTEN_ADDR");
            let port = testkit::stack::free_port().to_string();
            let addr = format!("127.0.0.1:{port}");
            let env: Vec<(String, String)> = env
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .chain([("LISTEN_ADDR".to_owned(), addr)])
                .collect();
            let env: Vec<(&str, &str)> =
                env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            testkit::stack::Process::start(
                &format!("replica-{i}"),
                bin,
                &["serve"],
                &env,
                dir.path(),
            )
        })
        .collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let milestones = |p: &crate::helpers::Person| {
        w.kinds(p)
            .into_iter()
            .filter(|k| k.starts_with("hydration"))
            .count()
    };
    while people.iter().any(|p| milestones(p) == 0) {
        assert!(
            std::time::Instant::now() < deadline,
            "replicas sent nothing: {}",
            replicas[0].log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Give a second replica every chance to send again.
    tokio::time::sleep(Duration::from_secs(3)).await;
    // Other jobs may be due at the real time of the run; the milestone must arrive exactly once.
    for p in &people {
        assert_eq!(milestones(p), 1, "{:?}", w.kinds(p));
    }
    drop(replicas);
}
