//! The security activity of an account (contract section 10): what is recorded, how it is
//! listed, the mail after a sign-in from a new browser and network with its "this was not me"
//! link, and freshness after a password check.

use serde_json::{Value, json};

use crate::helpers::{BASE_URL, Resp, TestApp, send, spawn_app};
use crate::mail::{link, one_mail, with_mail};

const PASSWORD: &str = "correct horse battery staple";
const PHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) Mobile/15E148";
const LAPTOP: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0";

async fn sign_in_as(app: &TestApp, email: &str, password: &str, user_agent: &str) -> Resp {
    send(
        app.http
            .post(app.url("/api/auth/sign-in/email"))
            .header("user-agent", user_agent)
            .json(&json!({ "email": email, "password": password })),
    )
    .await
}

async fn kinds(app: &TestApp, cookie: &str) -> Vec<String> {
    let listed = app.get("/api/auth/activity", Some(cookie)).await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    items(&listed)
        .iter()
        .map(|i| i["kind"].as_str().expect("kind").to_owned())
        .collect()
}

fn items(resp: &Resp) -> Vec<Value> {
    resp.body["items"].as_array().expect("items").clone()
}

#[tokio::test]
async fn sign_ins_failures_and_changes_are_listed_newest_first() {
    let app = spawn_app().await;
    let email = "ada@example.com";
    let (first, _) = app.sign_up(email, PASSWORD).await;
    assert_eq!(
        kinds(&app, &first).await,
        ["sign_in"],
        "the sign-up opened a session"
    );

    let wrong = sign_in_as(&app, email, "not the password", LAPTOP).await;
    assert_eq!(wrong.status, 401);
    let cookie = sign_in_as(&app, email, PASSWORD, LAPTOP)
        .await
        .session_cookie()
        .expect("signed in");
    let changed = app
        .change_password(PASSWORD, "a new long password", &cookie)
        .await;
    assert_eq!(changed.status, 200, "{}", changed.text);
    let revoked = app
        .post("/api/auth/revoke-other-sessions", json!({}), Some(&cookie))
        .await;
    revoked.assert_status_true();

    let listed = app.get("/api/auth/activity", Some(&cookie)).await;
    assert_eq!(listed.header("cache-control").as_deref(), Some("no-store"));
    let all = items(&listed);
    let listed_kinds: Vec<&str> = all.iter().map(|i| i["kind"].as_str().unwrap()).collect();
    assert_eq!(
        listed_kinds,
        [
            "sessions_revoked",
            "password_changed",
            "sign_in",
            "sign_in_failed",
            "sign_in"
        ]
    );
    let latest_sign_in = &all[2];
    assert_eq!(latest_sign_in["userAgent"], LAPTOP);
    assert_eq!(
        latest_sign_in["ip"], "127.0.0.0/24",
        "the address as its /24"
    );
    assert_eq!(
        latest_sign_in.as_object().unwrap().len(),
        4,
        "kind, at, userAgent, ip: {latest_sign_in}"
    );
    let times: Vec<&str> = all.iter().map(|i| i["at"].as_str().unwrap()).collect();
    let mut sorted = times.clone();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(times, sorted, "newest first");

    // Someone else's events are not listed, and nobody's without a session.
    let (other, _) = app.sign_up("bob@example.com", PASSWORD).await;
    assert_eq!(kinds(&app, &other).await, ["sign_in"]);
    assert_eq!(app.get("/api/auth/activity", None).await.status, 401);

    // Older than 90 days: neither listed nor kept past the next event.
    app.sql(
        "UPDATE auth.activity SET at = now() - interval '91 days' WHERE kind = 'sign_in_failed'",
    );
    assert!(
        !kinds(&app, &cookie)
            .await
            .contains(&"sign_in_failed".to_owned())
    );
    app.post("/api/auth/revoke-other-sessions", json!({}), Some(&cookie))
        .await
        .assert_status_true();
    assert_eq!(
        app.count("auth.activity WHERE kind = 'sign_in_failed'"),
        0,
        "trimmed by the next event"
    );
}

/// Anyone who knows an address can make sign-ins to it fail: they cost the same statements
/// whether the account exists (see sign_in.rs), and a full log takes no more of them.
#[tokio::test]
async fn failed_sign_ins_stop_filling_a_full_log() {
    let app = spawn_app().await;
    let (cookie, signed_up) = app.sign_up("max@example.com", PASSWORD).await;
    let id = signed_up.user_id();
    app.sql(&format!(
        "INSERT INTO auth.activity (id, user_id, kind, at)
         SELECT 'f' || n, '{id}', 'sign_in_failed', now() - n * interval '1 second'
         FROM generate_series(1, 999) AS n"
    ));
    for _ in 0..3 {
        assert_eq!(
            sign_in_as(&app, "max@example.com", "wrong", LAPTOP)
                .await
                .status,
            401
        );
    }
    assert_eq!(
        app.count("auth.activity"),
        1000,
        "999 + the sign-up, no more"
    );
    // The next event trims the oldest, and the log goes on.
    app.post("/api/auth/revoke-other-sessions", json!({}), Some(&cookie))
        .await
        .assert_status_true();
    assert_eq!(app.count("auth.activity"), 1000);
    assert_eq!(kinds(&app, &cookie).await[0], "sessions_revoked");
}

