//! `GET /me/export`: the whole document, without secrets and without anyone else's data, and
//! the fasts as CSV that a spreadsheet opens safely.

use chrono::{Duration, Utc};
use reqwest::Method;
use serde_json::json;
use testkit::push_service::FakePushService;

use crate::helpers::{TestApp, User, spawn_with};

const NOTE: &str = "=HYPERLINK(\"http://evil.example\",\"click\"), then \"dizzy\"\nsecond line";

async fn fill(app: &TestApp, u: &User, push: &FakePushService) -> String {
    app.patch(
        "/me/preferences",
        u,
        json!({ "fastingProtocol": "16:8", "fastingMilestones": true, "weightGoalKg": null, "heightCm": null, "waterGoalMl": 2000, "locale": "it", "longFastAcknowledged": false }),
    )
    .await;
    app.patch(
        "/me/notifications/settings",
        u,
        json!({ "mealReminders": true }),
    )
    .await;
    let sub = push.subscribe();
    let r = app
        .post(
            "/me/device-tokens",
            u,
            json!({ "platform": "web", "endpoint": sub.endpoint, "keys": { "p256dh": sub.p256dh, "auth": sub.auth }, "token": "fcm-secret-token" }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let started = service_kit::time::format(&(Utc::now() - Duration::hours(30)));
    let fast = app
        .post(
            "/me/fast-events",
            u,
            json!({ "protocol": "24:0", "startedAt": started }),
        )
        .await;
    assert_eq!(fast.status, 201, "{}", fast.text);
    let id = fast.body["id"].as_str().expect("id").to_owned();
    let ended = app
        .post(&format!("/me/fast-events/{id}/end"), u, json!({}))
        .await;
    assert_eq!(ended.status, 200, "{}", ended.text);
    let diary = app
        .patch(
            &format!("/me/fast-events/{id}"),
            u,
            json!({ "symptoms": { "headache": true, "energy": 4, "hunger": 7, "clarity": 6, "note": NOTE } }),
        )
        .await;
    assert_eq!(diary.status, 200, "{}", diary.text);
    let running = app
        .post("/me/fast-events", u, json!({ "protocol": "16:8" }))
        .await;
    assert_eq!(running.status, 201);
    let today = domain::rome::local_date(Utc::now()).to_string();
    let plan = app
        .post(
            "/me/meal-plans",
            u,
            json!({ "intermittentFasting": false, "days": [{ "date": today, "slots": [{ "category": "PRA", "title": "Insalata" }] }] }),
        )
        .await;
    assert_eq!(plan.status, 201, "{}", plan.text);
    let pause = app.post("/me/fasting/pause", u, json!({})).await;
    assert_eq!(pause.status, 200, "{}", pause.text);
    sub.p256dh
}

#[tokio::test]
async fn the_json_document_holds_everything_and_no_secret() {
    let app = spawn_with(&[("PUSH_ALLOW_HTTP_ENDPOINTS".into(), "true".into())]).await;
    let push = FakePushService::start().await;
    let u = app.user("export@example.com");
    let other = app.user("someone-else@example.com");
    app.sql(&format!(
        "INSERT INTO auth.account (id, account_id, provider_id, user_id, password, access_token, scope)
         VALUES ('acc-1', '{0}', 'credential', '{0}', '$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaA', NULL, NULL),
                ('acc-2', 'google-sub-1', 'google', '{0}', NULL, 'ya29.secret-access', 'openid,email')",
        u.id
    ));
    let key = fill(&app, &u, &push).await;
    fill(&app, &other, &push).await;

    let resp = app.get("/me/export", &u).await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    assert!(
        resp.header("content-type")
            .is_some_and(|c| c.starts_with("application/json")),
        "{:?}",
        resp.header("content-type")
    );
    let disposition = resp.header("content-disposition").unwrap_or_default();
    assert!(
        disposition.starts_with("attachment;") && disposition.contains(".json"),
        "{disposition}"
    );
    let doc = &resp.body;
    for field in [
        "exportedAt",
        "user",
        "sessions",
        "accounts",
        "preferences",
        "pauses",
        "fasts",
        "mealPlans",
        "notificationSettings",
        "devices",
    ] {
        assert!(doc.get(field).is_some(), "{field} missing: {doc}");
    }
    assert_eq!(doc["user"]["email"], "export@example.com");
    assert_eq!(doc["sessions"].as_array().map(Vec::len), Some(1));
    assert_eq!(doc["sessions"][0]["userId"], json!(u.id));
    let accounts = doc["accounts"].as_array().expect("accounts");
    assert_eq!(accounts.len(), 2);
    assert_eq!(accounts[1]["scopes"], json!(["openid", "email"]));
    assert_eq!(
        doc["preferences"],
        json!({ "fastingProtocol": "16:8", "fastingMilestones": true, "weightGoalKg": null, "heightCm": null, "waterGoalMl": 2000, "locale": "it", "longFastAcknowledged": false })
    );
    assert!(doc["pauses"]["fastingPausedUntil"].is_string());
    assert_eq!(doc["pauses"]["periods"].as_array().map(Vec::len), Some(1));
    let fasts = doc["fasts"].as_array().expect("fasts");
    assert_eq!(fasts.len(), 2);
    assert_eq!(fasts[0]["status"], "COMPLETED");
    assert_eq!(fasts[0]["symptoms"]["note"], NOTE);
    assert_eq!(fasts[1]["status"], "IN_PROGRESS");
    assert_eq!(doc["mealPlans"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        doc["mealPlans"][0]["days"][0]["slots"][0]["title"],
        "Insalata"
    );
    assert_eq!(
        doc["notificationSettings"],
        json!({ "mealReminders": true, "weeklyWeighIn": true })
    );
    assert_eq!(doc["devices"].as_array().map(Vec::len), Some(1));
    assert!(doc["devices"][0]["endpoint"].is_string());

    for secret in [
        key.as_str(),
        "p256dh",
        "fcm-secret-token",
        "$argon2id$",
        "ya29.secret-access",
        "someone-else@example.com",
        other.id.as_str(),
    ] {
        assert!(!resp.text.contains(secret), "the export holds {secret}");
    }
    let token = u.cookie.split('=').nth(1).and_then(|v| v.split('.').next());
    assert!(
        !resp.text.contains(token.expect("token")),
        "no session token"
    );
}

/// The fields of one CSV record per line, parsed as a spreadsheet would (RFC 4180).
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut cell = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                cell.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => cell.push(c),
            (false, '"') => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut cell)),
            (false, '\r') => {}
            (false, '\n') => {
                row.push(std::mem::take(&mut cell));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => cell.push(c),
        }
    }
    rows
}

