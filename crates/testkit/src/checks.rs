//! Assertions that every service must pass in the same way, written once.

use std::path::Path;
use std::time::Duration;

use crate::http::{get_json, wait_for_status};
use crate::process;
use crate::proxy::TcpProxy;

/// `/health` is 200 throughout; `/ready` (and `extra_ready_paths`) follow the database behind
/// `proxy`: 200, then 503 with the contract's error body once it is cut, then 200 again.
pub async fn ready_follows_database(base: &str, proxy: &TcpProxy, extra_ready_paths: &[&str]) {
    let mut paths = vec!["/ready"];
    paths.extend_from_slice(extra_ready_paths);
    for path in &paths {
        let (status, body) = get_json(&format!("{base}{path}")).await;
        assert_eq!(status, 200, "{path} with the database up: {body}");
    }
    proxy.cut();
    for path in &paths {
        let status = wait_for_status(&format!("{base}{path}"), 503, Duration::from_secs(15)).await;
        assert_eq!(status, Some(503), "{path} with the database cut");
        let (_, body) = get_json(&format!("{base}{path}")).await;
        assert_eq!(body["code"], "DATABASE_UNAVAILABLE", "{body}");
        assert!(body["message"].is_string(), "{body}");
    }
    let (status, _) = get_json(&format!("{base}/health")).await;
    assert_eq!(status, 200, "liveness does not depend on the database");
    proxy.restore();
    for path in &paths {
        let status = wait_for_status(&format!("{base}{path}"), 200, Duration::from_secs(15)).await;
        assert_eq!(status, Some(200), "{path} after the database came back");
    }
}

/// An unknown route answers 404 with `{code: NOT_FOUND, message}`.
pub async fn unknown_route_is_json_404(base: &str) {
    let (status, body) = get_json(&format!("{base}/no/such/route")).await;
    assert_eq!(status, 404);
    assert_eq!(body["code"], "NOT_FOUND", "{body}");
    assert!(body["message"].is_string(), "{body}");
}

/// Starting `bin` with the variables of `base`, each of `overrides` set to its value there
/// instead (empty: unset), fails before serving: non-zero exit and exactly one line on stderr
/// that names `var`.
pub fn config_rejected(bin: &Path, base: &[(&str, &str)], overrides: &[(&str, &str)], var: &str) {
    let env: Vec<(&str, &str)> = base
        .iter()
        .filter(|(k, _)| !overrides.iter().any(|(o, _)| o == k))
        .chain(overrides.iter().filter(|(_, v)| !v.is_empty()))
        .copied()
        .collect();
    let out = process::run(bin, &["serve"], &env);
    assert!(
        !out.status.success(),
        "{} started with a bad {var}",
        bin.display()
    );
    assert_eq!(
        out.status.code(),
        Some(78),
        "configuration errors exit with EX_CONFIG"
    );
    let lines = process::stderr_lines(&out);
    assert_eq!(lines.len(), 1, "one line expected, got {lines:?}");
    assert!(
        lines[0].contains(&format!("{var}:")),
        "the line must name {var}: {lines:?}"
    );
    assert!(out.stdout.is_empty());
}

/// The rules every service's settings share, checked through the service's `failing` (the
/// variable its settings refuse with these variables set): LISTEN_ADDR an address with a port,
/// DATABASE_URL required and of the service's own database (`foreign_database` is another
/// kind's), DATABASE_POOL_SIZE within 1..=256.
pub fn shared_settings_rules(failing: impl Fn(&[(&str, &str)]) -> String, foreign_database: &str) {
    for (var, value) in [
        ("LISTEN_ADDR", "8081"),
        ("LISTEN_ADDR", "nowhere:80"),
        ("DATABASE_URL", ""),
        ("DATABASE_URL", foreign_database),
        ("DATABASE_POOL_SIZE", "0"),
        ("DATABASE_POOL_SIZE", "-1"),
        ("DATABASE_POOL_SIZE", "1000"),
    ] {
        assert_eq!(failing(&[(var, value)]), var, "{var}={value}");
    }
}

