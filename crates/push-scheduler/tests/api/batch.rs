//! A backlog is drained in batches: each sender claims many due messages in one statement, sends
//! them together and settles them in one transaction. Two replicas still send each message once,
//! removing a device still waits for a batch that is sending to it, and a replica killed mid-batch
//! loses nothing and has at most its batches sent again, under the same Topic.

use std::time::{Duration, Instant};

use testkit::push_service::{Answer, FakeSubscription};

use crate::helpers::{Profile, World};

/// Nothing scheduled: only the rows a test queues itself are delivered.
const QUIET: Profile = Profile {
    meal_reminders: false,
    weekly_weigh_in: false,
    milestones: false,
    paused_until: None,
};

/// `n` users with one device each, all in one statement.
fn users(w: &World, n: usize) -> Vec<(String, FakeSubscription)> {
    let people: Vec<(String, FakeSubscription)> = (0..n)
        .map(|_| (session::ids::id(), w.push.subscribe()))
        .collect();
    let users: Vec<String> = people
        .iter()
        .map(|(id, _)| format!("('{id}', 'T', lower('{id}@example.com'))"))
        .collect();
    let profiles: Vec<String> = people
        .iter()
        .map(|(id, _)| {
            format!(
                "('{id}', {}, {}, {})",
                QUIET.meal_reminders, QUIET.weekly_weigh_in, QUIET.milestones
            )
        })
        .collect();
    let devices: Vec<String> = people
        .iter()
        .map(|(id, d)| {
            format!(
                "('{}', '{id}', 'web', '{}', '{}', '{}')",
                session::ids::id(),
                d.endpoint,
                d.p256dh,
                d.auth
            )
        })
        .collect();
    w.sql(&format!(
        "INSERT INTO auth.\"user\" (id, name, email) VALUES {}",
        users.join(",")
    ));
    w.sql(&format!(
        "INSERT INTO nutrition.profile (user_id, meal_reminders, weekly_weigh_in, fasting_milestones) VALUES {}",
        profiles.join(",")
    ));
    w.sql(&format!(
        "INSERT INTO nutrition.device_token (id, user_id, platform, endpoint, p256dh, auth) VALUES {}",
        devices.join(",")
    ));
    people
}

