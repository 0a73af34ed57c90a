//! Start-up, probes and the subcommands operators use.

use testkit::checks;
use testkit::postgres::TestPostgres;

use crate::helpers::spawn_app;

testkit::operations_tests!("auth", spawn_app, TestPostgres::empty);

#[test]
fn bad_settings_stop_the_process_naming_the_variable() {
    checks::session_settings_rejected(bin());
    let base = checks::SESSION_SERVICE_ENV;
    checks::config_rejected(
        bin(),
        &base,
        &[("GOOGLE_CLIENT_ID", "only-the-id")],
        "GOOGLE_CLIENT_SECRET",
    );
    checks::config_rejected(bin(), &base, &[("LOG_FORMAT", "yaml")], "LOG_FORMAT");
}
