//! Start-up, probes and the subcommands operators use.

use testkit::checks;
use testkit::mariadb::TestMariaDb;

use crate::helpers::{base_env, spawn_app};

testkit::operations_tests!(
    "licence-server",
    spawn_app,
    TestMariaDb::empty,
    "/api/health"
);

#[test]
fn bad_settings_stop_the_process_naming_the_variable() {
    let builds = std::env::temp_dir().to_string_lossy().into_owned();
    let base = base_env("mysql://app:app@127.0.0.1:3306/licensing", &builds);
    let base: Vec<(&str, &str)> = base
        .iter()
        .filter(|(k, _)| k != "LISTEN_ADDR")
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let case = |name: &str, value: Option<&str>| {
        checks::config_rejected(bin(), &base, &[(name, value.unwrap_or_default())], name);
    };
    case("DATABASE_URL", Some("postgres://app@127.0.0.1/x"));
    case("PUBLIC_BASE_URL", None);
    case("LICENCE_JWT_KEYS", Some("k1:too-short"));
    case("DOWNLOAD_SIGNING_SECRET", Some("short"));
    case("BUILDS_DIR", Some("/no/such/dir"));
    case("PAYMENT_WEBHOOK_SECRET", None);
    case("PAYMENT_VARIANT_ANNUAL", Some("1001"));
    case("SMTP_URL", Some("mail.example.com"));
    // Plain SMTP to another machine would carry licence keys and passwords in the clear.
    case("SMTP_URL", Some("smtp://mail.example.com:25"));
    case("MAIL_FROM", Some("nobody"));
    case("LICENCE_SIGNING_KEYS", None);
    case("LICENCE_SIGNING_KEYS", Some("ed1:change-me-please"));
    case("LICENCE_GRACE_DAYS", Some("0"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starts_and_sells_while_smtp_is_unreachable() {
    let app = spawn_app().await;
    app.smtp.switch_off();
    // A second instance started during the outage.
    let base = app
        .start_instance(&format!("k1:{}", crate::helpers::KEY))
        .await;
    let (status, _) = testkit::http::get_json(&format!("{base}/ready")).await;
    assert_eq!(status, 200);
    let raw = crate::helpers::order_created(4242, crate::helpers::VARIANT_PRO, "o@example.com")
        .to_string();
    let sig = licence_server::signing::webhook_signature(
        crate::helpers::WEBHOOK_SECRET.as_bytes(),
        raw.as_bytes(),
    );
    let resp = app
        .client
        .post(format!("{base}/api/webhook/lemonsqueezy"))
        .header("x-signature", sig)
        .body(raw)
        .send()
        .await
        .expect("POST");
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(app.count("licence"), 1);
    app.smtp.switch_on().await.expect("SMTP back");
    let mails = app
        .smtp
        .wait_for(1, std::time::Duration::from_secs(10))
        .await;
    assert_eq!(mails.len(), 1, "delivered once, by one of the two senders");
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(app.smtp.messages().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_input_is_never_a_server_error() {
    let app = spawn_app().await;
    let long = "A".repeat(70_000);
    let bodies = [
        "",
        "{",
        "null",
        "[]",
        "1e999",
        "{\"licenseKey\": null, \"instanceId\": null}",
        "{\"licenseKey\": \"\\u0000\", \"instanceId\": \"\\u0000\"}",
        "{\"licenseKey\": \"' OR 1=1 --\", \"instanceId\": \"x\"}",
        "{\"licenseKey\": {\"$gt\": \"\"}, \"instanceId\": \"x\"}",
        "\u{feff}{}",
        long.as_str(),
    ];
    let posts = [
        "/api/license/activate",
        "/api/license/validate",
        "/api/license/deactivate",
        "/api/usage/consume",
        "/api/webhook/lemonsqueezy",
    ];
    let auth = [
        None,
        Some("Bearer"),
        Some("Bearer ."),
        Some("Bearer \u{7f}"),
        Some("Bearer eyJhbGciOiJub25lIn0.e30."),
        Some("bearer a.b.c"),
    ];
    for path in posts {
        for body in bodies {
            for header in auth {
                let mut req = app
                    .client
                    .post(format!("{}{path}", app.base))
                    .header("content-type", "application/json")
                    .body(body.to_owned());
                if let Some(h) = header
                    && let Ok(v) = reqwest::header::HeaderValue::from_str(h)
                {
                    req = req.header("authorization", v);
                }
                let resp = req.send().await.expect("POST");
                let status = resp.status().as_u16();
                let json: serde_json::Value = resp.json().await.unwrap_or_default();
                assert!(
                    (400..500).contains(&status),
                    "{path} {body:.40} {header:?}: {status}"
                );
                assert!(json["code"].is_string(), "{path}: {json}");
            }
        }
    }
    for query in [
        "",
        "?file=&expires=&sig=",
        "?file=a&expires=-1&sig=zz",
        "?file=a&expires=99999999999999999999999&sig=00",
        "?file=%00&expires=1&sig=00",
        "?file=a&file=b&expires=1&sig=00",
    ] {
        let (status, body) = app.get(&format!("/api/download{query}"), None).await;
        assert!((400..500).contains(&status), "{query}: {status} {body}");
    }
    for token in ["", ".", "a.b.c", "eyJhbGciOiJub25lIn0.e30."] {
        let (status, body) = app.get("/api/latest", Some(token)).await;
        assert_eq!(
            (status, &body["licensed"]),
            (200, &serde_json::json!(false)),
            "{token}"
        );
        let (status, _) = app.get("/api/usage/status", Some(token)).await;
        assert_eq!(status, 401, "{token}");
    }
}

/// The document served at `/openapi.json` lists exactly the routes and methods the service
/// mounts, and `/docs` is the page that renders it.
#[tokio::test]
async fn the_openapi_document_matches_the_mounted_routes() {
    let app = spawn_app().await;
    let document = licence_server::openapi::document();
    let mounted =
        testkit::openapi::assert_documents_its_routes(&app.client, &app.base, document, |cfg| {
            cfg.route(
                "/api/health",
                actix_web::web::get().to(service_kit::http::ready),
            )
            .configure(licence_server::routes::config);
        })
        .await;
    assert!(mounted.contains(&"/api/license/activate".to_owned()));
}
