//! Push fan-out throughput: how many notifications per second one [`push::Sender`] gets through
//! with a fixed number in flight, against the test kit's fake push service, which verifies the
//! VAPID token and decrypts every message as a real push service would.
//!
//! Beside it, in the same run and against the same server, the baseline: the same number of
//! plain HTTP POSTs with a body of the same size to an endpoint that answers 201 without looking
//! at anything. The ratio is the price of Web Push (encryption, VAPID, the service's checks) over
//! bare HTTP on this machine. Everything stays on 127.0.0.1.
//!
//! `cargo run --release -p push --example fanout -- [messages] [subscriptions] [in-flight]`
//! (defaults 5000, 200, 32); `bench/push/run` runs it.

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use push::{Outcome, Sender, VapidConfig, VapidKeyPair};
use service_kit::Secret;
use testkit::push_service::FakePushService;

/// The whole run, both measurements and the checks, must end within this.
const TIME_LIMIT: Duration = Duration::from_secs(300);
const TTL: Duration = Duration::from_secs(3600);
const WARM_UP: usize = 64;

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let mut number = |default: usize| {
        args.next()
            .map(|a| a.parse::<usize>().expect("arguments are whole numbers"))
            .unwrap_or(default)
            .max(1)
    };
    let messages = number(5000);
    let subscriptions = number(200);
    let in_flight = number(32);

    match tokio::time::timeout(TIME_LIMIT, run(messages, subscriptions, in_flight)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            eprintln!("fanout: {e}");
            std::process::exit(1);
        }
        Err(_) => {
            eprintln!("fanout: did not finish within {TIME_LIMIT:?}");
            std::process::exit(1);
        }
    }
}

