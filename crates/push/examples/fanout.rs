//! Push fan-out throughput: how many notifications per second one [`push::Sender`] gets through
//! with a fixed number in flight. Three commands:
//!
//! - `check [messages] [subscriptions] [in-flight]` (defaults 5000, 200, 32): against the test
//!   kit's fake push service, which verifies the VAPID token and decrypts every message as a real
//!   push service would; every payload must come back exactly. Beside it, in the same run and
//!   against the same server, plain HTTP POSTs of the same body size, the floor cost of HTTP.
//! - `setup <origin> <subscriptions> <file>`: writes a VAPID key pair and that many subscriptions
//!   on `<origin>/push/<n>`, each with its own P-256 key and auth secret, as JSON
//!   (`{"vapid": {"publicKey", "privateKey", "subject"}, "subscriptions": [{"endpoint",
//!   "keys": {"p256dh", "auth"}}]}`), the shape npm `web-push` takes too.
//! - `send <file> <messages> <in-flight> <warm-up>`: sends `warm-up` messages, then times
//!   `messages` more, round-robin over the file's subscriptions; every answer must be a 2xx.
//!   Prints one JSON line `{"messages", "seconds", "rate", "vapidSignings"}`. The receiver's
//!   certificate is trusted the OpenSSL way (`SSL_CERT_FILE`).
//!
//! `bench/push/run` runs them; everything stays on 127.0.0.1.

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use p256::elliptic_curve::sec1::ToEncodedPoint;
use push::{Outcome, Sender, VapidConfig, VapidKeyPair};
use service_kit::Secret;
use testkit::push_service::FakePushService;

/// The whole run, both measurements and the checks, must end within this.
const TIME_LIMIT: Duration = Duration::from_secs(300);
const TTL: Duration = Duration::from_secs(3600);
const WARM_UP: usize = 64;
const SUBJECT: &str = "mailto:bench@example.com";

const USAGE: &str = "usage: fanout check [messages] [subscriptions] [in-flight]
       fanout setup <origin> <subscriptions> <file>
       fanout send <file> <messages> <in-flight> <warm-up>";

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let work = async {
        match args.first().map(String::as_str) {
            Some("check") | None => {
                let n = |i: usize, default: usize| number(args.get(i), default);
                run(n(1, 5000)?, n(2, 200)?, n(3, 32)?).await
            }
            Some("setup") if args.len() == 4 => setup(&args[1], number(args.get(2), 0)?, &args[3]),
            Some("send") if args.len() == 5 => {
                send(
                    &args[1],
                    number(args.get(2), 0)?,
                    number(args.get(3), 0)?,
                    args[4].parse().map_err(|_| USAGE.to_owned())?,
                )
                .await
            }
            _ => Err(USAGE.to_owned()),
        }
    };
    match tokio::time::timeout(TIME_LIMIT, work).await {
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

/// A whole number ≥ 1, or `default` when absent.
fn number(arg: Option<&String>, default: usize) -> Result<usize, String> {
    match arg {
        None if default > 0 => Ok(default),
        None => Err(USAGE.to_owned()),
        Some(a) => match a.parse::<usize>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(format!(
                "arguments are whole numbers ≥ 1, got '{a}'\n{USAGE}"
            )),
        },
    }
}

fn setup(origin: &str, subscriptions: usize, file: &str) -> Result<(), String> {
    let pair = VapidKeyPair::generate();
    let subs: Vec<serde_json::Value> = (0..subscriptions)
        .map(|n| {
            let key = p256::SecretKey::random(&mut rand_core::OsRng);
            let auth: [u8; 16] = rand::random();
            serde_json::json!({
                "endpoint": format!("{}/push/{n}", origin.trim_end_matches('/')),
                "keys": {
                    "p256dh": URL_SAFE_NO_PAD.encode(key.public_key().to_encoded_point(false)),
                    "auth": URL_SAFE_NO_PAD.encode(auth),
                },
            })
        })
        .collect();
    let doc = serde_json::json!({
        "vapid": {
            "publicKey": pair.public_key,
            "privateKey": pair.private_key.expose(),
            "subject": SUBJECT,
        },
        "subscriptions": subs,
    });
    std::fs::write(file, doc.to_string()).map_err(|e| format!("{file}: {e}"))
}

async fn send(file: &str, messages: usize, in_flight: usize, warm_up: usize) -> Result<(), String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?;
    let doc: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{file}: {e}"))?;
    let field = |v: &serde_json::Value, path: &str| -> Result<String, String> {
        v.pointer(path)
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| format!("{file}: {path} is missing"))
    };
    let subs = doc["subscriptions"]
        .as_array()
        .filter(|a| !a.is_empty())
        .ok_or_else(|| format!("{file}: no subscriptions"))?
        .iter()
        .map(|s| {
            Ok(push::Subscription {
                endpoint: field(s, "/endpoint")?,
                p256dh: field(s, "/keys/p256dh")?,
                auth: field(s, "/keys/auth")?,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let subs = Arc::new(subs);
    let sender = Sender::new(
        VapidConfig {
            public_key: field(&doc, "/vapid/publicKey")?,
            private_key: Secret::new(field(&doc, "/vapid/privateKey")?),
            subject: field(&doc, "/vapid/subject")?,
        },
        // The receiver is on 127.0.0.1, which the endpoint rules refuse otherwise.
        true,
    )
    .map_err(|e| e.to_string())?;
    let task = {
        let (sender, subs) = (sender.clone(), Arc::clone(&subs));
        move |offset: usize| {
            let (sender, subs) = (sender.clone(), Arc::clone(&subs));
            move |i: usize| {
                let (sender, subs) = (sender.clone(), Arc::clone(&subs));
                async move {
                    let n = offset + i;
                    sender.send(&subs[n % subs.len()], &payload(n), TTL).await
                }
            }
        }
    };
    if warm_up > 0 {
        check_all_delivered(&run_concurrently(warm_up, in_flight, task(0)).await)?;
    }
    let started = Instant::now();
    let outcomes = run_concurrently(messages, in_flight, task(warm_up)).await;
    let seconds = started.elapsed().as_secs_f64();
    check_all_delivered(&outcomes)?;
    println!(
        "{}",
        serde_json::json!({
            "messages": messages,
            "seconds": seconds,
            "rate": messages as f64 / seconds,
            "vapidSignings": sender.jwt_signings(),
        })
    );
    Ok(())
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
            subject: SUBJECT.to_owned(),
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
