//! Operating the services: settings refused at start-up, `/metrics`, and clients that stall.
//! Every check runs against the real binaries.

use testkit::checks::config_rejected;
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
    vec![
        ("DATABASE_URL", MY),
        ("PUBLIC_BASE_URL", "http://127.0.0.1:8080"),
        ("LICENCE_JWT_KEYS", keys),
        ("DOWNLOAD_SIGNING_SECRET", download),
        ("BUILDS_DIR", "/tmp"),
        ("PAYMENT_WEBHOOK_SECRET", webhook),
        ("PAYMENT_VARIANT_BASIC", "1"),
        ("PAYMENT_VARIANT_PRO", "2"),
        ("PAYMENT_VARIANT_PREMIUM", "3"),
        ("PAYMENT_VARIANT_ANNUAL", "4"),
        ("SMTP_URL", "smtp://127.0.0.1:2525"),
        ("MAIL_FROM", "Licences <licences@example.com>"),
    ]
}

#[test]
fn placeholder_secrets_are_refused_at_start_up() {
    let placeholder = "change-me-auth-secret-replace-with-openssl-rand-hex-32";
    config_rejected(&bin("auth"), &auth_env(placeholder, OTHER), "AUTH_SECRET");
    config_rejected(
        &bin("nutrition-api"),
        &[
            ("DATABASE_URL", PG),
            ("AUTH_SECRET", placeholder),
            ("AUTH_BASE_URL", "http://127.0.0.1:8080"),
        ],
        "AUTH_SECRET",
    );
    config_rejected(
        &bin("push-scheduler"),
        &[(
            "DATABASE_URL",
            "postgres://app:change-me-postgres-password@127.0.0.1:5432/nutrition",
        )],
        "DATABASE_URL",
    );
    let keys = "k1:change-me-licence-jwt-secret-replace-with-openssl-rand";
    config_rejected(
        &bin("licence-server"),
        &licence_env(keys, OTHER, THIRD),
        "LICENCE_JWT_KEYS",
    );
}

#[test]
fn one_value_in_two_secret_variables_is_refused_at_start_up() {
    config_rejected(
        &bin("auth"),
        &auth_env(SECRET, SECRET),
        "GOOGLE_CLIENT_SECRET",
    );
    let keys = format!("k1:{SECRET}");
    config_rejected(
        &bin("licence-server"),
        &licence_env(&keys, SECRET, THIRD),
        "DOWNLOAD_SIGNING_SECRET",
    );
    config_rejected(
        &bin("licence-server"),
        &licence_env(&keys, OTHER, OTHER),
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
        "AUTH_SECRET",
    );
}
