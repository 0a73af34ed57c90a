//! Start-up, probes and the subcommands operators use.

use testkit::checks;
use testkit::postgres::TestPostgres;

use crate::helpers::{SECRET, spawn_app};

testkit::operations_tests!("nutrition-api", spawn_app, TestPostgres::empty);

#[test]
fn bad_settings_stop_the_process_naming_the_variable() {
    checks::session_settings_rejected(bin());
    let base = checks::SESSION_SERVICE_ENV;
    let vapid = [("VAPID_SUBJECT", "mailto:ops@example.com")];
    checks::config_rejected(bin(), &base, &vapid, "VAPID_PUBLIC_KEY");
    let http = [("PUSH_ALLOW_HTTP_ENDPOINTS", "perhaps")];
    checks::config_rejected(bin(), &base, &http, "PUSH_ALLOW_HTTP_ENDPOINTS");
    checks::config_rejected(bin(), &base, &[("LOG_FORMAT", "yaml")], "LOG_FORMAT");
}

/// SIGTERM while a test push is under way: the push stops starting new sends, the client still
/// gets its answer, and the process exits 0 inside the drain time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_a_test_push_answers_and_exits() {
    use testkit::push_service::{Answer, FakePushService};

    let app = crate::helpers::spawn_app().await;
    let u = app.user("term@example.com");
    let push = FakePushService::start().await;
    let pair = push::VapidKeyPair::generate();
    for _ in 0..20 {
        let sub = push.subscribe();
        push.respond(&sub, Answer::Slow(std::time::Duration::from_secs(2)));
        app.sql(&format!(
            "INSERT INTO nutrition.device_token (id, user_id, platform, endpoint, p256dh, auth)
             VALUES ('{}', '{}', 'web', '{}', '{}', '{}')",
            session::ids::id(),
            u.id,
            sub.endpoint,
            sub.p256dh,
            sub.auth
        ));
    }
    let port = testkit::stack::free_port();
    let addr = format!("127.0.0.1:{port}");
    let private = pair.private_key.expose().to_owned();
    let env = [
        ("DATABASE_URL", app.db.url()),
        ("AUTH_SECRET", SECRET),
        ("AUTH_BASE_URL", crate::helpers::BASE_URL),
        ("LISTEN_ADDR", addr.as_str()),
        ("VAPID_PUBLIC_KEY", pair.public_key.as_str()),
        ("VAPID_PRIVATE_KEY", private.as_str()),
        ("VAPID_SUBJECT", "mailto:ops@example.com"),
        ("PUSH_ALLOW_HTTP_ENDPOINTS", "true"),
    ];
    let dir = testkit::stack::ScratchDir::new("nutrition-term");
    let mut process =
        testkit::stack::Process::start("nutrition-api", bin(), &["serve"], &env, dir.path());
    let base = format!("http://{addr}");
    assert_eq!(
        testkit::http::wait_for_status(
            &format!("{base}/ready"),
            200,
            std::time::Duration::from_secs(20)
        )
        .await,
        Some(200),
        "{}",
        process.log()
    );
    let request = app.call_on(
        &base,
        reqwest::Method::POST,
        "/me/notifications/test",
        Some(&u),
        None,
    );
    let terminate = async {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while push.in_flight() == 0 {
            assert!(std::time::Instant::now() < deadline, "no send started");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let stopping = std::time::Instant::now();
        let (status, log) = tokio::task::spawn_blocking(move || {
            let status = process.terminate(std::time::Duration::from_secs(15));
            (status, process.log())
        })
        .await
        .expect("terminate");
        (status, log, stopping.elapsed())
    };
    let (r, (status, log, stopped_in)) = tokio::join!(request, terminate);
    assert_eq!(r.status, 200, "{}", r.text);
    let (sent, failed) = (
        r.body["sent"].as_u64().unwrap_or(0),
        r.body["failed"].as_u64().unwrap_or(0),
    );
    assert_eq!(sent + failed, 20, "every device accounted for: {}", r.text);
    assert!(sent >= 1, "what was in flight finished: {}", r.text);
    assert!(
        status.is_some_and(|s| s.success()),
        "exit 0 after SIGTERM: {status:?}\n{log}"
    );
    assert!(sent < 20, "no send starts after SIGTERM: {}", r.text);
    // The sends in flight take 2 s; waiting out the whole push (5 rounds of 2 s, cut at its 8 s
    // deadline) would take far longer.
    assert!(
        stopped_in < std::time::Duration::from_secs(5),
        "stopped once the sends in flight were done: {stopped_in:?}"
    );
}

/// The document served at `/openapi.json` lists exactly the routes and methods the service
/// mounts, and `/docs` is the page that renders it.
#[tokio::test]
async fn the_openapi_document_matches_the_mounted_routes() {
    let app = spawn_app().await;
    let document = nutrition_api::openapi::document();
    let mounted =
        testkit::openapi::assert_documents_its_routes(&app.http, &app.base, document, |cfg| {
            cfg.configure(nutrition_api::routes::config);
        })
        .await;
    assert!(mounted.contains(&"/me/fast-events/{id}/end".to_owned()));
}
