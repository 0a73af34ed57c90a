//! Operating the services: settings refused at start-up, `/metrics`, and clients that stall.
//! Every check runs against the real binaries.

mod common;

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use testkit::checks::config_rejected;
use testkit::http::client;
use testkit::stack::bin;

const PG: &str = "postgres://app:app@127.0.0.1:5432/nutrition";
const MY: &str = "mysql://app:app@127.0.0.1:3306/licensing";
const SECRET: &str = "ops-secret-0123456789abcdef-0123456789";
const OTHER: &str = "ops-other-0123456789abcdef-0123456789";
const THIRD: &str = "ops-third-0123456789abcdef-0123456789";

fn auth_env<'a>(secret: &'a str, google: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("DATABASE_URL", PG),
        ("AUTH_SECRET", secret),
        ("AUTH_BASE_URL", "http://127.0.0.1:8080"),
        ("GOOGLE_CLIENT_ID", "client-id"),
        ("GOOGLE_CLIENT_SECRET", google),
    ]
}

fn licence_env<'a>(keys: &'a str, download: &'a str, webhook: &'a str) -> Vec<(&'a str, &'a str)> {
    let mut env = vec![
        ("DATABASE_URL", MY),
        ("PUBLIC_BASE_URL", "http://127.0.0.1:8080"),
        ("LICENCE_JWT_KEYS", keys),
        ("DOWNLOAD_SIGNING_SECRET", download),
        ("BUILDS_DIR", "/tmp"),
        ("PAYMENT_WEBHOOK_SECRET", webhook),
        (
            "LICENCE_SIGNING_KEYS",
            "ops:lq1Y0hzkQmQ8w2o3nQXGJ4n9yQjY1b3cZ5t1dW8eQeE=",
        ),
    ];
    env.extend(common::LICENCE_PLANS_AND_MAIL);
    env
}

#[test]
fn placeholder_secrets_are_refused_at_start_up() {
    let placeholder = "change-me-auth-secret-replace-with-openssl-rand-hex-32";
    config_rejected(
        &bin("auth"),
        &auth_env(placeholder, OTHER),
        &[],
        "AUTH_SECRET",
    );
    config_rejected(
        &bin("nutrition-api"),
        &[
            ("DATABASE_URL", PG),
            ("AUTH_SECRET", placeholder),
            ("AUTH_BASE_URL", "http://127.0.0.1:8080"),
        ],
        &[],
        "AUTH_SECRET",
    );
    config_rejected(
        &bin("push-scheduler"),
        &[(
            "DATABASE_URL",
            "postgres://app:change-me-postgres-password@127.0.0.1:5432/nutrition",
        )],
        &[],
        "DATABASE_URL",
    );
    let keys = "k1:change-me-licence-jwt-secret-replace-with-openssl-rand";
    config_rejected(
        &bin("licence-server"),
        &licence_env(keys, OTHER, THIRD),
        &[],
        "LICENCE_JWT_KEYS",
    );
}

#[test]
fn one_value_in_two_secret_variables_is_refused_at_start_up() {
    config_rejected(
        &bin("auth"),
        &auth_env(SECRET, SECRET),
        &[],
        "GOOGLE_CLIENT_SECRET",
    );
    let keys = format!("k1:{SECRET}");
    config_rejected(
        &bin("licence-server"),
        &licence_env(&keys, SECRET, THIRD),
        &[],
        "DOWNLOAD_SIGNING_SECRET",
    );
    config_rejected(
        &bin("licence-server"),
        &licence_env(&keys, OTHER, OTHER),
        &[],
        "PAYMENT_WEBHOOK_SECRET",
    );
    let reused = format!("postgres://app:{SECRET}@127.0.0.1:5432/nutrition");
    config_rejected(
        &bin("nutrition-api"),
        &[
            ("DATABASE_URL", reused.as_str()),
            ("AUTH_SECRET", SECRET),
            ("AUTH_BASE_URL", "http://127.0.0.1:8080"),
        ],
        &[],
        "AUTH_SECRET",
    );
}

/// The Python interpreter of `.run/venv`, which holds the reference parser of the Prometheus
/// text format (`prometheus_client`); `scripts/test` installs it.
fn venv_python() -> PathBuf {
    let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.run/venv/bin/python");
    assert!(
        python.is_file(),
        "{} is missing: run scripts/test once, which installs prometheus_client there",
        python.display()
    );
    python
}

