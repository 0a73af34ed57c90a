//! `POST /api/auth/delete-user`: the checks before it, and erasure everywhere after it, proved by
//! reading every row of every table of the database.

use std::collections::BTreeSet;

use chrono::{Duration, NaiveDate, TimeZone, Utc};
use diesel::prelude::*;
use diesel::sql_types::Text;
use serde_json::{Value, json};
use testkit::push_service::FakePushService;

use crate::helpers::{
    BASE_URL, Peer, SECRET, TestApp, get, post_json, spawn_app, spawn_nutrition_with,
};

const PASSWORD: &str = "password-123";

/// One person with data in every table: their id, address, push endpoints and diary note.
struct Person {
    id: String,
    email: String,
    cookie: String,
    endpoints: Vec<String>,
    note: String,
}

impl Person {
    /// Everything that identifies this person; no row may hold any of it after erasure.
    fn marks(&self) -> Vec<String> {
        let mut marks = vec![self.id.clone(), self.email.clone(), self.note.clone()];
        marks.extend(self.endpoints.iter().cloned());
        // Rate-limit counters are stored under keyed hashes of the address: what links them to
        // the person is the key the service derives, as an attacker with the secret could.
        for route in auth::repo::rate_limits::EMAIL_ROUTES {
            marks.push(auth::keys::rate_limit_key(
                SECRET,
                route,
                "email",
                &self.email,
            ));
        }
        marks
    }
}

