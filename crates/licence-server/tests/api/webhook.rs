//! The Lemon Squeezy webhook: signatures, idempotency, subscription states, refunds and the
//! licence e-mail over a real SMTP server.

use std::time::Duration;

use futures_util::future::join_all;
use serde_json::json;

use crate::helpers::{
    VARIANT_ANNUAL, VARIANT_BASIC, VARIANT_PREMIUM, VARIANT_PRO, assert_error, order_created,
    spawn_app, subscription_event,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_purchase_delivered_five_times_three_at_once_makes_one_licence_and_one_email() {
    let app = spawn_app().await;
    let event = order_created(5001, VARIANT_ANNUAL, "buyer@example.com");
    let concurrent = join_all((0..3).map(|_| app.webhook(&event))).await;
    for (s, b) in &concurrent {
        assert_eq!((*s, b), (200, &json!({"received": true})));
    }
    for _ in 0..2 {
        app.deliver(&event).await;
    }
    assert_eq!(app.count("licence"), 1);
    assert_eq!(app.count("webhook_event"), 1);
    assert_eq!(app.count("email_outbox"), 1);

    let key = app.key_of_order("5001").expect("licence of the order");
    let mails = app.smtp.wait_for(1, Duration::from_secs(10)).await;
    assert_eq!(mails.len(), 1);
    // Give a duplicate every chance to show up.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let mails = app.smtp.messages();
    assert_eq!(mails.len(), 1, "exactly one e-mail");
    let mail = &mails[0];
    assert_eq!(mail.rcpt_to, vec!["buyer@example.com".to_owned()]);
    assert_eq!(mail.mail_from, "licences@example.com");
    let content_type = mail.header("content-type").unwrap_or_default();
    assert!(
        content_type.starts_with("multipart/alternative"),
        "{content_type}"
    );
    assert!(
        mail.data.contains("Content-Type: text/plain"),
        "{}",
        mail.data
    );
    assert!(
        mail.data.contains("Content-Type: text/html"),
        "{}",
        mail.data
    );
    let decoded = soft_decoded(&mail.data);
    assert_eq!(
        decoded.matches(key.as_str()).count(),
        2,
        "the key in both parts: {decoded}"
    );
    assert!(
        decoded.contains("Ada &lt;Lovelace&gt;"),
        "names are escaped in HTML"
    );

    // The licence works, Annual = Pro's quota and features, 365 days from the order.
    let (s, b) = app.activate(&key, "pc").await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["license"]["plan"], "annual");
    assert_eq!(b["license"]["dailyQuota"], 30);
    assert_eq!(b["license"]["expiresAt"], "2027-11-22T06:00:00Z");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_signature_is_401_and_writes_nothing() {
    let app = spawn_app().await;
    let raw = order_created(5002, VARIANT_PRO, "x@example.com").to_string();
    let good = licence_server::signing::webhook_signature(
        crate::helpers::WEBHOOK_SECRET.as_bytes(),
        raw.as_bytes(),
    );
    let tampered = raw.replace("x@example.com", "y@example.com");
    for (body, sig) in [
        (raw.as_str(), ""),
        (raw.as_str(), "00"),
        (raw.as_str(), "not hex"),
        (raw.as_str(), &good[..62]),
        (tampered.as_str(), good.as_str()),
        (&format!("{raw} "), good.as_str()),
    ] {
        let (s, b) = app.webhook_raw(body, sig).await;
        assert_error(s, &b, 401, "INVALID_SIGNATURE");
    }
    let resp = app
        .client
        .post(format!("{}/api/webhook/lemonsqueezy", app.base))
        .body(raw.clone())
        .send()
        .await
        .expect("POST");
    assert_eq!(resp.status().as_u16(), 401, "no signature header at all");
    for table in ["licence", "webhook_event", "email_outbox", "activation"] {
        assert_eq!(app.count(table), 0, "{table}");
    }
    // The genuine signature on the untouched body passes.
    assert_eq!(app.webhook_raw(&raw, &good).await.0, 200);
    assert_eq!(app.count("licence"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smtp_down_during_a_purchase_delays_the_email_without_losing_it() {
    let app = spawn_app().await;
    app.smtp.switch_off();
    let (s, b) = app
        .webhook(&order_created(5003, VARIANT_BASIC, "later@example.com"))
        .await;
    assert_eq!(
        (s, b),
        (200, json!({"received": true})),
        "the webhook never waits for SMTP"
    );
    // Several attempts fail while the server is away.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(app.smtp.messages().is_empty());
    #[derive(diesel::QueryableByName)]
    struct Attempts {
        #[diesel(sql_type = diesel::sql_types::Integer)]
        attempts: i32,
    }
    use diesel::RunQueryDsl;
    let a: Attempts = diesel::sql_query("SELECT attempts FROM email_outbox")
        .get_result(&mut app.conn())
        .expect("outbox row");
    assert!(a.attempts >= 2, "retried: {}", a.attempts);

    app.smtp.switch_on().await.expect("SMTP back");
    let mails = app.smtp.wait_for(1, Duration::from_secs(10)).await;
    assert_eq!(mails.len(), 1);
    let key = app.key_of_order("5003").expect("licence");
    assert!(mails[0].data.contains(&key));
    assert_eq!(mails[0].rcpt_to, vec!["later@example.com".to_owned()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_move_plan_and_status() {
    let app = spawn_app().await;
    let email = "sub@example.com";
    let ev = |name: &str, variant: u64, status: &str, ends: Option<&str>, updated: &str| {
        subscription_event(name, 900, 6001, variant, status, ends, updated, email)
    };
    // The order and the subscription both arrive; one licence, one e-mail.
    app.deliver(&order_created(6001, VARIANT_PRO, email)).await;
    let created = ev(
        "subscription_created",
        VARIANT_PRO,
        "active",
        None,
        "2026-11-22T06:00:01Z",
    );
    app.deliver(&created).await;
    assert_eq!(app.count("licence"), 1);
    assert_eq!(app.count("email_outbox"), 1);
    let key = app.key_of_order("6001").expect("licence");
    let token = app.token(&key, "pc").await;

    let plan_of = |b: &serde_json::Value| b["license"]["plan"].as_str().map(str::to_owned);
    let validate_body = json!({"licenseKey": key, "instanceId": "pc"});
    let validate = || app.post("/api/license/validate", &validate_body, None);

    // Upgrade: subscription_updated with a new variant.
    let up = ev(
        "subscription_updated",
        VARIANT_PREMIUM,
        "active",
        None,
        "2026-11-23T00:00:00Z",
    );
    app.deliver(&up).await;
    let (s, b) = validate().await;
    assert_eq!((s, plan_of(&b).as_deref()), (200, Some("premium")), "{b}");
    let (_, st) = app.get("/api/usage/status", Some(&token)).await;
    assert_eq!(
        st["limit"], 150,
        "the quota follows the current plan, not the token's"
    );

    // An older event delivered late changes nothing.
    let stale = ev(
        "subscription_updated",
        VARIANT_BASIC,
        "active",
        None,
        "2026-11-22T12:00:00Z",
    );
    app.deliver(&stale).await;
    assert_eq!(plan_of(&validate().await.1).as_deref(), Some("premium"));

    for (name, status, keeps) in [
        ("subscription_updated", "past_due", true),
        ("subscription_updated", "on_trial", true),
        ("subscription_paused", "paused", false),
        ("subscription_unpaused", "active", true),
        ("subscription_updated", "unpaid", false),
        ("subscription_resumed", "active", true),
    ] {
        let at = format!("2026-11-24T00:00:{:02}Z", app.count("webhook_event"));
        app.deliver(&ev(name, VARIANT_PREMIUM, status, None, &at))
            .await;
        let (s, b) = validate().await;
        if keeps {
            assert_eq!(s, 200, "{status}: {b}");
            assert_eq!(b["license"]["status"], status);
        } else {
            assert_error(s, &b, 403, "LICENSE_INACTIVE");
        }
    }

    // Cancelled: access until ends_at; expired: none.
    let ends = (chrono::Utc::now() + chrono::Duration::days(10))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let cancel = ev(
        "subscription_cancelled",
        VARIANT_PREMIUM,
        "cancelled",
        Some(&ends),
        "2026-11-25T00:00:00Z",
    );
    app.deliver(&cancel).await;
    let (s, b) = validate().await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["license"]["expiresAt"], ends.as_str());
    let expired = ev(
        "subscription_expired",
        VARIANT_PREMIUM,
        "expired",
        Some(&ends),
        "2026-11-26T00:00:00Z",
    );
    app.deliver(&expired).await;
    let (s, b) = validate().await;
    assert_error(s, &b, 403, "LICENSE_INACTIVE");
    assert_eq!(app.count("licence"), 1);
    assert_eq!(app.count("email_outbox"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refunds_disable_the_licence() {
    let app = spawn_app().await;
    app.deliver(&order_created(7001, VARIANT_ANNUAL, "r@example.com"))
        .await;
    let key = app.key_of_order("7001").expect("licence");
    assert_eq!(app.activate(&key, "pc").await.0, 200);

    let mut partial = order_created(7001, VARIANT_ANNUAL, "r@example.com");
    partial["meta"]["event_name"] = json!("order_refunded");
    partial["data"]["attributes"]["status"] = json!("partial_refund");
    partial["data"]["attributes"]["updated_at"] = json!("2026-11-23T00:00:00Z");
    app.deliver(&partial).await;
    assert_eq!(
        app.activate(&key, "pc").await.0,
        200,
        "a partial refund keeps the licence"
    );

    let mut full = partial.clone();
    full["data"]["attributes"]["status"] = json!("refunded");
    full["data"]["attributes"]["refunded"] = json!(true);
    full["data"]["attributes"]["updated_at"] = json!("2026-11-24T00:00:00Z");
    app.deliver(&full).await;
    let (s, b) = app.activate(&key, "pc").await;
    assert_error(s, &b, 403, "LICENSE_INACTIVE");
    let (s, b) = app.validate(&key, "pc").await;
    assert_error(s, &b, 403, "LICENSE_INACTIVE");

    // A refunded renewal of a subscription disables its licence too.
    let sub = subscription_event(
        "subscription_created",
        77,
        7002,
        VARIANT_BASIC,
        "active",
        None,
        "2026-11-22T06:00:00Z",
        "s@example.com",
    );
    app.deliver(&sub).await;
    let sub_key = app.key_of_order("7002").expect("licence");
    assert_eq!(app.activate(&sub_key, "pc").await.0, 200);
    let invoice = json!({
        "meta": {"event_name": "subscription_payment_refunded"},
        "data": {"type": "subscription-invoices", "id": "inv-1", "attributes": {
            "subscription_id": 77, "status": "refunded", "refunded": true,
            "updated_at": "2026-12-01T00:00:00Z"}}
    });
    app.deliver(&invoice).await;
    let (s, b) = app.activate(&sub_key, "pc").await;
    assert_error(s, &b, 403, "LICENSE_INACTIVE");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_variants_and_other_events_are_acknowledged() {
    let app = spawn_app().await;
    let (s, b) = app
        .webhook(&order_created(8001, 999_999, "u@example.com"))
        .await;
    assert_eq!((s, b), (200, json!({"received": true})));
    assert_eq!(
        app.count("licence"),
        0,
        "no licence for a variant of no plan"
    );
    assert_eq!(
        app.count("webhook_event"),
        0,
        "kept for a redelivery after a fix"
    );

    for name in [
        "subscription_payment_success",
        "subscription_payment_failed",
        "subscription_payment_recovered",
        "license_key_created",
        "license_key_updated",
        "affiliate_activated",
        "something_new",
    ] {
        let body = json!({"meta": {"event_name": name},
            "data": {"type": "things", "id": "1", "attributes": {"subscription_id": 1, "status": "paid"}}});
        assert_eq!(
            app.webhook(&body).await,
            (200, json!({"received": true})),
            "{name}"
        );
    }
    assert_eq!(app.count("licence"), 0);
    assert_eq!(app.count("email_outbox"), 0);

    // An unpaid order makes nothing either.
    let mut pending = order_created(8002, VARIANT_PRO, "p@example.com");
    pending["data"]["attributes"]["status"] = json!("pending");
    app.deliver(&pending).await;
    assert_eq!(app.count("licence"), 0);

    // Signed but unusable bodies are 400, never 500.
    for raw in [
        "{",
        "[]",
        "{\"meta\":{}}",
        "{\"meta\":{\"event_name\":\"order_created\"}}",
        "{\"meta\":{\"event_name\":\"order_created\"},\"data\":{\"id\":{}}}",
    ] {
        let sig = licence_server::signing::webhook_signature(
            crate::helpers::WEBHOOK_SECRET.as_bytes(),
            raw.as_bytes(),
        );
        let (s, b) = app.webhook_raw(raw, &sig).await;
        assert_error(s, &b, 400, "VALIDATION_ERROR");
    }
}

/// The message with quoted-printable soft line breaks and `=3D` undone, enough to search it.
fn soft_decoded(data: &str) -> String {
    data.replace("=\r\n", "").replace("=3D", "=")
}
