//! Sessions: get-session, tampering, expiry, the rolling refresh and sign-out, seen from auth and
//! from nutrition-api alike.

use serde_json::json;

use crate::helpers::{COOKIE, SESSION_FIELDS, TestApp, get, post_json, spawn_app, spawn_nutrition};

/// Whether the session now expires a full week from now, as a refresh sets it.
fn extended_to_a_week(app: &TestApp) -> bool {
    app.scalar(
        "SELECT (expires_at > now() + interval '6 days 23 hours')::text AS v FROM auth.session",
    )
    .as_deref()
        == Some("true")
}

#[tokio::test]
async fn get_session_returns_the_session_or_null() {
    let app = spawn_app().await;
    let (cookie, signed_up) = app.sign_up("eva@example.com", "password-123").await;
    let resp = app.get("/api/auth/get-session", Some(&cookie)).await;
    assert_eq!(resp.status, 200);
    let session = &resp.body["session"];
    for field in SESSION_FIELDS {
        assert!(
            session.get(field).is_some(),
            "session.{field} missing: {session}"
        );
    }
    assert!(
        session.get("token").is_none(),
        "the bearer token is never echoed in JSON"
    );
    assert_eq!(session["userId"], signed_up.body["user"]["id"]);
    assert_eq!(session["ipAddress"], "127.0.0.1");
    assert_eq!(resp.body["user"]["email"], "eva@example.com");
    assert!(
        resp.session_set_cookie().is_none(),
        "fresh sessions are not refreshed"
    );

    let none = app.get("/api/auth/get-session", None).await;
    assert_eq!((none.status, none.text.as_str()), (200, "null"));
}

#[tokio::test]
async fn tampered_tokens_and_signatures_are_no_session() {
    let app = spawn_app().await;
    let api = spawn_nutrition(&app).await;
    let (cookie, _) = app.sign_up("finn@example.com", "password-123").await;
    let value = cookie.strip_prefix(&format!("{COOKIE}=")).expect("pair");
    let (token, signature) = value.split_once('.').expect("token.signature");
    let mut other_token: Vec<char> = token.chars().collect();
    other_token[0] = if other_token[0] == 'a' { 'b' } else { 'a' };
    let other_token: String = other_token.into_iter().collect();
    let mut other_sig: Vec<char> = signature.chars().collect();
    other_sig[3] = if other_sig[3] == 'A' { 'B' } else { 'A' };
    let other_sig: String = other_sig.into_iter().collect();
    let forged = [
        format!("{COOKIE}={other_token}.{signature}"),
        format!("{COOKIE}={token}.{other_sig}"),
        format!("{COOKIE}={token}"),
        format!("{COOKIE}={token}.{}", "A".repeat(43) + "%3D"),
        format!("{COOKIE}=garbage"),
    ];
    for cookie in &forged {
        let resp = app.get("/api/auth/get-session", Some(cookie)).await;
        assert_eq!(resp.text, "null", "{cookie}");
        let me = get(&app.http, &format!("{}/me", api.base), Some(cookie)).await;
        assert_eq!(
            me.status_and_code(),
            (401, Some("UNAUTHORIZED")),
            "{cookie}"
        );
    }
    let me = get(&app.http, &format!("{}/me", api.base), Some(&cookie)).await;
    assert_eq!(me.status, 200, "{}", me.text);
}

#[tokio::test]
async fn an_expired_session_is_401_and_deleted() {
    let app = spawn_app().await;
    let api = spawn_nutrition(&app).await;
    let (cookie, _) = app.sign_up("gia@example.com", "password-123").await;
    app.sql("UPDATE auth.session SET expires_at = now() - interval '1 second'");
    let me = get(&app.http, &format!("{}/me", api.base), Some(&cookie)).await;
    assert_eq!(me.status, 401);
    assert_eq!(app.count("auth.session"), 0, "the expired row is gone");
    assert_eq!(
        app.get("/api/auth/get-session", Some(&cookie)).await.text,
        "null"
    );
}