async fn call(
    app: &TestApp,
    api: &Peer,
    method: reqwest::Method,
    path: &str,
    p: &Person,
    body: Value,
) -> Value {
    let resp = app
        .http
        .request(method, format!("{}{path}", api.base))
        .header("cookie", &p.cookie)
        .header("origin", BASE_URL)
        .json(&body)
        .send()
        .await
        .expect("request");
    let status = resp.status();
    let text = resp.text().await.expect("body");
    assert!(status.is_success(), "{path}: {status} {text}");
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// Signs `email` up and fills every table through the real services: two sessions, the rate-limit
/// counters of sign-up and of a failed sign-in, preferences, two push devices, a finished fast with a diary
/// entry and a running one, a meal plan with a consumed slot, notification settings and a pause.
async fn populate(app: &TestApp, api: &Peer, push: &FakePushService, email: &str) -> Person {
    let (_, signed_up) = app.sign_up(email, PASSWORD).await;
    // A mistyped password first: failed sign-ins are counted per e-mail address.
    let mistyped = app.sign_in(email, "not-the-password").await;
    assert_eq!(mistyped.status, 401, "{}", mistyped.text);
    let signed_in = app.sign_in(email, PASSWORD).await;
    assert_eq!(signed_in.status, 200, "{}", signed_in.text);
    let mut p = Person {
        id: signed_up.user_id(),
        email: email.to_owned(),
        cookie: signed_in.session_cookie().expect("cookie"),
        endpoints: Vec::new(),
        note: format!("diary of {email}: dizzy after lunch"),
    };
    use reqwest::Method;
    call(
        app,
        api,
        Method::PATCH,
        "/me/preferences",
        &p,
        json!({ "fastingProtocol": "16:8", "fastingMilestones": true }),
    )
    .await;
    call(
        app,
        api,
        Method::PATCH,
        "/me/notifications/settings",
        &p,
        json!({ "mealReminders": true, "weeklyWeighIn": true }),
    )
    .await;
    for platform in ["web", "android"] {
        let sub = push.subscribe();
        call(app, api, Method::POST, "/me/device-tokens", &p, json!({ "platform": platform, "endpoint": sub.endpoint, "keys": { "p256dh": sub.p256dh, "auth": sub.auth } })).await;
        p.endpoints.push(sub.endpoint);
    }
    let started = service_kit::time::format(&(Utc::now() - Duration::hours(20)));
    let fast = call(
        app,
        api,
        Method::POST,
        "/me/fast-events",
        &p,
        json!({ "protocol": "16:8", "startedAt": started }),
    )
    .await;
    let fast_id = fast["id"].as_str().expect("fast id").to_owned();
    call(
        app,
        api,
        Method::POST,
        &format!("/me/fast-events/{fast_id}/end"),
        &p,
        json!({}),
    )
    .await;
    call(app, api, Method::PATCH, &format!("/me/fast-events/{fast_id}"), &p, json!({ "symptoms": { "headache": true, "energy": 3, "hunger": 8, "clarity": 5, "note": p.note } })).await;
    let today = Utc::now()
        .with_timezone(&chrono_tz::Europe::Rome)
        .date_naive()
        .to_string();
    let plan = call(app, api, Method::POST, "/me/meal-plans", &p, json!({ "intermittentFasting": true, "days": [{ "date": today, "slots": [{ "category": "COL", "title": format!("breakfast of {email}") }, { "category": "PRA" }] }] })).await;
    let slot = plan["days"][0]["slots"][0]["id"]
        .as_str()
        .expect("slot")
        .to_owned();
    call(
        app,
        api,
        Method::POST,
        &format!("/me/meal-plans/slots/{slot}/consumed"),
        &p,
        Value::Null,
    )
    .await;
    call(
        app,
        api,
        Method::POST,
        "/me/fast-events",
        &p,
        json!({ "protocol": "16:8" }),
    )
    .await;
    p
}

#[derive(QueryableByName)]
struct Line {
    #[diesel(sql_type = Text)]
    line: String,
}

/// Every row of every table of every schema, as `schema.table: row text`.
fn all_rows(app: &TestApp) -> BTreeSet<String> {
    let mut conn = app.db.connect();
    let tables: Vec<Line> = diesel::sql_query(
        "SELECT format('%I.%I', table_schema, table_name) AS line FROM information_schema.tables
          WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')",
    )
    .load(&mut conn)
    .expect("tables");
    assert!(
        tables.len() >= 14,
        "every schema is scanned: {}",
        tables.len()
    );
    let mut rows = BTreeSet::new();
    for Line { line: table } in tables {
        let found: Vec<Line> = diesel::sql_query(format!(
            "SELECT '{table}: ' || t::text AS line FROM {table} t"
        ))
        .load(&mut conn)
        .expect("rows");
        rows.extend(found.into_iter().map(|l| l.line));
    }
    rows
}

/// Whether `row` holds `mark` as a whole value: not preceded by a character that could extend it
/// (`ann@example.com` is not in `joann@example.com`), except as an e-mailed code's identifier
/// names it (`sign-in-otp-ann@example.com`).
fn holds(row: &str, mark: &str) -> bool {
    row.match_indices(mark).any(|(at, _)| {
        row[..at].ends_with("-otp-")
            || !row[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || "._+-".contains(c))
    })
}

fn naming<'a>(rows: &'a BTreeSet<String>, p: &Person) -> Vec<&'a String> {
    let marks = p.marks();
    rows.iter()
        .filter(|r| marks.iter().any(|m| holds(r, m)))
        .collect()
}

/// Queues the weekly weigh-in of a Monday for every device, as push-scheduler's run does, without
/// delivering it: the queued messages must go with their user.
fn queue_weekly_pushes(app: &TestApp) -> i64 {
    let local = NaiveDate::from_ymd_opt(2026, 11, 23)
        .and_then(|d| d.and_hms_opt(9, 0, 0))
        .expect("slot");
    let at = chrono_tz::Europe::Rome
        .from_local_datetime(&local)
        .single()
        .expect("Rome time")
        .with_timezone(&Utc);
    let slot = push_scheduler::jobs::Slot { local, at };
    let mut conn = app.db.connect();
    push_scheduler::run::run(
        &mut conn,
        push_scheduler::jobs::Job::WeeklyWeighIn,
        slot,
        at,
        &push_scheduler::deliver::Shutdown::default(),
    )
    .expect("queue")
    .queued
}

