//! Start-up, probes and the subcommands operators use.

use std::path::Path;

use testkit::checks;
use testkit::postgres::TestPostgres;

use crate::helpers::{SECRET, spawn_app};

fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_auth"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_follows_the_database() {
    let app = spawn_app().await;
    checks::ready_follows_database(&app.base, &app.proxy, &[]).await;
    assert!(!app.db.name().is_empty());
}

#[tokio::test]
async fn unknown_routes_are_json_404() {
    let app = spawn_app().await;
    checks::unknown_route_is_json_404(&app.base).await;
}

#[test]
fn bad_settings_stop_the_process_naming_the_variable() {
    let db = "postgres://app:app@127.0.0.1:5432/nutrition";
    let base = [
        ("DATABASE_URL", db),
        ("AUTH_SECRET", SECRET),
        ("AUTH_BASE_URL", "http://localhost:8080"),
    ];
    for var in ["AUTH_SECRET", "DATABASE_URL"] {
        checks::config_rejected(bin(), &base, &[(var, "")], var);
    }
    checks::config_rejected(bin(), &base, &[("AUTH_SECRET", "short")], "AUTH_SECRET");
    checks::config_rejected(
        bin(),
        &base,
        &[("GOOGLE_CLIENT_ID", "only-the-id")],
        "GOOGLE_CLIENT_SECRET",
    );
    checks::config_rejected(bin(), &base, &[("LOG_FORMAT", "yaml")], "LOG_FORMAT");
}

#[test]
fn two_migrations_at_once_on_an_empty_database() {
    let db = TestPostgres::empty();
    checks::concurrent_migrations(bin(), db.url());
}