#[tokio::test]
async fn rolling_refresh_after_24_hours_and_not_before() {
    let app = spawn_app().await;
    let api = spawn_nutrition(&app).await;
    let (cookie, _) = app.sign_up("hal@example.com", "password-123").await;

    // 23 hours since the last refresh: nothing moves.
    app.sql(
        "UPDATE auth.session SET updated_at = now() - interval '23 hours',
                                 expires_at = now() + interval '6 days 1 hour'",
    );
    let before = app.scalar("SELECT expires_at::text AS v FROM auth.session");
    for resp in [
        app.get("/api/auth/get-session", Some(&cookie)).await,
        get(&app.http, &format!("{}/me", api.base), Some(&cookie)).await,
    ] {
        assert_eq!(resp.status, 200);
        assert!(
            resp.session_set_cookie().is_none(),
            "no refresh before 24 h"
        );
    }
    assert_eq!(
        app.scalar("SELECT expires_at::text AS v FROM auth.session"),
        before
    );

    // 25 hours: auth's get-session extends and re-sends the cookie.
    app.sql(
        "UPDATE auth.session SET updated_at = now() - interval '25 hours',
                                 expires_at = now() + interval '5 days 23 hours'",
    );
    let resp = app.get("/api/auth/get-session", Some(&cookie)).await;
    let set = resp.session_set_cookie().expect("refreshed cookie");
    assert!(set.contains("Max-Age=604800"));
    assert_eq!(
        set.split(';').next(),
        Some(cookie.as_str()),
        "same token, re-sent"
    );
    assert!(extended_to_a_week(&app));

    // And nutrition-api's guard does the same.
    app.sql(
        "UPDATE auth.session SET updated_at = now() - interval '30 hours',
                                 expires_at = now() + interval '5 days'",
    );
    let me = get(&app.http, &format!("{}/me", api.base), Some(&cookie)).await;
    assert_eq!(me.status, 200);
    assert!(
        me.session_set_cookie().is_some(),
        "the API re-sends the refreshed cookie"
    );
    assert!(extended_to_a_week(&app));
}

#[tokio::test]
async fn sign_out_ends_the_session_everywhere() {
    let app = spawn_app().await;
    let api = spawn_nutrition(&app).await;
    let (cookie, _) = app.sign_up("ivo@example.com", "password-123").await;
    assert_eq!(
        get(&app.http, &format!("{}/me", api.base), Some(&cookie))
            .await
            .status,
        200
    );

    let out = app
        .post("/api/auth/sign-out", json!({}), Some(&cookie))
        .await;
    assert_eq!(out.status, 200, "{}", out.text);
    assert_eq!(out.body, json!({ "success": true }));
    let set = out.session_set_cookie().expect("cookie cleared");
    assert!(set.contains("Max-Age=0"), "{set}");
    assert_eq!(app.count("auth.session"), 0);

    let me = get(&app.http, &format!("{}/me", api.base), Some(&cookie)).await;
    assert_eq!(me.status, 401);
    // A browser still holding the ended session's cookie is told to drop it (a shared
    // computer keeps no dead credential), as better-auth's get-session does.
    let dead = app.get("/api/auth/get-session", Some(&cookie)).await;
    assert_eq!(dead.text, "null");
    let cleared = dead
        .session_set_cookie()
        .expect("the dead cookie is cleared");
    assert!(cleared.contains("Max-Age=0"), "{cleared}");
    // Without a cookie there is nothing to clear.
    let none = app.get("/api/auth/get-session", None).await;
    assert_eq!(
        (none.text.as_str(), none.session_set_cookie()),
        ("null", None)
    );
    // Signing out again, or without a session, still succeeds.
    let again = post_json(&app.http, &app.url("/api/auth/sign-out"), &json!({}), None).await;
    assert_eq!(again.status, 200);
}