#[tokio::test]
async fn erasure_leaves_no_row_naming_the_user_and_every_other_row_as_it_was() {
    let app = spawn_app().await;
    let api =
        spawn_nutrition_with(&app, &[("PUSH_ALLOW_HTTP_ENDPOINTS".into(), "true".into())]).await;
    let push = FakePushService::start().await;
    let ann = populate(&app, &api, &push, "ann@example.com").await;
    // An address that contains ann's: erasure must tell them apart.
    let joann = populate(&app, &api, &push, "joann@example.com").await;
    assert_eq!(queue_weekly_pushes(&app), 4, "two devices each");
    for p in [&ann, &joann] {
        call(
            &app,
            &api,
            reqwest::Method::POST,
            "/me/fasting/pause",
            p,
            json!({}),
        )
        .await;
    }
    // Verification values as password resets and address checks keep them.
    app.sql(&format!(
        "INSERT INTO auth.verification (id, identifier, value, expires_at) VALUES
           ('v-ann-1', '{0}', 'tok-ann', now() + interval '1 hour'),
           ('v-ann-2', 'reset-password:tok-ann-2', '{1}', now() + interval '1 hour'),
           ('v-ann-3', 'change-email:tok-ann-3', '{{\"email\":\"{0}\",\"userId\":\"{1}\"}}', now() + interval '1 hour'),
           ('v-ann-4', 'sign-in-otp-{0}', 'digest:0', now() + interval '5 minutes'),
           ('v-joann', '{2}', 'tok-joann', now() + interval '1 hour'),
           ('v-joann-2', 'sign-in-otp-{2}', 'digest:1', now() + interval '5 minutes')",
        ann.email, ann.id, joann.email
    ));
    // Mail to each of them, one delivered and one still owed.
    app.sql(&format!(
        "INSERT INTO auth.mail_outbox (kind, to_address, to_name, subject, text_body, html_body, sent_at) VALUES
           ('password_reset', '{0}', 'Ann', 'Reimposta', 't', 'h', now()),
           ('email_verification', '{0}', 'Ann', 'Conferma', 't', 'h', NULL),
           ('email_verification', '{1}', 'Jo', 'Conferma', 't', 'h', NULL)",
        ann.email, joann.email
    ));

    // Mail waiting in auth's outbox, as a password reset queues it.
    for p in [&ann, &joann] {
        app.sql(&format!(
            "INSERT INTO auth.mail_outbox (kind, to_address, to_name, subject, text_body, html_body)
             VALUES ('password_reset', '{0}', 'Test User', 'Reset', 'link for {0}', '<p>link</p>')",
            p.email
        ));
    }

    let before = all_rows(&app);
    for (table, min) in [
        ("auth.session", 2),
        ("auth.account", 1),
        ("auth.rate_limit", 2),
        ("auth.verification", 3),
        ("auth.mail_outbox", 2),
        ("nutrition.profile", 1),
        ("nutrition.fast_event", 2),
        ("nutrition.meal_plan", 1),
        ("nutrition.meal_slot", 2),
        ("nutrition.device_token", 2),
        ("nutrition.pause_period", 1),
        ("scheduler.outbox", 2),
    ] {
        let held = naming(&before, &ann)
            .iter()
            .filter(|r| r.starts_with(&format!("{table}: ")))
            .count();
        assert!(
            held >= min,
            "{table} holds {held} rows of ann, expected {min}+"
        );
    }

    let wrong = app
        .delete_user(json!({ "password": "not-her-password" }), &ann.cookie)
        .await;
    wrong.assert_refused(400, "INVALID_PASSWORD");
    // Only the attempt is counted, as a wrong password at sign-in is.
    let after_refusal: BTreeSet<String> = all_rows(&app)
        .into_iter()
        .filter(|r| !r.starts_with("auth.rate_limit: (delete-user:"))
        .collect();
    assert_eq!(after_refusal, before, "a refused deletion changes nothing");

    let deleted = app
        .delete_user(json!({ "password": PASSWORD }), &ann.cookie)
        .await;
    assert_eq!(deleted.status, 200, "{}", deleted.text);
    assert_eq!(
        deleted.body,
        json!({ "success": true, "message": "User deleted" })
    );
    let expired = deleted.session_set_cookie().expect("the cookie is expired");
    assert!(expired.contains("Max-Age=0"), "{expired}");

    let after = all_rows(&app);
    let left = naming(&after, &ann);
    assert!(left.is_empty(), "rows still naming ann: {left:#?}");
    let expected: BTreeSet<String> = before
        .iter()
        .filter(|r| !naming(&before, &ann).contains(r))
        .cloned()
        .collect();
    // The deletion attempts' count per client address stays (it names an address, not ann).
    let after_but_attempts: BTreeSet<String> = after
        .iter()
        .filter(|r| !r.starts_with("auth.rate_limit: (delete-user:ip:"))
        .cloned()
        .collect();
    assert_eq!(after_but_attempts, expected, "every other row is unchanged");
    assert!(naming(&after, &joann).len() > 15, "joann keeps everything");

    let me = get(&app.http, &format!("{}/me", api.base), Some(&ann.cookie)).await;
    assert_eq!(me.status, 401, "ann's session ended in every service");
    let again = app.sign_in(&ann.email, PASSWORD).await;
    assert_eq!(again.status, 401);
    let joann_me = get(&app.http, &format!("{}/me", api.base), Some(&joann.cookie)).await;
    assert_eq!(joann_me.status, 200);
}

