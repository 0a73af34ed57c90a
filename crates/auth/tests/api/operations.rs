//! Start-up, probes and the subcommands operators use.

use testkit::checks;
use testkit::postgres::TestPostgres;

use crate::helpers::{SECRET, spawn_app};

testkit::operations_tests!("auth", spawn_app, TestPostgres::empty);

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