async fn run(messages: usize, subscriptions: usize, in_flight: usize) -> Result<(), String> {
    let service = FakePushService::start().await;
    let subs: Arc<Vec<push::Subscription>> =
        Arc::new((0..subscriptions).map(|_| service.subscribe()).collect());
    let pair = VapidKeyPair::generate();
    let sender = Sender::new(
        VapidConfig {
            public_key: pair.public_key,
            private_key: Secret::new(pair.private_key.expose()),
            subject: "mailto:bench@example.com".to_owned(),
        },
        true,
    )
    .map_err(|e| e.to_string())?;

    // Opens the connections and signs the VAPID token outside the measurement.
    let warm_up = run_concurrently(WARM_UP, in_flight, {
        let (sender, subs) = (sender.clone(), Arc::clone(&subs));
        move |i| {
            let (sender, subs) = (sender.clone(), Arc::clone(&subs));
            async move { sender.send(&subs[i % subs.len()], &payload(i), TTL).await }
        }
    })
    .await;
    check_all_delivered(&warm_up)?;

    let started = Instant::now();
    let outcomes = run_concurrently(messages, in_flight, {
        let (sender, subs) = (sender.clone(), Arc::clone(&subs));
        move |i| {
            let (sender, subs) = (sender.clone(), Arc::clone(&subs));
            async move {
                let i = WARM_UP + i;
                sender.send(&subs[i % subs.len()], &payload(i), TTL).await
            }
        }
    })
    .await;
    let push_elapsed = started.elapsed();
    check_all_delivered(&outcomes)?;

    // Every message arrived, was verified and decrypted to what was sent.
    let received = service.all_received();
    if received.len() != WARM_UP + messages || !service.rejected().is_empty() {
        return Err(format!(
            "the service received {} messages and rejected {}, expected {}",
            received.len(),
            service.rejected().len(),
            WARM_UP + messages
        ));
    }
    let expected: HashSet<Vec<u8>> = (0..WARM_UP + messages).map(payload).collect();
    let got: HashSet<Vec<u8>> = received.into_iter().map(|d| d.plaintext).collect();
    if got != expected {
        return Err("decrypted payloads differ from those sent".to_owned());
    }

    // The baseline: the same number of bodies of the encrypted size, as plain POSTs.
    let body = vec![0u8; encrypted_len(payload(WARM_UP).len())];
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| e.to_string())?;
    let plain = {
        let url = service.plain_endpoint();
        let body = body.clone();
        move |_: usize| {
            let (client, url, body) = (client.clone(), url.clone(), body.clone());
            async move {
                match client
                    .post(url)
                    .header("TTL", "3600")
                    .header("Content-Type", "application/octet-stream")
                    .body(body)
                    .send()
                    .await
                {
                    Ok(r) if r.status().as_u16() == 201 => Outcome::Delivered,
                    Ok(r) => Outcome::Failed {
                        status: Some(r.status().as_u16()),
                        reason: String::new(),
                    },
                    Err(e) => Outcome::Failed {
                        status: None,
                        reason: e.to_string(),
                    },
                }
            }
        }
    };
    check_all_delivered(&run_concurrently(WARM_UP, in_flight, plain.clone()).await)?;
    let started = Instant::now();
    let baseline = run_concurrently(messages, in_flight, plain).await;
    let plain_elapsed = started.elapsed();
    check_all_delivered(&baseline)?;

    if service.plain_requests() != (WARM_UP + messages) as u64 {
        return Err("the plain endpoint missed requests".to_owned());
    }

    let push_rate = messages as f64 / push_elapsed.as_secs_f64();
    let plain_rate = messages as f64 / plain_elapsed.as_secs_f64();
    println!(
        "{messages} messages over {subscriptions} subscriptions, {in_flight} in flight, one sender, 127.0.0.1."
    );
    println!();
    println!("| Measurement | Rate (/s) | Time (s) |");
    println!("|---|--:|--:|");
    println!(
        "| Web Push: encrypt + VAPID, service verifies + decrypts, 201 | {push_rate:.0} | {:.2} |",
        push_elapsed.as_secs_f64()
    );
    println!(
        "| Baseline: plain POST, {}-byte body, 201 | {plain_rate:.0} | {:.2} |",
        body.len(),
        plain_elapsed.as_secs_f64()
    );
    println!();
    println!(
        "Ratio Web Push / plain POST: {:.3}. VAPID tokens signed: {} for {} messages. \
         All {} messages were delivered, verified and decrypted to the payload sent.",
        push_rate / plain_rate,
        sender.jwt_signings(),
        WARM_UP + messages,
        WARM_UP + messages,
    );
    Ok(())
}

/// A notification like the product's, distinct per message so that each one can be checked.
fn payload(i: usize) -> Vec<u8> {
    serde_json::json!({
        "title": "Promemoria",
        "body": "È ora dello spuntino: uno yogurt o un frutto.",
        "url": "/plan",
        "tag": format!("bench-{i}"),
        "kind": "meal_snack",
    })
    .to_string()
    .into_bytes()
}

/// Size of the aes128gcm body for a plaintext of `len` bytes: header with the 65-byte key id,
/// plaintext padded to the next 128-byte boundary, and the 16-byte tag.
fn encrypted_len(len: usize) -> usize {
    21 + 65 + (len / 128 + 1) * 128 + 16
}

fn check_all_delivered(outcomes: &[Outcome]) -> Result<(), String> {
    match outcomes.iter().find(|o| **o != Outcome::Delivered) {
        Some(o) => Err(format!("a message was not delivered: {o:?}")),
        None => Ok(()),
    }
}

/// Runs `task(0..count)` with at most `in_flight` at a time; outcomes in no particular order.
async fn run_concurrently<F, Fut>(count: usize, in_flight: usize, task: F) -> Vec<Outcome>
where
    F: Fn(usize) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Outcome> + Send,
{
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..in_flight.min(count) {
        let (next, task) = (Arc::clone(&next), task.clone());
        workers.spawn(async move {
            let mut outcomes = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    return outcomes;
                }
                outcomes.push(task(i).await);
            }
        });
    }
    let mut all = Vec::with_capacity(count);
    while let Some(done) = workers.join_next().await {
        all.extend(done.unwrap_or_default());
    }
    all
}
