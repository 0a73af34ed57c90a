//! Push endpoints that never answer: only the known push services' hosts are sent to unless
//! configured otherwise, a message is settled as soon as its own send ends, and a host whose
//! sends keep timing out is left alone for a while, whatever subdomain each device names.

use std::time::{Duration, Instant};

use crate::helpers::{Profile, World};

/// Nothing scheduled: only the rows a test queues itself are delivered.
const QUIET: Profile = Profile {
    meal_reminders: false,
    weekly_weigh_in: false,
    milestones: false,
    paused_until: None,
};

fn set_env(w: &mut World, key: &str, value: &str) {
    w.env.retain(|(k, _)| k != key);
    w.env.push((key.to_owned(), value.to_owned()));
}

/// A user with one device on `endpoint` (with keys of a real subscription).
fn device_at(w: &World, endpoint: &str) -> (String, String) {
    let email = format!("{}@example.com", session::ids::id().to_lowercase());
    let person = w.person(&email, Some(QUIET));
    let device_id = session::ids::id();
    w.sql(&format!(
        "UPDATE nutrition.device_token SET id = '{device_id}', endpoint = '{endpoint}' WHERE user_id = '{}'",
        person.id
    ));
    (person.id, device_id)
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

fn outbox(w: &World, filter: &str) -> i64 {
    w.count(&format!(
        "SELECT count(*) AS n FROM scheduler.outbox WHERE {filter}"
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_device_registered_on_another_host_is_dropped_as_gone_not_sent() {
    let mut w = World::new().await;
    set_env(&mut w, "PUSH_ALLOW_HTTP_ENDPOINTS", "false");
    // Registered before only the push services' hosts were accepted.
    let (_, legacy) = device_at(&w, "https://push.example.com/send/x");
    let (_, widened) = device_at(&w, "https://other.example.org/send/y");
    queue_all(&w);
    let dir = testkit::stack::ScratchDir::new("tarpit-hosts");
    let serve = w.serve("serve", &dir);
    let deadline = Instant::now() + Duration::from_secs(20);
    while outbox(&w, "status = 'pending'") > 0 {
        assert!(Instant::now() < deadline, "not settled: {}", serve.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(serve);
    assert_eq!(
        outbox(&w, "status = 'gone'"),
        2,
        "{}",
        w.count("SELECT count(*) AS n FROM scheduler.outbox WHERE status = 'pending'")
    );
    assert_eq!(
        w.count(&format!(
            "SELECT count(*) AS n FROM nutrition.device_token WHERE id IN ('{legacy}', '{widened}')"
        )),
        0,
        "the devices are removed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_endpoint_hosts_is_applied_before_sending() {
    let mut w = World::new().await;
    set_env(&mut w, "PUSH_ALLOW_HTTP_ENDPOINTS", "false");
    set_env(&mut w, "PUSH_ENDPOINT_HOSTS", "push.example.com");
    let (_, kept) = device_at(&w, "https://eu.push.example.com/send/x");
    let (_, dropped) = device_at(&w, "https://fcm.googleapis.com/fcm/send/y");
    queue_all(&w);
    let dir = testkit::stack::ScratchDir::new("tarpit-hosts-env");
    let serve = w.serve("serve", &dir);
    let deadline = Instant::now() + Duration::from_secs(20);
    while outbox(
        &w,
        &format!("device_id = '{dropped}' AND status = 'pending'"),
    ) > 0
        || outbox(&w, &format!("device_id = '{kept}' AND attempts = 0")) > 0
    {
        assert!(Instant::now() < deadline, "not settled: {}", serve.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(serve);
    assert_eq!(
        outbox(&w, &format!("device_id = '{dropped}' AND status = 'gone'")),
        1
    );
    // The allowed host does not resolve here: tried and kept for a retry, not dropped.
    assert_eq!(
        outbox(&w, &format!("device_id = '{kept}' AND status <> 'gone'")),
        1
    );
}