#[tokio::test]
async fn me_returns_user_with_preferences_and_session() {
    let app = spawn_app().await;
    let api = spawn_nutrition(&app).await;
    let (cookie, _) = app.sign_up("lea@example.com", "password-123").await;
    let me = get(&app.http, &format!("{}/me", api.base), Some(&cookie)).await;
    assert_eq!(me.status, 200);
    let user = &me.body["user"];
    assert_eq!(user["email"], "lea@example.com");
    assert!(user["fastingPausedUntil"].is_null());
    assert_eq!(
        user["preferences"],
        json!({
            "fastingProtocol": null,
            "fastingMilestones": false,
            "weightGoalKg": null,
            "heightCm": null,
            "waterGoalMl": 2000,
            "locale": "it",
            "longFastAcknowledged": false
        })
    );
    assert_eq!(me.body["session"]["userId"], user["id"]);

    app.sql(&format!(
        "INSERT INTO nutrition.profile (user_id, fasting_protocol, fasting_milestones, fasting_paused_until)
         VALUES ('{}', '16:8', true, '2026-11-23T05:00:00Z')",
        user["id"].as_str().expect("id")
    ));
    let me = get(&app.http, &format!("{}/me", api.base), Some(&cookie)).await;
    assert_eq!(
        me.body["user"]["fastingPausedUntil"],
        "2026-11-23T05:00:00.000Z"
    );
    assert_eq!(
        (
            &me.body["user"]["preferences"]["fastingProtocol"],
            &me.body["user"]["preferences"]["fastingMilestones"]
        ),
        (&json!("16:8"), &json!(true))
    );
    assert_eq!(
        get(&app.http, &format!("{}/me", api.base), None)
            .await
            .status,
        401
    );
}

/// Sessions, accounts and credentials never stay in a browser's or a proxy's cache.
#[tokio::test]
async fn answers_with_sessions_or_credentials_are_never_stored_by_caches() {
    let app = spawn_app().await;
    let (cookie, signed_up) = app.sign_up("nostore@example.com", "password-123").await;
    assert_eq!(
        signed_up.header("cache-control").as_deref(),
        Some("no-store"),
        "sign-up"
    );
    let signed_in = app.sign_in("nostore@example.com", "password-123").await;
    assert_eq!(signed_in.status, 200, "{}", signed_in.text);
    assert_eq!(
        signed_in.header("cache-control").as_deref(),
        Some("no-store"),
        "sign-in"
    );
    for path in [
        "/api/auth/get-session",
        "/api/auth/list-sessions",
        "/api/auth/list-accounts",
    ] {
        let r = app.get(path, Some(&cookie)).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text);
        assert_eq!(
            r.header("cache-control").as_deref(),
            Some("no-store"),
            "{path}"
        );
    }
    let refused = app.sign_in("nostore@example.com", "wrong-password").await;
    assert_eq!(
        (refused.status, refused.header("cache-control").as_deref()),
        (401, Some("no-store"))
    );
}

/// Sessions per person are bounded: a new sign-in beyond the bound ends the least recently used
/// session, so that listing and revoking (which read them all) stay small whatever a client does.
#[tokio::test]
async fn sessions_per_person_are_bounded_and_the_oldest_goes_first() {
    let app = spawn_app().await;
    let (cookie, signed_up) = app
        .sign_up("many-sessions@example.com", "password-123")
        .await;
    let user_id = signed_up.user_id();
    // 60 older sessions, as 60 sign-ins from other devices over the past days would leave.
    app.sql(&format!(
        "INSERT INTO auth.session (id, token, user_id, expires_at, created_at, updated_at)
         SELECT 'old-' || n, 'old-token-' || n, '{user_id}', now() + interval '5 days',
                now() - interval '2 days' - n * interval '1 minute',
                now() - interval '2 days' - n * interval '1 minute'
         FROM generate_series(1, 60) AS n"
    ));
    let signed_in = app
        .sign_in("many-sessions@example.com", "password-123")
        .await;
    assert_eq!(signed_in.status, 200, "{}", signed_in.text);
    let count: i64 = app
        .scalar(&format!(
            "SELECT count(*)::text AS v FROM auth.session WHERE user_id = '{user_id}'"
        ))
        .and_then(|n| n.parse().ok())
        .expect("count");
    assert_eq!(count, 50);
    // The oldest went; the two current ones (sign-up and sign-in) stay.
    assert_eq!(
        app.scalar("SELECT count(*)::text AS v FROM auth.session WHERE id = 'old-60'"),
        Some("0".into())
    );
    let listed = app.get("/api/auth/list-sessions", Some(&cookie)).await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    assert_eq!(listed.body.as_array().map(Vec::len), Some(50));
}