/// `bin migrate` run twice at the same instant on an empty database: both succeed, the schema
/// ends up complete, and a third run finds nothing to do.
pub fn concurrent_migrations(bin: &Path, database_url: &str) {
    let env = [("DATABASE_URL", database_url), ("RUST_LOG", "warn")];
    let children: Vec<_> = (0..2)
        .map(|_| {
            process::command(bin, &["migrate"], &env)
                .spawn()
                .expect("start migrate")
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().expect("wait for migrate");
        assert!(
            out.status.success(),
            "concurrent migrate failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let again = process::run(bin, &["migrate"], &env);
    assert!(again.status.success());
    let text = String::from_utf8_lossy(&again.stderr);
    assert!(
        text.contains("up to date"),
        "a third run must find nothing to do: {text}"
    );
}

/// The operations tests every service has, written once, in the service's test crate: `bin()`
/// (the service's binary), `/ready` following the database (and the `ready` paths beyond it),
/// unknown routes answered as JSON 404, and two migrations started at once on an empty database
/// (`$empty` makes one: `TestPostgres::empty`, `TestMariaDb::empty`). `$spawn` starts the
/// service behind a proxy to its database and answers what has `base`, `proxy` and `db`.
#[macro_export]
macro_rules! operations_tests {
    ($bin:literal, $spawn:path, $empty:path $(, $ready:literal)*) => {
        fn bin() -> &'static std::path::Path {
            std::path::Path::new(env!(concat!("CARGO_BIN_EXE_", $bin)))
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn ready_follows_the_database() {
            let app = $spawn().await;
            $crate::checks::ready_follows_database(&app.base, &app.proxy, &[$($ready),*]).await;
            assert!(!app.db.name().is_empty());
        }

        #[tokio::test]
        async fn unknown_routes_are_json_404() {
            let app = $spawn().await;
            $crate::checks::unknown_route_is_json_404(&app.base).await;
        }

        #[test]
        fn two_migrations_at_once_on_an_empty_database() {
            let db = $empty();
            $crate::checks::concurrent_migrations(bin(), db.url());
        }
    };
}

/// The settings tests every service shares, inside its `settings` module's tests: `with(extra)`
/// (its `Settings` from `$base` with `extra` over it; a service whose base borrows from locals
/// writes its own and leaves `$base` out), `failing(extra)` (the variable a refusal names) and
/// the shared rules, `$foreign` being a database URL of the other kind.
#[macro_export]
macro_rules! settings_tests {
    ($base:expr, $foreign:literal) => {
        fn with(extra: &[(&str, &str)]) -> Result<Settings, ::service_kit::ConfigError> {
            Settings::from_env(&::service_kit::Env::overriding(&$base, extra))
        }

        $crate::settings_tests!($foreign);
    };
    ($foreign:literal) => {
        fn failing(extra: &[(&str, &str)]) -> String {
            with(extra).expect_err("must be rejected").var
        }

        #[test]
        fn shared_rules() {
            $crate::checks::shared_settings_rules(failing, $foreign);
        }

        #[test]
        fn listens_on_its_default_address_with_the_default_pool() {
            let s = with(&[]).expect("valid");
            assert_eq!(s.server.listen_addr.to_string(), DEFAULT_LISTEN_ADDR);
            assert_eq!(s.server.pool_size, 10);
        }
    };
}

/// [`settings_tests!`] of a service that shares the session (auth, nutrition-api): its
/// settings from [`SESSION_SERVICE_ENV`], and a MariaDB URL as the foreign one.
#[macro_export]
macro_rules! session_settings_tests {
    () => {
        $crate::settings_tests!(
            $crate::checks::SESSION_SERVICE_ENV,
            "mysql://root@127.0.0.1/x"
        );
    };
}

/// Valid settings of the services that share the session (auth, nutrition-api): a database,
/// the secret and the public address.
pub const SESSION_SERVICE_ENV: [(&str, &str); 3] = [
    (
        "DATABASE_URL",
        "postgres://app:app@127.0.0.1:5432/nutrition",
    ),
    ("AUTH_SECRET", "0123456789abcdef0123456789abcdef"),
    ("AUTH_BASE_URL", "http://localhost:8080"),
];

/// `bin` (auth or nutrition-api) refuses to start without the database or the shared secret, or
/// with a short secret, naming the variable.
pub fn session_settings_rejected(bin: &Path) {
    for var in ["AUTH_SECRET", "DATABASE_URL"] {
        config_rejected(bin, &SESSION_SERVICE_ENV, &[(var, "")], var);
    }
    config_rejected(
        bin,
        &SESSION_SERVICE_ENV,
        &[("AUTH_SECRET", "short")],
        "AUTH_SECRET",
    );
}