#[tokio::test]
async fn the_csv_holds_the_fasts_quoted_and_formula_free() {
    let app = spawn_with(&[("PUSH_ALLOW_HTTP_ENDPOINTS".into(), "true".into())]).await;
    let push = FakePushService::start().await;
    let u = app.user("csv@example.com");
    fill(&app, &u, &push).await;

    let resp = app.get("/me/export?format=csv", &u).await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    assert!(
        resp.header("content-type")
            .is_some_and(|c| c.starts_with("text/csv")),
        "{:?}",
        resp.header("content-type")
    );
    assert!(
        resp.header("content-disposition")
            .is_some_and(|d| d.starts_with("attachment;") && d.contains(".csv"))
    );
    let rows = parse_csv(&resp.text);
    assert_eq!(rows.len(), 3, "a header and two fasts: {}", resp.text);
    assert_eq!(rows[0][0], "id");
    assert_eq!(rows[0].last().map(String::as_str), Some("note"));
    assert!(rows.iter().all(|r| r.len() == rows[0].len()), "{rows:?}");
    let finished = &rows[1];
    assert_eq!(finished[1], "COMPLETED");
    assert_eq!(finished[2], "24:0");
    assert_eq!(&finished[8..12], ["true", "4", "7", "6"]);
    assert_eq!(
        finished[12],
        format!("'{NOTE}"),
        "the note survives whole, behind an apostrophe"
    );
    assert_eq!(rows[2][1], "IN_PROGRESS");
    assert_eq!(rows[2][5], "", "no end yet");

    let bad = app.get("/me/export?format=xml", &u).await;
    bad.assert_code(400, "VALIDATION_ERROR");
    let anonymous = app.call(Method::GET, "/me/export", None, None).await;
    assert_eq!(anonymous.status, 401);
}

