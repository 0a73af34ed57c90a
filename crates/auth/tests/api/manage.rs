//! Section 5 of the contract without e-mail: sessions, profile, password and linked accounts,
//! each success and error with better-auth's bodies.

use serde_json::{Value, json};

use crate::helpers::{
    Resp, SESSION_FIELDS, TestApp, get, post_json, send, spawn_app, spawn_nutrition,
};

const PASSWORD: &str = "password-123";

/// The routes of this section, as the signed-in user of `cookie`.
async fn change_password(app: &TestApp, cookie: &str, body: Value) -> Resp {
    app.post("/api/auth/change-password", body, Some(cookie))
        .await
}

async fn update_user(app: &TestApp, cookie: &str, body: Value) -> Resp {
    app.post("/api/auth/update-user", body, Some(cookie)).await
}

async fn unlink(app: &TestApp, cookie: &str, body: Value) -> Resp {
    app.post("/api/auth/unlink-account", body, Some(cookie))
        .await
}

async fn revoke_session(app: &TestApp, cookie: &str, body: Value) -> Resp {
    app.post("/api/auth/revoke-session", body, Some(cookie))
        .await
}

fn error(code: &str, message: &str) -> Value {
    json!({ "code": code, "message": message })
}

#[tokio::test]
async fn every_route_needs_a_session() {
    let app = spawn_app().await;
    for path in ["/api/auth/list-sessions", "/api/auth/list-accounts"] {
        let resp = app.get(path, None).await;
        assert_eq!(resp.status, 401, "{path}");
        assert_eq!(resp.body, error("UNAUTHORIZED", "Unauthorized"), "{path}");
    }
    for (path, body) in [
        ("/api/auth/revoke-session", json!({ "token": "x" })),
        ("/api/auth/revoke-sessions", json!({})),
        ("/api/auth/revoke-other-sessions", json!({})),
        ("/api/auth/update-user", json!({ "name": "x" })),
        (
            "/api/auth/change-password",
            json!({ "newPassword": "new-password-1", "currentPassword": PASSWORD }),
        ),
        (
            "/api/auth/unlink-account",
            json!({ "providerId": "google" }),
        ),
    ] {
        let resp = app.post(path, body, None).await;
        assert_eq!(resp.status, 401, "{path}: {}", resp.text);
        assert_eq!(resp.body["code"], "UNAUTHORIZED", "{path}");
    }
}

#[tokio::test]
async fn list_sessions_gives_handles_never_tokens() {
    let app = spawn_app().await;
    let (first, _) = app.sign_up("sara@example.com", PASSWORD).await;
    let second = app.sign_in_cookie("sara@example.com", PASSWORD).await;
    // Another user's session is not listed.
    app.sign_up("other@example.com", PASSWORD).await;

    let resp = app.get("/api/auth/list-sessions", Some(&second)).await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    let list = resp.body.as_array().expect("array").clone();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["current"], true, "newest first, and it is this one");
    assert_eq!(list[1]["current"], false);
    for s in &list {
        for field in SESSION_FIELDS.into_iter().chain(["token"]) {
            assert!(s.get(field).is_some(), "{field} missing: {s}");
        }
        let handle = s["token"].as_str().expect("handle");
        assert!(!first.contains(handle) && !second.contains(handle));
        assert_eq!(
            app.scalar(&format!(
                "SELECT count(*)::text AS v FROM auth.session WHERE token = '{handle}'"
            ))
            .as_deref(),
            Some("0"),
            "a handle is no session token"
        );
    }
    assert!(list[0]["createdAt"].as_str() >= list[1]["createdAt"].as_str());
}

