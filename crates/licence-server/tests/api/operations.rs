//! Start-up, probes and the subcommands operators use.

use std::path::Path;

use testkit::checks;
use testkit::mariadb::TestMariaDb;

use crate::helpers::{base_env, spawn_app};

fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_licence-server"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_and_api_health_follow_the_database() {
    let app = spawn_app().await;
    checks::ready_follows_database(&app.base, &app.proxy, &["/api/health"]).await;
    assert!(!app.db.name().is_empty());
}

#[tokio::test]
async fn unknown_routes_are_json_404() {
    let app = spawn_app().await;
    checks::unknown_route_is_json_404(&app.base).await;
}

#[test]
fn bad_settings_stop_the_process_naming_the_variable() {
    let builds = std::env::temp_dir().to_string_lossy().into_owned();
    let base = base_env("mysql://app:app@127.0.0.1:3306/licensing", &builds);
    let case = |name: &str, value: Option<&str>| {
        let mut env: Vec<(&str, &str)> = base
            .iter()
            .filter(|(k, _)| k != name && k != "LISTEN_ADDR")
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        if let Some(v) = value {
            env.push((name, v));
        }
        checks::config_rejected(bin(), &env, name);
    };
    case("DATABASE_URL", Some("postgres://app@127.0.0.1/x"));
    case("PUBLIC_BASE_URL", None);
    case("LICENCE_JWT_KEYS", Some("k1:too-short"));
    case("DOWNLOAD_SIGNING_SECRET", Some("short"));
    case("BUILDS_DIR", Some("/no/such/dir"));
    case("PAYMENT_WEBHOOK_SECRET", None);
    case("PAYMENT_VARIANT_ANNUAL", Some("1001"));
    case("SMTP_URL", Some("mail.example.com"));
    case("MAIL_FROM", Some("nobody"));
}

#[test]
fn two_migrations_at_once_on_an_empty_database() {
    let db = TestMariaDb::empty();
    checks::concurrent_migrations(bin(), db.url());
}
