//! A flood of sign-ins: password hashing is bounded (the rest is a 503 with `Retry-After`),
//! sessions keep being answered, and the memory of the process stays bounded and comes back.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use testkit::postgres::TestPostgres;
use testkit::stack::{self, Process, ScratchDir, free_port};

use crate::helpers::{BASE_URL, Resp, SECRET, send, spawn_with};

/// Concurrent wrong sign-ins, each from its own address, in the flood.
const FLOOD: usize = 200;

async fn wrong_sign_in(http: &reqwest::Client, base: &str, i: usize) -> Resp {
    send(
        http.post(format!("{base}/api/auth/sign-in/email"))
            .header(
                "x-forwarded-for",
                format!("198.18.{}.{}", i / 250, i % 250 + 1),
            )
            .json(
                &json!({ "email": format!("nobody{i}@example.com"), "password": "wrong-password" }),
            ),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hashing_is_capped_and_the_excess_is_503_with_retry_after() {
    let app = spawn_with(&[
        ("AUTH_HASH_CONCURRENCY".into(), "1".into()),
        ("TRUSTED_PROXIES".into(), "127.0.0.1".into()),
    ])
    .await;
    let (cookie, _) = app.sign_up("owner@example.com", "password-123").await;
    let flood = (0..120).map(|i| wrong_sign_in(&app.http, &app.base, i));
    let session = async {
        // While the flood runs, a signed-in user's session still answers.
        tokio::time::sleep(Duration::from_millis(50)).await;
        app.get("/api/auth/get-session", Some(&cookie)).await
    };
    let (answers, session) = tokio::join!(futures_util::future::join_all(flood), session);
    assert_eq!(session.status, 200, "{}", session.text);
    assert_eq!(session.body["user"]["email"], "owner@example.com");
    let busy: Vec<&Resp> = answers.iter().filter(|r| r.status == 503).collect();
    let refused = answers.iter().filter(|r| r.status == 401).count();
    assert_eq!(
        busy.len() + refused,
        answers.len(),
        "only 401 and 503: {:?}",
        answers.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    assert!(refused >= 1, "some are hashed");
    assert!(
        !busy.is_empty(),
        "one worker and a short queue cannot take 120 at once"
    );
    for r in busy {
        assert_eq!(r.body["code"], "SERVER_BUSY", "{}", r.text);
        assert!(r.body["message"].as_str().is_some_and(|m| !m.is_empty()));
        assert_eq!(r.header("retry-after").as_deref(), Some("2"));
        assert_eq!(r.header("x-retry-after").as_deref(), Some("2"));
    }
    // Once the flood is over, sign-in works again.
    let ok = app.sign_in("owner@example.com", "password-123").await;
    assert_eq!(ok.status, 200, "{}", ok.text);
}

/// The real binary, as deployed behind a proxy on loopback.
struct Served {
    process: Process,
    base: String,
    _db: TestPostgres,
    _dir: ScratchDir,
}

fn serve() -> Served {
    let db = TestPostgres::empty();
    let dir = ScratchDir::new("auth-flood");
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let env = [
        ("DATABASE_URL", db.url()),
        ("LISTEN_ADDR", listen.as_str()),
        ("AUTH_SECRET", SECRET),
        ("AUTH_BASE_URL", BASE_URL),
        ("TRUSTED_PROXIES", "127.0.0.1"),
        ("LOG_FORMAT", "json"),
    ];
    let process = Process::start(
        "auth",
        Path::new(env!("CARGO_BIN_EXE_auth")),
        &[],
        &env,
        dir.path(),
    );
    Served {
        process,
        base: format!("http://{listen}"),
        _db: db,
        _dir: dir,
    }
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

/// Floods the real binary and checks what must hold during and right after; returns the
/// served process and its idle RSS (KiB) for longer checks.
async fn flood_the_binary() -> (Served, u64) {
    let served = serve();
    let http = testkit::http::client();
    let ready = testkit::http::wait_for_status(
        &format!("{}/ready", served.base),
        200,
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(ready, Some(200), "{}", served.process.log());
    let owner = send(http.post(format!("{}/api/auth/sign-up/email", served.base))
            .header("x-forwarded-for", "192.0.2.10")
            .json(&json!({ "name": "Owner", "email": "owner@example.com", "password": "password-123" }))).await;
    assert_eq!(owner.status, 200, "{}", owner.text);
    let cookie = owner.session_cookie().expect("cookie");
    let pid = served.process.pid();
    let idle = stack::memory(pid).expect("memory of auth");

    let base = served.base.clone();
    let flood = tokio::spawn({
        let http = http.clone();
        async move {
            let all = (0..FLOOD).map(|i| wrong_sign_in(&http, &base, i));
            futures_util::future::join_all(all).await
        }
    });
    let mut latencies = Vec::new();
    let mut session_statuses = Vec::new();
    let started = Instant::now();
    while !flood.is_finished() || latencies.len() < 20 {
        let t = Instant::now();
        let r = send(
            http.get(format!("{}/api/auth/get-session", served.base))
                .header("cookie", &cookie),
        )
        .await;
        latencies.push(t.elapsed());
        session_statuses.push(r.status);
        assert_eq!(r.body["user"]["email"], "owner@example.com", "{}", r.text);
    }
    let flood_time = started.elapsed();
    let answers = flood.await.expect("flood");
    let after = stack::memory(pid).expect("memory of auth");

    latencies.sort();
    let count = |s: u16| answers.iter().filter(|r| r.status == s).count();
    let (refused, limited, busy) = (count(401), count(429), count(503));
    println!(
        "flood of {FLOOD} wrong sign-ins from {FLOOD} addresses in {:.2} s: {refused} × 401, \
         {limited} × 429, {busy} × 503",
        flood_time.as_secs_f64()
    );
    println!(
        "get-session during the flood: {} requests, p50 {:.1} ms, p90 {:.1} ms, max {:.1} ms",
        latencies.len(),
        percentile(&latencies, 0.5).as_secs_f64() * 1000.0,
        percentile(&latencies, 0.9).as_secs_f64() * 1000.0,
        latencies.last().copied().unwrap_or_default().as_secs_f64() * 1000.0,
    );
    println!(
        "auth RSS: idle {:.1} MiB, peak {:.1} MiB, right after the flood {:.1} MiB",
        mib(idle.rss_kib),
        mib(after.peak_kib),
        mib(after.rss_kib)
    );

    assert!(
        session_statuses.iter().all(|s| *s == 200),
        "{session_statuses:?}"
    );
    assert!(
        percentile(&latencies, 0.9) < Duration::from_secs(1),
        "get-session p90 under a second"
    );
    assert_eq!(refused + limited + busy, FLOOD, "only 401, 429 and 503");
    assert!(refused > 0, "some sign-ins were checked");
    for r in answers.iter().filter(|r| r.status == 503) {
        assert_eq!(r.body["code"], "SERVER_BUSY", "{}", r.text);
        assert!(r.header("retry-after").is_some());
    }
    assert!(
        after.peak_kib < 400 * 1024,
        "peak RSS {:.1} MiB",
        mib(after.peak_kib)
    );
    let errors = served.process.server_errors();
    assert!(errors.is_empty(), "errors in the log: {errors:#?}");
    (served, idle.rss_kib)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flood_of_wrong_sign_ins_keeps_sessions_answering_in_bounded_memory() {
    let (served, idle) = flood_the_binary().await;
    // The hashing memory is reused, not given back and taken again: a few seconds later the
    // process is close to where it started.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let later = stack::memory(served.process.pid()).expect("memory");
    println!(
        "auth RSS 3 s after the flood: {:.1} MiB",
        mib(later.rss_kib)
    );
    assert!(
        later.rss_kib < idle + 64 * 1024,
        "RSS {:.1} MiB, idle was {:.1} MiB",
        mib(later.rss_kib),
        mib(idle)
    );
}

/// The same flood, then a minute of quiet: the memory is back near idle. Over a minute long,
/// so run on demand: `cargo nextest run -p auth --run-ignored only memory_returns`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "waits a minute after the flood"]
async fn memory_returns_to_idle_a_minute_after_the_flood() {
    let (served, idle) = flood_the_binary().await;
    tokio::time::sleep(Duration::from_secs(60)).await;
    let later = stack::memory(served.process.pid()).expect("memory");
    println!(
        "auth RSS a minute after the flood: {:.1} MiB (idle {:.1} MiB)",
        mib(later.rss_kib),
        mib(idle)
    );
    assert!(
        later.rss_kib < idle + 32 * 1024,
        "RSS {:.1} MiB, idle was {:.1} MiB",
        mib(later.rss_kib),
        mib(idle)
    );
}

/// What one client floods at full speed, from one address.
#[derive(Debug, Clone, Copy)]
enum Flood {
    SignIn,
    DeleteUser,
    Reset,
}

/// One address floods `route` with `IN_FLIGHT` requests at a time for `secs` while another
/// person signs in from their own addresses four times a second: every one of those sign-ins
/// must be 200, with the 99th percentile under a second. Returns the latencies (sorted) and
/// how many flood requests were answered.
async fn flood_beside_a_person(flood: Flood, secs: u64) -> (Vec<Duration>, usize) {
    const IN_FLIGHT: usize = 32;
    const ATTACKER: &str = "203.0.113.66";
    let smtp = testkit::smtp::SmtpServer::start().await.expect("smtp");
    let app = spawn_with(&[
        ("TRUSTED_PROXIES".into(), "127.0.0.1".into()),
        ("SMTP_URL".into(), smtp.url()),
        ("MAIL_FROM".into(), "Digiuno <noreply@example.com>".into()),
    ])
    .await;
    app.sign_up("person@example.com", "password-of-the-person")
        .await;
    let (attacker_cookie, _) = app.sign_up("attacker@example.com", "password-123").await;
    let deadline = Instant::now() + Duration::from_secs(secs);
    let flooders = (0..IN_FLIGHT).map(|_| {
        let (http, base, cookie) = (app.http.clone(), app.base.clone(), attacker_cookie.clone());
        tokio::spawn(async move {
            let mut answered = 0usize;
            while Instant::now() < deadline {
                let req = match flood {
                    Flood::SignIn => http
                        .post(format!("{base}/api/auth/sign-in/email"))
                        .json(&json!({ "email": "person@example.com", "password": "guess" })),
                    Flood::DeleteUser => http
                        .post(format!("{base}/api/auth/delete-user"))
                        .header("cookie", &cookie)
                        .header("origin", BASE_URL)
                        .json(&json!({ "password": "guess" })),
                    Flood::Reset => http
                        .post(format!("{base}/api/auth/request-password-reset"))
                        .json(&json!({ "email": "person@example.com" })),
                };
                if req.header("x-forwarded-for", ATTACKER).send().await.is_ok() {
                    answered += 1;
                }
            }
            answered
        })
    });
    let flooders: Vec<_> = flooders.collect();
    let mut latencies = Vec::new();
    let mut i = 0u32;
    while Instant::now() < deadline {
        let started = Instant::now();
        let r = send(
            app.http
                .post(format!("{}/api/auth/sign-in/email", app.base))
                .header(
                    "x-forwarded-for",
                    format!("198.51.{}.{}", i / 200, i % 200 + 1),
                )
                .json(
                    &json!({ "email": "person@example.com", "password": "password-of-the-person" }),
                ),
        )
        .await;
        latencies.push(started.elapsed());
        assert_eq!(
            r.status, 200,
            "{flood:?}: the person's sign-in {i}: {}",
            r.text
        );
        i += 1;
        tokio::time::sleep(Duration::from_millis(250).saturating_sub(started.elapsed())).await;
    }
    let mut answered = 0;
    for f in flooders {
        answered += f.await.expect("flooder");
    }
    latencies.sort();
    (latencies, answered)
}

fn p99(sorted: &[Duration]) -> Duration {
    sorted[(sorted.len() * 99).div_ceil(100).saturating_sub(1)]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_flooding_sign_in_delete_user_or_reset_leaves_others_signing_in() {
    for flood in [Flood::SignIn, Flood::DeleteUser, Flood::Reset] {
        let (latencies, answered) = flood_beside_a_person(flood, 4).await;
        assert!(answered > 100, "{flood:?}: the flood ran ({answered})");
        assert!(
            p99(&latencies) < Duration::from_secs(1),
            "{flood:?}: {latencies:?}"
        );
    }
}

/// The same for a minute each, as `bench/README.md` reports it
/// (`cargo nextest run -p auth --run-ignored only -E 'test(a_minute)' --no-capture`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "three minutes; run on purpose"]
async fn a_minute_of_each_flood_leaves_others_signing_in() {
    for flood in [Flood::SignIn, Flood::DeleteUser, Flood::Reset] {
        let (latencies, answered) = flood_beside_a_person(flood, 60).await;
        let median = latencies[latencies.len() / 2];
        println!(
            "{flood:?}: {answered} flood requests answered in 60 s ({}/s); the person's {} sign-ins all 200, median {median:?}, p99 {:?}, max {:?}",
            answered / 60,
            latencies.len(),
            p99(&latencies),
            latencies.last().copied().unwrap_or_default()
        );
        assert!(p99(&latencies) < Duration::from_secs(1), "{flood:?}");
    }
}