/// Queues a push for every device, due now.
fn queue_all(w: &World) {
    w.sql(
        "INSERT INTO scheduler.outbox (job, slot, user_id, device_id, endpoint, p256dh, auth, payload, expires_at)
         SELECT 'meal-lunch', TIMESTAMP '2026-01-05 13:00', d.user_id, d.id, d.endpoint, d.p256dh, d.auth,
                '{\"kind\": \"meal_lunch\", \"tag\": \"meal_lunch\"}'::jsonb, now() + INTERVAL '1 hour'
           FROM nutrition.device_token d",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_drain_a_backlog_in_batches_each_message_once() {
    let w = World::new().await;
    let people = users(&w, 300);
    queue_all(&w);
    let dir = testkit::stack::ScratchDir::new("batch-two");
    let (a, a_base) = w.serve_at("a", &dir);
    let (b, b_base) = w.serve_at("b", &dir);
    let delivered =
        || w.count("SELECT count(*) AS n FROM scheduler.outbox WHERE status = 'delivered'");
    let deadline = Instant::now() + Duration::from_secs(60);
    // A batch is settled once all its sends have returned.
    while w.push.all_received().len() < people.len() || delivered() < people.len() as i64 {
        assert!(
            Instant::now() < deadline,
            "not drained:\n{}\n{}",
            a.log(),
            b.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A moment for a second send of any message, were there one, to arrive.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let batches = testkit::http::metric(&a_base, "push_batches_total").await
        + testkit::http::metric(&b_base, "push_batches_total").await;
    drop(a);
    drop(b);
    for (_, device) in &people {
        assert_eq!(
            w.push.received(device).len(),
            1,
            "each message exactly once"
        );
    }
    assert_eq!(
        w.count(
            "SELECT count(*) AS n FROM scheduler.outbox WHERE status = 'delivered' AND attempts = 1"
        ),
        300
    );
    // Claimed one by one, the 300 messages would take 300 claims. Each claim takes a share of
    // what is due, so the tail goes in small batches, still far fewer. (Counting the database's
    // transactions instead would also count the idle senders' looks and the slow sends settled
    // on their own, both of which grow with the load on the machine.)
    assert!(
        batches * 4.0 < people.len() as f64,
        "{batches} batches for {} messages: the backlog was not claimed in batches",
        people.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_a_device_waits_for_the_batch_sending_to_it() {
    let w = World::new().await;
    let people = users(&w, 60);
    let (slow_user, slow) = &people[0];
    w.push.respond(slow, Answer::Slow(Duration::from_secs(3)));
    queue_all(&w);
    let dir = testkit::stack::ScratchDir::new("batch-remove");
    let serve = w.serve("serve", &dir);
    let deadline = Instant::now() + Duration::from_secs(20);
    while w.push.received(slow).is_empty() {
        assert!(Instant::now() < deadline, "nothing sent: {}", serve.log());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The push service has the message and is still answering: the removal must wait.
    let started = Instant::now();
    w.sql(&format!(
        "DELETE FROM nutrition.device_token WHERE user_id = '{slow_user}'"
    ));
    let waited = started.elapsed();
    assert!(
        waited > Duration::from_millis(1000),
        "the device was removed after {waited:?}, while a send to it was in flight"
    );
    assert_eq!(
        w.count(&format!(
            "SELECT count(*) AS n FROM scheduler.outbox WHERE user_id = '{slow_user}' AND status = 'delivered'"
        )),
        1,
        "the send was settled before the removal returned"
    );
    drop(serve);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_mid_batch_loses_nothing_and_repeats_at_most_its_batches() {
    let w = World::new().await;
    let people = users(&w, 200);
    // The first row queued hangs at the push service, so its batch cannot commit.
    let (_, stuck) = &people[0];
    w.push.respond(stuck, Answer::Hang);
    queue_all(&w);
    let dir = testkit::stack::ScratchDir::new("batch-kill");
    let a = w.serve("a", &dir);
    let deadline = Instant::now() + Duration::from_secs(30);
    while w.push.all_received().len() < people.len() - 1 {
        assert!(Instant::now() < deadline, "delivery stalled: {}", a.log());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    std::process::Command::new("kill")
        .args(["-KILL", &a.pid().to_string()])
        .status()
        .expect("kill");
    drop(a);
    w.push.respond(stuck, Answer::Created);
    let b = w.serve("b", &dir);
    let deadline = Instant::now() + Duration::from_secs(30);
    while w.count("SELECT count(*) AS n FROM scheduler.outbox WHERE status <> 'delivered'") > 0 {
        assert!(Instant::now() < deadline, "not drained: {}", b.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(b);
    let mut repeats = 0;
    for (_, device) in &people {
        let got = w.push.received(device);
        assert!(!got.is_empty(), "nothing lost");
        // A repeat is the same message under the same Topic, which the push service collapses.
        for copy in &got[1..] {
            assert_eq!(copy.topic, got[0].topic);
            assert!(copy.topic.is_some());
            assert_eq!(copy.plaintext, got[0].plaintext);
        }
        repeats += got.len() - 1;
    }
    // At most one batch per sender of the killed process: 32 × (pool 6 − 2).
    assert!(
        repeats <= 32 * 4,
        "{repeats} repeats: more than the killed process had in flight"
    );
}

/// Several senders hold messages to one device when its push service answers 410 to all of them:
/// each deletes the device and cancels what is left for it, and none of them may wait for
/// another's lock while holding one the other needs (a deadlock would roll a whole batch back,
/// send it again and fail the drain).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn senders_finding_one_device_gone_together_do_not_deadlock() {
    let w = World::new().await;
    let people = users(&w, 1);
    let (user, device) = &people[0];
    w.push
        .respond(device, Answer::GoneAfter(Duration::from_millis(1500)));
    for slot in 0..6 {
        w.sql(&format!(
            "INSERT INTO scheduler.outbox (job, slot, user_id, device_id, endpoint, p256dh, auth, payload, expires_at)
             SELECT 'meal-lunch', TIMESTAMP '2026-01-05 13:00' + make_interval(days => {slot}), d.user_id, d.id,
                    d.endpoint, d.p256dh, d.auth, '{{\"kind\": \"meal_lunch\", \"tag\": \"meal_lunch\"}}'::jsonb,
                    now() + INTERVAL '1 hour'
               FROM nutrition.device_token d"
        ));
    }
    let dir = testkit::stack::ScratchDir::new("batch-gone");
    let a = w.serve("a", &dir);
    let b = w.serve("b", &dir);
    let deadline = Instant::now() + Duration::from_secs(30);
    while w.count(&format!(
        "SELECT count(*) AS n FROM scheduler.outbox WHERE user_id = '{user}' AND status = 'pending'"
    )) > 0
    {
        assert!(
            Instant::now() < deadline,
            "not settled:\n{}\n{}",
            a.log(),
            b.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        w.count("SELECT count(*) AS n FROM nutrition.device_token"),
        0,
        "the device is deleted"
    );
    for log in [a.log(), b.log()] {
        assert!(
            !log.contains("deadlock"),
            "a sender deadlocked on the gone device:\n{log}"
        );
    }
    assert!(
        w.push.requests() <= 6,
        "{} requests for 6 messages: a batch was rolled back and sent again",
        w.push.requests()
    );
}