/// Exporting a health diary needs a fresh session, as deleting the account does: one made in
/// the last day, or one its owner proved (password or code) in the last five minutes.
#[tokio::test]
async fn a_stale_session_may_not_export_and_a_proven_one_may() {
    let app = spawn_with(&[]).await;
    let u = app.user("stale@example.com");
    let age = |sql: &str| {
        app.sql(&format!(
            "UPDATE auth.session SET {sql} WHERE user_id = '{}'",
            u.id
        ))
    };
    age("created_at = now() - interval '25 hours'");
    for path in ["/me/export", "/me/export?format=csv"] {
        let stale = app.get(path, &u).await;
        assert_eq!(stale.status, 403, "{}", stale.text);
        assert_eq!(stale.body["code"], "SESSION_NOT_FRESH");
    }
    assert_eq!(
        app.count("SELECT count(*) AS n FROM auth.activity"),
        0,
        "a refused export is not recorded"
    );
    age("proven_at = now() - interval '6 minutes'");
    assert_eq!(app.get("/me/export", &u).await.status, 403);
    age("proven_at = now() - interval '1 minute'");
    assert_eq!(app.get("/me/export", &u).await.status, 200);
    age("created_at = now() - interval '23 hours', proven_at = NULL");
    assert_eq!(app.get("/me/export", &u).await.status, 200);
}

/// The export carries the account's security activity, whether two-factor is on and the
/// passkeys, never a secret or a key; each export is itself recorded.
#[tokio::test]
async fn the_export_holds_the_activity_two_factor_and_passkeys_and_is_recorded() {
    let app = spawn_with(&[]).await;
    let u = app.user("activity@example.com");
    app.sql(&format!(
        "INSERT INTO auth.activity (id, user_id, kind, at, user_agent, ip)
         VALUES ('a1', '{0}', 'sign_in', now() - interval '1 day', 'Firefox', '203.0.113.0/24'),
                ('a0', '{0}', 'sign_in', now() - interval '91 days', 'Old', '198.51.100.0/24')",
        u.id
    ));
    app.sql(&format!(
        "INSERT INTO auth.two_factor (id, user_id, secret, backup_codes, verified)
         VALUES ('tf1', '{0}', 'sealed-secret-never-exported', ARRAY['backup-digest-never-exported'], true)",
        u.id
    ));
    app.sql(&format!(
        "INSERT INTO auth.passkey (id, user_id, name, credential_id, public_key, credential,
                                   device_type, backed_up, transports, created_at)
         VALUES ('pk1', '{0}', 'Telefono', 'credential-id-never-exported',
                 'public-key-never-exported', '{{\"cred\": \"verifier-record-never-exported\"}}',
                 'multiDevice', true, 'internal,hybrid', now())",
        u.id
    ));
    let first = app.get("/me/export", &u).await;
    assert_eq!(first.status, 200, "{}", first.text);
    let doc = &first.body;
    assert_eq!(doc["passkeys"][0]["name"], "Telefono");
    assert_eq!(doc["passkeys"][0]["deviceType"], "multiDevice");
    assert_eq!(doc["passkeys"][0]["transports"], "internal,hybrid");
    assert_eq!(doc["twoFactor"]["verified"], true);
    assert!(doc["twoFactor"]["createdAt"].is_string());
    assert_eq!(
        doc["activity"].as_array().map(Vec::len),
        Some(1),
        "90 days: {doc}"
    );
    assert_eq!(doc["activity"][0]["kind"], "sign_in");
    assert_eq!(doc["activity"][0]["ip"], "203.0.113.0/24");
    for secret in [
        "sealed-secret-never-exported",
        "backup-digest-never-exported",
        "credential-id-never-exported",
        "public-key-never-exported",
        "verifier-record-never-exported",
    ] {
        assert!(!first.text.contains(secret), "the export holds {secret}");
    }
    let second = app.get("/me/export", &u).await;
    assert_eq!(
        second.body["activity"][0]["kind"], "export",
        "the first export, newest first"
    );
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM auth.activity WHERE user_id = '{}' AND kind = 'export'",
            u.id
        )),
        2
    );
}
