//! Push endpoints that never answer: only the known push services' hosts are sent to unless
//! configured otherwise, a message is settled as soon as its own send ends, and a host whose
//! sends keep timing out is left alone for a while, whatever subdomain each device names.

use std::sync::Arc;
use std::time::{Duration, Instant};

use push_scheduler::deliver::{Counters, Lanes, Shutdown, drain_due};
use service_kit::{Env, Secret};
use testkit::push_service::{FakeSubscription, Tarpit};

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

/// Queues a push for every device, due now, in no particular order of devices.
fn queue_all(w: &World) {
    w.sql(
        "INSERT INTO scheduler.outbox (job, slot, user_id, device_id, endpoint, p256dh, auth, payload, expires_at)
         SELECT 'meal-lunch', TIMESTAMP '2026-01-05 13:00', d.user_id, d.id, d.endpoint, d.p256dh, d.auth,
                '{\"kind\": \"meal_lunch\", \"tag\": \"meal_lunch\"}'::jsonb, now() + INTERVAL '1 hour'
           FROM nutrition.device_token d ORDER BY md5(d.id)
         ON CONFLICT DO NOTHING",
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
    let devices_left = || {
        w.count(&format!(
            "SELECT count(*) AS n FROM nutrition.device_token WHERE id IN ('{legacy}', '{widened}')"
        ))
    };
    // The devices are removed after the messages are settled.
    while outbox(&w, "status = 'pending'") > 0 || devices_left() > 0 {
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
    assert_eq!(devices_left(), 0, "the devices are removed");
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

/// `n` users with one device each, on the endpoint `endpoint` makes of a fresh subscription of
/// the world's push service (whose keys the device keeps).
fn devices(
    w: &World,
    n: usize,
    endpoint: impl Fn(usize, &FakeSubscription) -> String,
) -> Vec<FakeSubscription> {
    let people: Vec<(String, FakeSubscription)> = (0..n)
        .map(|i| {
            let mut sub = w.push.subscribe();
            sub.endpoint = endpoint(i, &sub);
            (session::ids::id(), sub)
        })
        .collect();
    let list = |row: &dyn Fn(&(String, FakeSubscription)) -> String| -> String {
        people.iter().map(row).collect::<Vec<_>>().join(",")
    };
    w.sql(&format!(
        "INSERT INTO auth.\"user\" (id, name, email) VALUES {}",
        list(&|(id, _)| format!("('{id}', 'T', lower('{id}@example.com'))"))
    ));
    w.sql(&format!(
        "INSERT INTO nutrition.profile (user_id, meal_reminders, weekly_weigh_in, fasting_milestones) VALUES {}",
        list(&|(id, _)| format!("('{id}', false, false, false)"))
    ));
    w.sql(&format!(
        "INSERT INTO nutrition.device_token (id, user_id, platform, endpoint, p256dh, auth) VALUES {}",
        list(&|(id, d)| format!(
            "('{}', '{id}', 'web', '{}', '{}', '{}')",
            session::ids::id(),
            d.endpoint,
            d.p256dh,
            d.auth
        ))
    ));
    people.into_iter().map(|(_, d)| d).collect()
}

/// The world's sender with this time-out, resolving `names` to `addr`.
fn sender(
    w: &World,
    timeout: Duration,
    names: &[String],
    addr: std::net::SocketAddr,
) -> push::Sender {
    let env = Env::from_pairs(w.env.clone());
    let vapid = push::VapidConfig::from_env(&env)
        .expect("VAPID settings")
        .expect("VAPID keys");
    push::Sender::with_options(
        vapid,
        push::SenderOptions {
            policy: push::EndpointPolicy::allow_http(),
            timeout,
            resolve: names.iter().map(|n| (n.clone(), addr)).collect(),
        },
    )
    .expect("sender")
}

/// Drains the outbox in this process with `workers` senders, as `serve` does.
fn drain(
    w: &World,
    sender: push::Sender,
    workers: usize,
) -> (
    tokio::task::JoinHandle<anyhow::Result<()>>,
    Arc<Counters>,
    Arc<Shutdown>,
) {
    drain_with(w, sender, Arc::new(Lanes::new(workers)), workers)
}

/// [`drain`] with lanes (and breakers) that outlive it, as in one `serve` process.
fn drain_with(
    w: &World,
    sender: push::Sender,
    lanes: Arc<Lanes>,
    workers: usize,
) -> (
    tokio::task::JoinHandle<anyhow::Result<()>>,
    Arc<Counters>,
    Arc<Shutdown>,
) {
    let pool = pg_store::pool(
        &Secret::new(w.db.url()),
        u32::try_from(workers + 3).expect("pool size"),
    );
    let counters = Arc::new(Counters::default());
    let shutdown = Arc::new(Shutdown::default());
    let task = {
        let counters = Arc::clone(&counters);
        let shutdown = Arc::clone(&shutdown);
        tokio::spawn(async move {
            drain_due(&pool, &sender, workers, &lanes, &counters, &shutdown).await
        })
    };
    (task, counters, shutdown)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_deliveries_settle_before_the_tarpit_time_out() {
    let w = World::new().await;
    let tarpit = Tarpit::start().await;
    let real = devices(&w, 200, |_, sub| sub.endpoint.clone());
    devices(&w, 20, |i, _| {
        tarpit.endpoint("127.0.0.1", &format!("d{i}"))
    });
    queue_all(&w);
    let timeout = Duration::from_secs(4);
    let started = Instant::now();
    let (task, counters, shutdown) = drain(&w, sender(&w, timeout, &[], tarpit.addr()), 4);
    let deadline = started + Duration::from_secs(30);
    while outbox(&w, "status = 'delivered'") < 200 {
        assert!(Instant::now() < deadline, "not delivered");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let settled_after = started.elapsed();
    assert!(
        settled_after < timeout,
        "the real deliveries were settled after {settled_after:?}, not before the tarpit's time-out of {timeout:?}"
    );
    // The tarpit's messages come back for their retries as long as the drain runs.
    while outbox(&w, "endpoint LIKE '%/tarpit/%' AND attempts = 0") > 0 {
        assert!(
            Instant::now() < deadline,
            "the tarpit's messages were not tried"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    shutdown.trigger();
    tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("drain ends")
        .expect("drain task")
        .expect("drain");
    assert_eq!(w.push.all_received().len(), real.len(), "each once");
    assert!(tarpit.connections() > 0, "the tarpit was tried");
    assert_eq!(
        outbox(&w, "endpoint LIKE '%/tarpit/%' AND status = 'pending'"),
        20,
        "the tarpit's messages wait for a retry, not failed"
    );
    let (sent, removed, failed, retried) = counters.snapshot();
    assert_eq!((sent, removed, failed), (200, 0, 0));
    assert!(retried >= 20, "{retried}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tarpit_farm_on_many_subdomains_costs_a_few_time_outs_per_cool_down() {
    let w = World::new().await;
    let tarpit = Tarpit::start().await;
    let names: Vec<String> = (0..20).map(|i| format!("t{i}.tarpit.localhost")).collect();
    let sender = sender(&w, Duration::from_secs(1), &names, tarpit.addr());
    let lanes = Arc::new(Lanes::new(2));
    let real = devices(&w, 30, |_, sub| sub.endpoint.clone());
    devices(&w, 3, |i, _| tarpit.endpoint(&names[i], "first"));
    queue_all(&w);
    let (task, _, _) = drain_with(&w, sender.clone(), Arc::clone(&lanes), 2);
    tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("drain ends")
        .expect("drain task")
        .expect("drain");
    assert_eq!(tarpit.connections(), 3, "the first three were tried");
    assert_eq!(w.push.all_received().len(), real.len());

    // Seventeen more devices of the same domain, each on a name of its own.
    devices(&w, 17, |i, _| tarpit.endpoint(&names[i + 3], "more"));
    queue_all(&w);
    let started = Instant::now();
    let (task, counters, _) = drain_with(&w, sender, Arc::clone(&lanes), 2);
    tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("drain ends")
        .expect("drain task")
        .expect("drain");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "nothing waited for a time-out: {:?}",
        started.elapsed()
    );
    assert_eq!(
        tarpit.connections(),
        3,
        "the domain's other subdomains were not tried"
    );
    assert_eq!(
        outbox(
            &w,
            "endpoint LIKE '%/tarpit/more' AND status = 'pending' AND attempts = 0
             AND next_attempt_at > now() + INTERVAL '1 minute'"
        ),
        17,
        "deferred for the cool-down, not counted against the devices"
    );
    assert_eq!(counters.snapshot().2, 0, "no failure");
}