#[tokio::test]
async fn revoke_session_ends_it_in_nutrition_api_at_once() {
    let app = spawn_app().await;
    let api = spawn_nutrition(&app).await;
    let (laptop, _) = app.sign_up("marco@example.com", PASSWORD).await;
    let phone = app.sign_in_cookie("marco@example.com", PASSWORD).await;
    let me = format!("{}/me", api.base);
    assert_eq!(get(&app.http, &me, Some(&phone)).await.status, 200);

    let list = app.get("/api/auth/list-sessions", Some(&laptop)).await;
    let phone_handle = list.body.as_array().expect("array")[0]["token"]
        .as_str()
        .expect("handle")
        .to_owned();
    // The cookie token itself is not accepted as a handle, nor is a made-up one.
    let phone_token = phone
        .split('=')
        .nth(1)
        .and_then(|v| v.split('.').next())
        .expect("token");
    for wrong in [phone_token, "nothing"] {
        let resp = revoke_session(&app, &laptop, json!({ "token": wrong })).await;
        assert_eq!(resp.body, json!({ "status": true }));
    }
    assert_eq!(app.count("auth.session"), 2);

    let resp = revoke_session(&app, &laptop, json!({ "token": phone_handle })).await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    assert_eq!(resp.body, json!({ "status": true }));
    assert_eq!(get(&app.http, &me, Some(&phone)).await.status, 401);
    assert_eq!(get(&app.http, &me, Some(&laptop)).await.status, 200);

    // A handle of someone else's session changes nothing.
    let (stranger, _) = app.sign_up("stranger@example.com", PASSWORD).await;
    let laptop_handle = app.get("/api/auth/list-sessions", Some(&laptop)).await.body[0]["token"]
        .as_str()
        .expect("handle")
        .to_owned();
    let resp = revoke_session(&app, &stranger, json!({ "token": laptop_handle })).await;
    assert_eq!(resp.body, json!({ "status": true }));
    assert_eq!(get(&app.http, &me, Some(&laptop)).await.status, 200);

    // A missing or mistyped token is the contract's validation error.
    let resp = revoke_session(&app, &laptop, json!({})).await;
    assert_eq!(resp.status_and_code(), (400, Some("VALIDATION_ERROR")));
}

#[tokio::test]
async fn revoke_other_sessions_then_revoke_sessions() {
    let app = spawn_app().await;
    let api = spawn_nutrition(&app).await;
    let me = format!("{}/me", api.base);
    let (a, _) = app.sign_up("lia@example.com", PASSWORD).await;
    let b = app.sign_in_cookie("lia@example.com", PASSWORD).await;
    let c = app.sign_in_cookie("lia@example.com", PASSWORD).await;
    let (other, _) = app.sign_up("nico@example.com", PASSWORD).await;

    let resp = app
        .post("/api/auth/revoke-other-sessions", json!({}), Some(&b))
        .await;
    resp.assert_status_true();
    assert_eq!(get(&app.http, &me, Some(&a)).await.status, 401);
    assert_eq!(get(&app.http, &me, Some(&c)).await.status, 401);
    assert_eq!(get(&app.http, &me, Some(&b)).await.status, 200);

    let resp = app
        .post("/api/auth/revoke-sessions", json!({}), Some(&b))
        .await;
    resp.assert_status_true();
    assert!(
        resp.session_set_cookie()
            .is_some_and(|c| c.contains("Max-Age=0"))
    );
    assert_eq!(get(&app.http, &me, Some(&b)).await.status, 401);
    assert_eq!(
        get(&app.http, &me, Some(&other)).await.status,
        200,
        "other users untouched"
    );
}

#[tokio::test]
async fn update_user_changes_name_and_image_but_never_the_email() {
    let app = spawn_app().await;
    let (cookie, _) = app.sign_up("gio@example.com", PASSWORD).await;
    let resp = update_user(
        &app,
        &cookie,
        json!({ "name": "  Giovanni ", "image": "https://img.example.com/g.png" }),
    )
    .await;
    resp.assert_status_true();
    let user = app.get("/api/auth/get-session", Some(&cookie)).await.body["user"].clone();
    assert_eq!(user["name"], "Giovanni");
    assert_eq!(user["image"], "https://img.example.com/g.png");

    let resp = update_user(&app, &cookie, json!({ "image": null })).await;
    assert_eq!(resp.status, 200);
    let user = app.get("/api/auth/get-session", Some(&cookie)).await.body["user"].clone();
    assert!(user["image"].is_null());
    assert_eq!(user["name"], "Giovanni");

    let resp = update_user(
        &app,
        &cookie,
        json!({ "name": "X", "email": "thief@example.com" }),
    )
    .await;
    assert_eq!(resp.status, 400);
    assert_eq!(
        resp.body,
        error("EMAIL_CAN_NOT_BE_UPDATED", "Email can not be updated")
    );
    let resp = update_user(&app, &cookie, json!({})).await;
    assert_eq!(resp.status, 400);
    assert_eq!(
        resp.body,
        error("NO_FIELDS_TO_UPDATE", "No fields to update")
    );
    for bad in [
        json!({ "image": "javascript:alert(1)" }),
        json!({ "name": "a\u{0}b" }),
        json!({ "role": "admin" }),
    ] {
        let resp = update_user(&app, &cookie, bad.clone()).await;
        assert_eq!(
            resp.status_and_code(),
            (400, Some("VALIDATION_ERROR")),
            "{bad}"
        );
    }
    let user = app.get("/api/auth/get-session", Some(&cookie)).await.body["user"].clone();
    assert_eq!(
        (user["email"].as_str(), user["name"].as_str()),
        (Some("gio@example.com"), Some("Giovanni"))
    );
}