#[tokio::test]
async fn without_the_password_only_a_fresh_session_may_delete() {
    let app = spawn_app().await;
    let (cookie, _) = app.sign_up_stale("fresh@example.com", PASSWORD).await;
    let stale = app.delete_user(json!({}), &cookie).await;
    stale.assert_refused(400, "SESSION_EXPIRED");
    assert_eq!(
        stale.body["message"],
        "Session expired. Re-authenticate to perform this action."
    );
    let empty = app.delete_user(json!({ "password": "" }), &cookie).await;
    assert_eq!(
        empty.body["code"], "SESSION_EXPIRED",
        "an empty password is none"
    );
    assert_eq!(app.count("auth.\"user\""), 1);

    let (fresh_cookie, _) = app.sign_up("fresh2@example.com", PASSWORD).await;
    // No body at all, as a client calling deleteUser() without arguments may send.
    let resp = app
        .http
        .post(app.url("/api/auth/delete-user"))
        .header("cookie", &fresh_cookie)
        .header("origin", BASE_URL)
        .send()
        .await
        .expect("POST");
    assert_eq!(resp.status(), 200);
    assert_eq!(app.count("auth.\"user\""), 1);

    let with_password = app
        .delete_user(json!({ "password": PASSWORD }), &cookie)
        .await;
    assert_eq!(with_password.status, 200, "{}", with_password.text);
    assert_eq!(app.count("auth.\"user\""), 0);
}

#[tokio::test]
async fn deletion_needs_a_session_a_trusted_origin_and_a_safe_callback() {
    let app = spawn_app().await;
    let none = app.post("/api/auth/delete-user", json!({}), None).await;
    assert_eq!(none.status_and_code(), (401, Some("UNAUTHORIZED")));

    let (cookie, _) = app.sign_up("origin@example.com", PASSWORD).await;
    let foreign = app
        .http
        .post(app.url("/api/auth/delete-user"))
        .header("cookie", &cookie)
        .header("origin", "https://evil.example")
        .json(&json!({}))
        .send()
        .await
        .expect("POST");
    assert_eq!(foreign.status(), 403);
    let off_site = post_json(
        &app.http,
        &app.url("/api/auth/delete-user"),
        &json!({ "callbackURL": "https://evil.example/bye" }),
        Some(&cookie),
    )
    .await;
    assert_eq!(off_site.status, 403, "{}", off_site.text);
    let unknown = app.delete_user(json!({ "reason": "x" }), &cookie).await;
    assert_eq!(unknown.status_and_code(), (400, Some("VALIDATION_ERROR")));
    assert_eq!(app.count("auth.\"user\""), 1, "nothing was deleted");
}