/// Parses an exposition with `prometheus_client.parser` (an error fails the test) into
/// `name{label="value",…}` (labels sorted) -> value.
fn parse_exposition(text: &str) -> HashMap<String, f64> {
    const SCRIPT: &str = r#"
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = {}
for family in text_string_to_metric_families(sys.stdin.read()):
    for s in family.samples:
        labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
        out[f"{s.name}{{{labels}}}"] = s.value
print(json.dumps(out))
"#;
    let mut child = Command::new(venv_python())
        .args(["-c", SCRIPT])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the parser");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write the exposition");
    let out = child.wait_with_output().expect("parser ran");
    assert!(
        out.status.success(),
        "the exposition does not parse: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("parser output")
}

async fn scrape(port: u16) -> (String, HashMap<String, f64>) {
    let resp = client()
        .get(format!("http://127.0.0.1:{port}/metrics"))
        .send()
        .await
        .expect("scrape");
    assert_eq!(resp.status(), 200);
    let ctype = testkit::http::header(&resp, "content-type").unwrap_or_default();
    assert!(ctype.starts_with("text/plain; version=0.0.4"), "{ctype}");
    let text = resp.text().await.expect("body");
    let parsed = parse_exposition(&text);
    (text, parsed)
}

fn value(metrics: &HashMap<String, f64>, key: &str) -> f64 {
    metrics.get(key).copied().unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_service_exports_metrics_that_move_under_load() {
    let stack = common::start_stack().await;
    let http = client();
    let names = ["auth", "nutrition-api", "push-scheduler", "licence-server"];
    let health = r#"http_requests_total{method="GET",route="/health",status="200"}"#;
    let unmatched = r#"http_requests_total{method="GET",route="unmatched",status="404"}"#;
    for (name, port) in names.iter().zip(stack.ports) {
        let (_, before) = scrape(port).await;
        for i in 0..25 {
            let resp = http
                .get(format!("http://127.0.0.1:{port}/health"))
                .send()
                .await
                .expect("health");
            assert_eq!(resp.status(), 200);
            // Raw paths never become labels: each of these is a new path.
            let resp = http
                .get(format!("http://127.0.0.1:{port}/no-such-{i}-zqx"))
                .send()
                .await
                .expect("unknown route");
            assert_eq!(resp.status(), 404);
        }
        let (text, after) = scrape(port).await;
        assert!(
            value(&after, health) - value(&before, health) >= 25.0,
            "{name}: {health} moved from {} to {}",
            value(&before, health),
            value(&after, health)
        );
        assert!(
            value(&after, unmatched) - value(&before, unmatched) >= 25.0,
            "{name}"
        );
        assert!(!text.contains("zqx"), "{name} labels a raw path");
        let buckets = after
            .keys()
            .filter(|k| {
                k.starts_with("http_request_duration_seconds_bucket{")
                    && k.contains(r#"route="/health""#)
            })
            .count();
        assert!(buckets > 5, "{name}: latency histogram of /health");
        assert!(
            value(
                &after,
                r#"http_request_duration_seconds_count{method="GET",route="/health"}"#
            ) >= 25.0,
            "{name}"
        );
        for key in [
            r#"db_pool_connections{state="in_use"}"#,
            r#"db_pool_connections{state="idle"}"#,
            "db_pool_max_connections{}",
            "db_pool_waiting{}",
        ] {
            assert!(after.contains_key(key), "{name} lacks {key}");
        }
        assert!(value(&after, "db_pool_max_connections{}") >= 1.0, "{name}");
    }

    let [auth, _, scheduler, licence] = stack.ports;
    let (_, m) = scrape(scheduler).await;
    assert_eq!(m.get(r#"outbox_pending{outbox="push"}"#), Some(&0.0));
    assert_eq!(m.get(r#"outbox_probe_up{outbox="push"}"#), Some(&1.0));
    assert!(m.contains_key(r#"outbox_oldest_age_seconds{outbox="push"}"#));
    for outcome in ["delivered", "gone", "retry", "expired", "failed"] {
        let key = format!(r#"push_deliveries_total{{outcome="{outcome}"}}"#);
        assert!(m.contains_key(&key), "{key}");
    }
    assert!(m.contains_key("push_batches_total{}"), "push_batches_total");

    let (_, before) = scrape(licence).await;
    assert_eq!(before.get(r#"outbox_pending{outbox="email"}"#), Some(&0.0));
    assert_eq!(before.get(r#"outbox_probe_up{outbox="email"}"#), Some(&1.0));
    let refused =
        r#"licence_quota_consumptions_total{outcome="refused",route="/api/usage/consume"}"#;
    let resp = http
        .post(format!("http://127.0.0.1:{licence}/api/usage/consume"))
        .json(&serde_json::json!({ "licenseKey": "NOPE" }))
        .send()
        .await
        .expect("consume");
    assert!(resp.status().is_client_error(), "{}", resp.status());
    let (_, after) = scrape(licence).await;
    assert_eq!(value(&after, refused), value(&before, refused) + 1.0);

    let (_, before) = scrape(auth).await;
    assert_eq!(before.get(r#"outbox_pending{outbox="mail"}"#), Some(&0.0));
    assert_eq!(before.get(r#"outbox_probe_up{outbox="mail"}"#), Some(&1.0));
    let failed = r#"auth_sign_ins_total{outcome="refused",route="/api/auth/sign-in/email"}"#;
    let resp = http
        .post(format!("{}/api/auth/sign-in/email", stack.base()))
        .header("Origin", stack.base())
        .json(&serde_json::json!({ "email": "nobody@example.com", "password": "wrong-password-1" }))
        .send()
        .await
        .expect("sign-in");
    assert!(resp.status().is_client_error(), "{}", resp.status());
    let (_, after) = scrape(auth).await;
    assert_eq!(value(&after, failed), value(&before, failed) + 1.0);

    // nginx keeps the operational endpoints away from the public.
    for path in ["/metrics", "/openapi.json", "/docs", "/health", "/ready"] {
        let resp = http
            .get(format!("{}{path}", stack.base()))
            .send()
            .await
            .expect("through nginx");
        assert_eq!(resp.status(), 404, "{path} is public");
    }
}

/// licence-server alone on a fresh database, with `extra` settings, started through `sh` so that
/// the soft limit of open files can be lowered first.
async fn licence_server_alone(
    extra: &[(&str, &str)],
    soft_nofile: u32,
) -> (
    testkit::stack::Process,
    u16,
    testkit::mariadb::TestMariaDb,
    testkit::stack::ScratchDir,
) {
    let my = testkit::mariadb::TestMariaDb::empty();
    let dir = testkit::stack::ScratchDir::new("ops");
    let port = testkit::stack::free_port();
    let listen = format!("127.0.0.1:{port}");
    let builds = dir.path().to_string_lossy().into_owned();
    let keys = format!("k1:{SECRET}");
    let mut env = licence_env(&keys, OTHER, THIRD);
    env.retain(|(k, _)| !matches!(*k, "DATABASE_URL" | "BUILDS_DIR"));
    env.extend([
        ("DATABASE_URL", my.url()),
        ("BUILDS_DIR", builds.as_str()),
        ("LISTEN_ADDR", listen.as_str()),
    ]);
    env.extend_from_slice(extra);
    let binary = bin("licence-server");
    let script = format!("ulimit -S -n {soft_nofile} && exec \"$0\" serve");
    let process = testkit::stack::Process::start(
        "licence-server",
        std::path::Path::new("/bin/sh"),
        &["-c", &script, &binary.to_string_lossy()],
        &env,
        dir.path(),
    );
    let status = testkit::http::wait_for_status(
        &format!("http://127.0.0.1:{port}/ready"),
        200,
        std::time::Duration::from_secs(60),
    )
    .await;
    assert_eq!(status, Some(200), "{}", process.log());
    (process, port, my, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_body_is_cut_off_with_408_and_the_service_goes_on() {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::time::{Duration, Instant};

    let (process, port, _my, _dir) =
        licence_server_alone(&[("REQUEST_BODY_TIMEOUT_SECS", "1")], 256).await;

    // The soft limit of open files was raised to the hard one at start-up.
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", process.id())).expect("limits");
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .expect("open files line");
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        fields[3], fields[4],
        "soft limit raised to the hard one: {line}"
    );
    assert_ne!(fields[3], "256", "{line}");

    let stalled = |sent: &[u8]| {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let head = "POST /api/license/activate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n";
        stream.write_all(head.as_bytes()).expect("head");
        stream.write_all(sent).expect("part of the body");
        let started = Instant::now();
        let mut answer = Vec::new();
        // The server closes the connection after its answer.
        let _ = stream.read_to_end(&mut answer);
        (
            started.elapsed(),
            String::from_utf8_lossy(&answer).into_owned(),
        )
    };
    for sent in [&b""[..], &br#"{"licenseKey":"#[..]] {
        let (waited, answer) = stalled(sent);
        assert!(
            answer.starts_with("HTTP/1.1 408"),
            "a stalled body must be answered 408: {answer}"
        );
        assert!(answer.contains(r#""code":"REQUEST_TIMEOUT""#), "{answer}");
        assert!(
            answer.to_ascii_lowercase().contains("connection: close"),
            "{answer}"
        );
        assert!(
            waited >= Duration::from_millis(900) && waited < Duration::from_secs(5),
            "cut off after the 1 s idle timeout, not {waited:?}"
        );
    }

    // A body that keeps arriving, slower than the timeout in total but never idle that long,
    // is read to the end.
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let body = br#"{"licenseKey":"NOPE-NOPE-NOPE"}"#;
    let head = format!(
        "POST /api/license/activate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).expect("head");
    for chunk in body.chunks(8) {
        std::thread::sleep(Duration::from_millis(400));
        stream.write_all(chunk).expect("chunk");
    }
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(!answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.starts_with("HTTP/1.1 4"), "{answer}");

    let (status, _) = testkit::http::get_json(&format!("http://127.0.0.1:{port}/ready")).await;
    assert_eq!(status, 200);
}

#[test]
fn limits_are_checked_at_start_up() {
    let keys = format!("k1:{SECRET}");
    let mut env = licence_env(&keys, OTHER, THIRD);
    env.push(("REQUEST_BODY_TIMEOUT_SECS", "0"));
    config_rejected(
        &bin("licence-server"),
        &env,
        &[],
        "REQUEST_BODY_TIMEOUT_SECS",
    );
    let mut env = licence_env(&keys, OTHER, THIRD);
    env.push(("MAX_CONNECTIONS", "many"));
    config_rejected(&bin("licence-server"), &env, &[], "MAX_CONNECTIONS");
}

/// A refused validation (a bad token) sent as part of the caller's trace `traceparent`.
async fn validate_with_trace(
    http: &reqwest::Client,
    port: u16,
    traceparent: &str,
) -> reqwest::Response {
    http.post(format!("http://127.0.0.1:{port}/api/license/validate"))
        .header("traceparent", traceparent)
        .bearer_auth("not-a-licence-token")
        .json(&serde_json::json!({}))
        .send()
        .await
        .expect("validate")
}

/// With `OTEL_EXPORTER_OTLP_ENDPOINT` set, a request's span reaches an OTLP collector as a child
/// of the caller's `traceparent`, and the lines the service logs while serving it carry the same
/// trace id; without it nothing is exported and the lines still carry a trace id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traces_are_exported_over_otlp_only_when_configured() {
    let collector = testkit::otlp::Collector::start().await;
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let parent = "00f067aa0ba902b7";
    let traceparent = format!("00-{trace_id}-{parent}-01");
    let http = reqwest::Client::new();

    let (mut exporting, port, _db, _dir) = licence_server_alone(
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint()),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
            ("RUST_LOG", "debug"),
        ],
        4096,
    )
    .await;
    let resp = validate_with_trace(&http, port, &traceparent).await;
    assert!(resp.status().is_client_error(), "{}", resp.status());
    let span = collector
        .wait_for(std::time::Duration::from_secs(20), |s| {
            s.trace_id == trace_id && s.kind == 2
        })
        .await
        .unwrap_or_else(|| {
            panic!(
                "no span of the trace: {:?}\n{}",
                collector.spans(),
                exporting.log()
            )
        });
    assert_eq!(span.service, "licence-server");
    assert_eq!(span.name, "POST /api/license/validate");
    assert_eq!(span.parent_span_id, parent, "a child of the caller's span");
    assert_eq!(span.kind, 2, "SPAN_KIND_SERVER");
    assert_eq!(span.attributes["http.route"], "/api/license/validate");
    assert_eq!(
        span.attributes["http.status_code"],
        resp.status().as_u16().to_string()
    );
    assert_eq!(collector.malformed(), 0);
    // A request without a caller's trace gets a trace of its own, exported too.
    let before = collector.spans().len();
    let latest = http
        .get(format!("http://127.0.0.1:{port}/api/latest"))
        .send()
        .await
        .expect("latest");
    let own = collector
        .wait_for(std::time::Duration::from_secs(20), |s| {
            s.trace_id != trace_id
                && s.kind == 2
                && s.attributes
                    .get("http.route")
                    .is_some_and(|r| r == "/api/latest")
        })
        .await
        .unwrap_or_else(|| {
            panic!(
                "no span of its own ({}): {:?}",
                latest.status(),
                collector.spans()
            )
        });
    assert!(collector.spans().len() > before);
    assert_eq!(own.parent_span_id, "", "a root span");
    assert_eq!(own.trace_id.len(), 32);
    let log = exporting.log();
    assert!(
        log.lines().any(|l| l.contains(trace_id)),
        "the request's log lines carry its trace id:\n{log}"
    );
    assert!(
        exporting
            .terminate(std::time::Duration::from_secs(15))
            .is_some()
    );

    // Off by default: the same request exports nothing, and the log still names the trace.
    let silent = testkit::otlp::Collector::start().await;
    let (quiet, port, _db2, _dir2) = licence_server_alone(&[("RUST_LOG", "debug")], 4096).await;
    let resp = validate_with_trace(&http, port, &traceparent).await;
    assert!(resp.status().is_client_error());
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(silent.spans().is_empty());
    let log = quiet.log();
    assert!(
        log.lines().any(|l| l.contains(trace_id)),
        "the trace id is logged without export too:\n{log}"
    );
}