#[tokio::test]
async fn change_password_checks_and_optionally_revokes_other_sessions() {
    let app = spawn_app().await;
    let api = spawn_nutrition(&app).await;
    let me = format!("{}/me", api.base);
    let (cookie, _) = app.sign_up("ada@example.com", PASSWORD).await;
    let other = app.sign_in_cookie("ada@example.com", PASSWORD).await;
    let change = |new: &str, current: &str, revoke: Option<bool>| {
        let mut body = json!({ "newPassword": new, "currentPassword": current });
        if let Some(r) = revoke {
            body["revokeOtherSessions"] = r.into();
        }
        body
    };

    let resp = change_password(&app, &cookie, change("short", PASSWORD, None)).await;
    assert_eq!(
        (resp.status, &resp.body),
        (400, &error("PASSWORD_TOO_SHORT", "Password too short"))
    );
    let resp = change_password(&app, &cookie, change(&"x".repeat(129), PASSWORD, None)).await;
    assert_eq!(
        (resp.status, &resp.body),
        (400, &error("PASSWORD_TOO_LONG", "Password too long"))
    );
    let resp = change_password(
        &app,
        &cookie,
        change("new-password-1", "wrong-password", None),
    )
    .await;
    assert_eq!(
        (resp.status, &resp.body),
        (400, &error("INVALID_PASSWORD", "Invalid password"))
    );

    let resp = change_password(&app, &cookie, change("new-password-1", PASSWORD, None)).await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    assert!(resp.body["token"].is_null());
    assert_eq!(resp.body["user"]["email"], "ada@example.com");
    assert_eq!(
        get(&app.http, &me, Some(&other)).await.status,
        200,
        "sessions kept"
    );
    app.sign_in_cookie("ada@example.com", "new-password-1")
        .await;
    let old = app.sign_in("ada@example.com", PASSWORD).await;
    assert_eq!(old.status, 401);

    let resp = change_password(
        &app,
        &cookie,
        change("new-password-2", "new-password-1", Some(true)),
    )
    .await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    let token = resp.body["token"]
        .as_str()
        .expect("a new session token")
        .to_owned();
    let fresh = resp.session_cookie().expect("the new session's cookie");
    assert!(fresh.contains(&token));
    assert_eq!(app.count("auth.session"), 1, "every other session ended");
    assert_eq!(get(&app.http, &me, Some(&cookie)).await.status, 401);
    assert_eq!(get(&app.http, &me, Some(&other)).await.status, 401);
    assert_eq!(get(&app.http, &me, Some(&fresh)).await.status, 200);
}

#[tokio::test]
async fn change_password_is_rate_limited() {
    let app = crate::helpers::spawn_with(&[
        ("AUTH_RATE_LIMIT_MAX".into(), "3".into()),
        ("AUTH_RATE_LIMIT_WINDOW_SECS".into(), "60".into()),
    ])
    .await;
    let (cookie, _) = app.sign_up("rita@example.com", PASSWORD).await;
    for _ in 0..3 {
        let resp = change_password(
            &app,
            &cookie,
            json!({ "newPassword": "new-password-1", "currentPassword": "wrong-password" }),
        )
        .await;
        assert_eq!(resp.status, 400);
    }
    let resp = change_password(
        &app,
        &cookie,
        json!({ "newPassword": "new-password-1", "currentPassword": PASSWORD }),
    )
    .await;
    assert_eq!(resp.status_and_code(), (429, Some("RATE_LIMITED")));
    assert!(resp.header("x-retry-after").is_some() && resp.header("retry-after").is_some());
}