#[tokio::test]
async fn a_new_browser_and_network_gets_one_mail_whose_link_ends_every_session() {
    let (app, smtp) = with_mail(&[]).await;
    let email = "grace@example.com";
    let (from_sign_up, _) = app.sign_up(email, PASSWORD).await;
    // An account's first session (its sign-up) warns of nothing; the phone is new after it.
    let again = sign_in_as(&app, email, PASSWORD, PHONE).await;
    assert_eq!(again.status, 200);
    let warned = one_mail(&smtp, 1).await;
    assert!(warned.data.contains("Nuovo accesso"), "{}", warned.data);
    assert!(warned.data.contains("su iOS"), "what was seen is named");
    assert!(
        !warned.data.contains("15E148"),
        "the user agent itself, which anyone can write, is not quoted"
    );
    let not_me = link(&warned, &format!("{BASE_URL}/api/auth/not-me?token="));
    let _ = sign_in_as(&app, email, PASSWORD, PHONE).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(smtp.messages().len(), 1, "a known device is not announced");

    // Opening the link only shows what it will do (mail scanners open links).
    let path = not_me.strip_prefix(BASE_URL).unwrap();
    let page = app.get(path, None).await;
    assert_eq!(page.status, 200);
    assert!(
        page.text.contains("Chiudi tutte le sessioni"),
        "{}",
        page.text
    );
    assert_eq!(
        app.get("/api/auth/get-session", Some(&from_sign_up))
            .await
            .status,
        200
    );

    let token = path.split("token=").nth(1).unwrap().to_owned();
    let confirmed = send(
        app.http
            .post(app.url("/api/auth/not-me/confirm"))
            .header("origin", BASE_URL)
            .form(&[("token", token.as_str())]),
    )
    .await;
    assert_eq!(confirmed.status, 303, "{}", confirmed.text);
    let next = confirmed.header("location").expect("on to a new password");
    assert!(next.starts_with("/reset-password?token="), "{next}");
    let session = app.get("/api/auth/get-session", Some(&from_sign_up)).await;
    assert!(
        session.body.is_null(),
        "every session ended: {}",
        session.text
    );
    assert_eq!(app.count("auth.session"), 0);

    // The reset token it led to sets a new password; the link itself worked once.
    let reset = next.split("token=").nth(1).unwrap();
    app.reset_password(reset, "a brand new password")
        .await
        .assert_status_true();
    let twice = app
        .post("/api/auth/not-me/confirm", json!({ "token": token }), None)
        .await;
    assert_eq!(twice.status_and_code(), (400, Some("INVALID_TOKEN")));
    let page = app.get(path, None).await;
    assert!(page.text.contains("non è più valido"), "{}", page.text);

    let cookie = sign_in_as(&app, email, "a brand new password", PHONE)
        .await
        .session_cookie()
        .expect("signed in");
    let latest = kinds(&app, &cookie).await;
    assert_eq!(
        &latest[..3],
        ["sign_in", "password_changed", "sessions_revoked"],
        "{latest:?}"
    );
}

#[tokio::test]
async fn a_password_checked_on_an_old_session_makes_it_fresh_for_five_minutes() {
    let app = spawn_app().await;
    let (cookie, id) = app.sign_up_stale("lin@example.com", PASSWORD).await;
    let stale = app.delete_user(json!({}), &cookie).await;
    assert_eq!(stale.status_and_code(), (400, Some("SESSION_EXPIRED")));

    // A wrong password proves nothing.
    let wrong = app
        .change_password("not it at all", "another password", &cookie)
        .await;
    assert_eq!(wrong.status, 400);
    let still = app.delete_user(json!({}), &cookie).await;
    assert_eq!(still.status_and_code(), (400, Some("SESSION_EXPIRED")));

    let changed = app
        .change_password(PASSWORD, "another password", &cookie)
        .await;
    assert_eq!(changed.status, 200, "{}", changed.text);
    // Five minutes later the proof no longer counts.
    app.age_sessions(&id, "proven_at", "5 minutes 1 second");
    let late = app.delete_user(json!({}), &cookie).await;
    assert_eq!(late.status_and_code(), (400, Some("SESSION_EXPIRED")));
    app.age_sessions(&id, "proven_at", "4 minutes");
    let deleted = app.delete_user(json!({}), &cookie).await;
    assert_eq!(deleted.status, 200, "{}", deleted.text);
    assert_eq!(
        app.count("auth.activity"),
        0,
        "the activity goes with the account"
    );
}

/// The web app's way back to a fresh session: the password confirmed on the session it has.
#[tokio::test]
async fn confirming_the_password_lets_a_stale_session_export() {
    let app = spawn_app().await;
    let api = crate::helpers::spawn_nutrition(&app).await;
    let export = format!("{}/me/export", api.base);
    let (cookie, signed_up) = app.sign_up("ida@example.com", PASSWORD).await;
    let id = signed_up.user_id();
    app.age_sessions(&id, "created_at", "3 days");
    let stale = crate::helpers::get(&app.http, &export, Some(&cookie)).await;
    assert_eq!(stale.status_and_code(), (403, Some("SESSION_NOT_FRESH")));

    let wrong = app.confirm_password("nope", Some(&cookie)).await;
    assert_eq!(wrong.status_and_code(), (400, Some("INVALID_PASSWORD")));
    assert_eq!(
        crate::helpers::get(&app.http, &export, Some(&cookie))
            .await
            .status,
        403
    );
    assert_eq!(app.confirm_password(PASSWORD, None).await.status, 401);

    app.confirm_password(PASSWORD, Some(&cookie))
        .await
        .assert_status_true();
    let fresh = crate::helpers::get(&app.http, &export, Some(&cookie)).await;
    assert_eq!(fresh.status, 200, "{}", fresh.text);
    assert_eq!(fresh.body["activity"][0]["kind"], "sign_in");
    assert_eq!(kinds(&app, &cookie).await[0], "export");
}
