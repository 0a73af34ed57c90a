//! Start-up, probes and the subcommands operators use.

use testkit::checks;
use testkit::postgres::TestPostgres;

use push::{VapidConfig, VapidKeyPair};
use service_kit::Env;

use crate::helpers::spawn_app;

testkit::operations_tests!("push-scheduler", spawn_app, TestPostgres::empty);

#[test]
fn bad_settings_stop_the_process_naming_the_variable() {
    let base = [(
        "DATABASE_URL",
        "postgres://app:app@127.0.0.1:5432/nutrition",
    )];
    checks::config_rejected(bin(), &base, &[("DATABASE_URL", "")], "DATABASE_URL");
    checks::config_rejected(bin(), &base, &[("LISTEN_ADDR", "8084")], "LISTEN_ADDR");
    let pair = VapidKeyPair::generate();
    let half = [("VAPID_PUBLIC_KEY", pair.public_key.as_str())];
    checks::config_rejected(bin(), &base, &half, "VAPID_PRIVATE_KEY");
    let bad_public = [
        ("VAPID_PUBLIC_KEY", "bm90LWEta2V5"),
        ("VAPID_PRIVATE_KEY", pair.private_key.expose()),
        ("VAPID_SUBJECT", "mailto:ops@example.com"),
    ];
    checks::config_rejected(bin(), &base, &bad_public, "VAPID_PUBLIC_KEY");
}

#[test]
fn vapid_keys_prints_a_pair_the_services_accept() {
    let out = testkit::process::run(bin(), &["vapid-keys"], &[]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let mut pairs: Vec<(String, String)> = text
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    assert_eq!(pairs.len(), 2, "{text}");
    pairs.push((
        "VAPID_SUBJECT".to_owned(),
        "mailto:ops@example.com".to_owned(),
    ));
    let cfg = VapidConfig::from_env(&Env::from_pairs(pairs)).expect("accepted");
    assert!(cfg.is_some());
    let again = testkit::process::run(bin(), &["vapid-keys"], &[]);
    assert_ne!(again.stdout, text.as_bytes(), "every call makes a new pair");
}

/// The document served at `/openapi.json` lists exactly the routes and methods the HTTP side
/// mounts (its probes and the docs), and `/docs` is the page that renders it.
#[tokio::test]
async fn the_openapi_document_matches_the_mounted_routes() {
    let app = spawn_app().await;
    let document = push_scheduler::openapi::document();
    let http = testkit::http::client();
    testkit::openapi::assert_documents_its_routes(&http, &app.base, document, |_| {}).await;
}