#[tokio::test]
async fn list_and_unlink_accounts() {
    let app = spawn_app().await;
    let (cookie, signed_up) = app.sign_up("ugo@example.com", PASSWORD).await;
    let user_id = signed_up.user_id();

    let resp = app.get("/api/auth/list-accounts", Some(&cookie)).await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    let list = resp.body.as_array().expect("array").clone();
    assert_eq!(list.len(), 1);
    let credential = &list[0];
    assert_eq!(credential["providerId"], "credential");
    assert_eq!(credential["accountId"], user_id.as_str());
    assert_eq!(credential["userId"], user_id.as_str());
    assert_eq!(credential["scopes"], json!([]));
    assert!(credential["createdAt"].is_string() && credential["updatedAt"].is_string());
    for secret in ["password", "accessToken", "refreshToken", "idToken"] {
        assert!(credential.get(secret).is_none(), "{secret} exposed");
    }

    let resp = unlink(&app, &cookie, json!({ "providerId": "credential" })).await;
    assert_eq!(resp.status, 400);
    assert_eq!(
        resp.body,
        error(
            "FAILED_TO_UNLINK_LAST_ACCOUNT",
            "You can't unlink your last account"
        )
    );

    app.sql(&format!(
        "INSERT INTO auth.account (id, account_id, provider_id, user_id, scope, access_token)
         VALUES ('acc-g', 'google-sub-9', 'google', '{user_id}', 'openid,email profile', 'secret-at')"
    ));
    let list = app.get("/api/auth/list-accounts", Some(&cookie)).await.body;
    let google = list
        .as_array()
        .expect("array")
        .iter()
        .find(|a| a["providerId"] == "google")
        .expect("google")
        .clone();
    assert_eq!(google["scopes"], json!(["openid", "email", "profile"]));
    assert!(!list.to_string().contains("secret-at"));

    let google_account = |id: &str| json!({ "providerId": "google", "accountId": id });
    let resp = unlink(&app, &cookie, google_account("someone-else")).await;
    assert_eq!(
        (resp.status, &resp.body),
        (400, &error("ACCOUNT_NOT_FOUND", "Account not found"))
    );
    let resp = unlink(&app, &cookie, google_account("google-sub-9")).await;
    resp.assert_status_true();
    assert_eq!(app.count("auth.account"), 1);

    // better-auth 1.7's client sends only the id from list-accounts.
    app.sql(&format!(
        "INSERT INTO auth.account (id, account_id, provider_id, user_id) VALUES ('acc-g2', 'google-sub-9', 'google', '{user_id}')"
    ));
    let resp = unlink(&app, &cookie, json!({ "accountId": "acc-g2" })).await;
    assert_eq!(resp.body, json!({ "status": true }));
    // Unlinking the password while Google remains is allowed; the last one never is.
    app.sql(&format!(
        "INSERT INTO auth.account (id, account_id, provider_id, user_id) VALUES ('acc-g3', 'google-sub-9', 'google', '{user_id}')"
    ));
    let resp = unlink(&app, &cookie, json!({ "providerId": "credential" })).await;
    assert_eq!(resp.body, json!({ "status": true }));
    let resp = unlink(&app, &cookie, json!({ "providerId": "google" })).await;
    assert_eq!(resp.body["code"], "FAILED_TO_UNLINK_LAST_ACCOUNT");
    assert_eq!(app.count("auth.account"), 1);
}

#[tokio::test]
async fn a_nul_in_a_form_field_is_a_400_not_a_database_error() {
    let app = spawn_app().await;
    let (cookie, _) = app.sign_up("nul@example.com", PASSWORD).await;
    let resp = send(
        app.http
            .post(app.url("/api/auth/update-user"))
            .header("cookie", &cookie)
            .header("origin", crate::helpers::BASE_URL)
            .header("content-type", "application/x-www-form-urlencoded")
            .body("image=https%3A%2F%2Fimg.example.com%2Fa%00b"),
    )
    .await;
    resp.assert_refused(400, "VALIDATION_ERROR");
}

/// A browser's push subscription belongs to the session that registered it: once that session
/// ends (closed from another device, signed out, replaced), the browser gets no more of the
/// person's reminders, which may name their health data, even if someone else uses it next.
#[tokio::test]
async fn ending_a_session_ends_the_push_subscription_it_registered() {
    let app = crate::helpers::spawn_app().await;
    let api = crate::helpers::spawn_nutrition_with(
        &app,
        &[("PUSH_ALLOW_HTTP_ENDPOINTS".into(), "true".into())],
    )
    .await;
    let push = testkit::push_service::FakePushService::start().await;
    let (phone, _) = app.sign_up("devices@example.com", "password-123").await;
    let laptop = app
        .sign_in("devices@example.com", "password-123")
        .await
        .session_cookie()
        .expect("laptop session");
    for cookie in [&phone, &laptop] {
        let sub = push.subscribe();
        let device = json!({ "platform": "web", "endpoint": sub.endpoint, "keys": { "p256dh": sub.p256dh, "auth": sub.auth } });
        let tokens = format!("{}/me/device-tokens", api.base);
        let r = post_json(&app.http, &tokens, &device, Some(cookie)).await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
    assert_eq!(app.count("nutrition.device_token"), 2);
    // The laptop closes the phone's session.
    let closed = app
        .post("/api/auth/revoke-other-sessions", json!({}), Some(&laptop))
        .await;
    assert_eq!(closed.status, 200, "{}", closed.text);
    assert_eq!(
        app.count("nutrition.device_token"),
        1,
        "the phone's subscription went"
    );
    // Signing out of the laptop ends its subscription too.
    let out = app
        .post("/api/auth/sign-out", json!({}), Some(&laptop))
        .await;
    assert_eq!(out.status, 200, "{}", out.text);
    assert_eq!(app.count("nutrition.device_token"), 0);
}
