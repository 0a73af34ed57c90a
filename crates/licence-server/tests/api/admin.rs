//! The admin subcommands, run as the real binary against the database of a running service.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use testkit::process;

use crate::helpers::{TestApp, assert_error, spawn_app};

fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_licence-server"))
}

fn admin(app: &TestApp, args: &[&str]) -> (bool, Value, String) {
    let mut all = vec!["admin"];
    all.extend_from_slice(args);
    let out = process::run(
        bin(),
        &all,
        &[("DATABASE_URL", app.db.url()), ("RUST_LOG", "warn")],
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let value = serde_json::from_str(stdout.trim()).unwrap_or(Value::Null);
    (
        out.status.success(),
        value,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs an admin subcommand that must succeed; what it printed.
fn admin_ok(app: &TestApp, args: &[&str]) -> Value {
    let (ok, printed, err) = admin(app, args);
    assert!(ok, "{args:?}: {err}");
    printed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_manage_licences_from_the_command_line() {
    let app = spawn_app().await;
    let created = admin_ok(
        &app,
        &[
            "create",
            "--email",
            "shop@example.com",
            "--name",
            "Shop Buyer",
            "--plan",
            "premium",
        ],
    );
    let key = created["key"].as_str().expect("key").to_owned();
    assert_eq!(created["plan"], "premium");
    assert_eq!(created["status"], "active");
    assert_eq!(created["dailyQuota"], 150);
    assert_eq!(created["emails"].as_array().map(Vec::len), Some(1));

    // The running service sends the queued e-mail.
    let mails = app.smtp.wait_for(1, Duration::from_secs(10)).await;
    assert_eq!(mails.len(), 1);
    assert_eq!(mails[0].rcpt_to, vec!["shop@example.com".to_owned()]);

    assert_eq!(app.activate(&key, "office-pc").await.0, 200);
    assert_eq!(app.activate(&key, "home-pc").await.0, 200);
    let shown = admin_ok(&app, &["show", &key.to_lowercase()]);
    let mut instances: Vec<&str> = shown["activations"]
        .as_array()
        .expect("activations")
        .iter()
        .filter_map(|a| a["instanceId"].as_str())
        .collect();
    // The test clock stands still, so both activations carry the same time.
    instances.sort_unstable();
    assert_eq!(instances, ["home-pc", "office-pc"]);
    assert!(shown["emails"][0]["sentAt"].is_string(), "{shown}");

    let released = admin_ok(&app, &["release", &key, "office-pc"]);
    assert_eq!(released["activations"].as_array().map(Vec::len), Some(1));
    let (s, b) = app.validate(&key, "office-pc").await;
    assert_error(s, &b, 403, "INSTANCE_NOT_ACTIVE");
    assert_eq!(
        app.seats_seen_by_validate(&key, "home-pc").await,
        1,
        "the released seat is free"
    );
    let (ok, _, err) = admin(&app, &["release", &key, "office-pc"]);
    assert!(!ok && err.contains("office-pc"), "{err}");

    let disabled = admin_ok(&app, &["disable", &key]);
    assert!(disabled["disabledAt"].is_string());
    assert_eq!(disabled["hasAccess"], false);
    let (s, b) = app.activate(&key, "home-pc").await;
    assert_error(s, &b, 403, "LICENSE_INACTIVE");
    assert_eq!(b["valid"], false);

    let enabled = admin_ok(&app, &["enable", &key]);
    assert_eq!(enabled["disabledAt"], Value::Null);
    assert_eq!(app.activate(&key, "home-pc").await.0, 200);

    admin_ok(&app, &["resend-email", &key]);
    let mails = app.smtp.wait_for(2, Duration::from_secs(10)).await;
    assert_eq!(mails.len(), 2, "the e-mail went out again");

    let (ok, _, err) = admin(&app, &["show", "ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ"]);
    assert!(!ok);
    assert!(err.contains("no licence"), "{err}");
    let (ok, _, err) = admin(
        &app,
        &["create", "--email", "x@example.com", "--plan", "gold"],
    );
    assert!(!ok && err.contains("gold"), "{err}");
    let (ok, _, err) = admin(
        &app,
        &["create", "--email", "not-an-address", "--plan", "basic"],
    );
    assert!(!ok && err.contains("not-an-address"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refunded_licence_can_be_enabled_again_and_annual_lasts_a_year() {
    let app = spawn_app().await;
    let created = admin_ok(
        &app,
        &[
            "create",
            "--email",
            "a@example.com",
            "--plan",
            "annual",
            "--no-email",
        ],
    );
    assert_eq!(created["emails"], json!([]));
    let expires =
        chrono::DateTime::parse_from_rfc3339(created["expiresAt"].as_str().expect("expiry"))
            .expect("RFC 3339");
    let days = (expires.with_timezone(&chrono::Utc) - chrono::Utc::now()).num_hours();
    assert!((365 * 24 - 1..=365 * 24).contains(&days), "{days}");
    let key = created["key"].as_str().expect("key").to_owned();
    use diesel::prelude::*;
    use licence_server::schema::licence;
    diesel::update(licence::table.filter(licence::license_key.eq(&key)))
        .set((
            licence::status.eq("refunded"),
            licence::disabled_at.eq(Some(chrono::Utc::now().naive_utc())),
        ))
        .execute(&mut app.conn())
        .expect("refund");
    assert_eq!(app.activate(&key, "pc").await.0, 403);
    let enabled = admin_ok(&app, &["enable", &key]);
    assert_eq!(enabled["status"], "active");
    assert_eq!(app.activate(&key, "pc").await.0, 200);
}

/// Every row of every table of the test database, as `mariadb-dump` writes them.
fn dump(app: &TestApp) -> String {
    let url = url::Url::parse(app.db.url()).expect("database URL");
    let out = std::process::Command::new("mariadb-dump")
        .args([
            "--protocol=tcp",
            "-h",
            url.host_str().unwrap_or("127.0.0.1"),
            "-P",
            &url.port().unwrap_or(3306).to_string(),
            "-u",
            url.username(),
            &format!("--password={}", url.password().unwrap_or_default()),
            "--no-create-info",
            "--skip-extended-insert",
            "--skip-comments",
            app.db.name(),
        ])
        .output()
        .expect("run mariadb-dump");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn buyer_purchase(order: u64, email: &str, name: &str) -> Value {
    let mut event = crate::helpers::order_created(order, crate::helpers::VARIANT_PRO, email);
    event["data"]["attributes"]["user_name"] = json!(name);
    event
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_buyer_is_exported_whole_and_erased_to_a_tombstone_with_the_licence_still_valid() {
    let app = spawn_app().await;
    for (order, email, name) in [
        (9001, "Grace.Hopper@example.com", "Grace Hopper"),
        (9002, "ada@example.com", "Ada Lovelace"),
    ] {
        let (status, _) = app.webhook(&buyer_purchase(order, email, name)).await;
        assert_eq!(status, 200);
    }
    app.smtp.wait_for(2, Duration::from_secs(10)).await;
    let key = app.key_of_order("9001").expect("grace's licence");
    let token = app.token(&key, "grace-laptop").await;
    let (status, _) = app
        .post("/api/usage/consume", &json!({}), Some(&token))
        .await;
    assert_eq!(status, 200);

    let export = admin_ok(&app, &["export", "--email", "grace.hopper@EXAMPLE.com"]);
    let tables = &export["tables"];
    assert_eq!(
        tables["licence"].as_array().map(Vec::len),
        Some(1),
        "{export}"
    );
    assert_eq!(tables["licence"][0]["license_key"], json!(key));
    assert_eq!(tables["licence"][0]["customer_name"], "Grace Hopper");
    assert_eq!(tables["activation"][0]["instance_id"], "grace-laptop");
    assert_eq!(tables["daily_usage"][0]["used"], 1);
    assert_eq!(tables["email_outbox"].as_array().map(Vec::len), Some(1));
    assert_eq!(tables["webhook_event"].as_array().map(Vec::len), Some(1));
    let text = export.to_string();
    assert!(
        !text.contains("ada@example.com") && !text.contains("Ada Lovelace"),
        "only grace: {text}"
    );

    let before = dump(&app);
    assert!(before.contains("Grace Hopper") && before.contains("Grace.Hopper@example.com"));
    let erased = admin_ok(&app, &["erase", "--email", "grace.hopper@example.com"]);
    assert_eq!(erased["erasedLicences"], 1);
    let after = dump(&app);
    for gone in ["Grace", "Hopper", "grace.hopper", "Grace.Hopper"] {
        assert!(!after.contains(gone), "{gone} is still stored");
    }
    let ada_rows = |dump: &str| -> Vec<String> {
        dump.lines()
            .filter(|l| l.contains("ada@example.com") || l.contains("Ada Lovelace"))
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(
        ada_rows(&after),
        ada_rows(&before),
        "the other buyer is untouched"
    );
    assert!(!ada_rows(&after).is_empty());

    // The installation already activated keeps working; so does a new one on the same key.
    let (status, body) = app.validate_by_token(&token).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(app.activate(&key, "grace-desktop").await.0, 200);
    let (ok, _, err) = admin(&app, &["export", "--email", "grace.hopper@example.com"]);
    assert!(
        !ok && err.contains("no licence"),
        "nothing is left under the address: {err}"
    );
    let (ok, _, _) = admin(&app, &["erase", "--email", "nobody@example.com"]);
    assert!(!ok);
}
