//! Password reset and address verification links: the token rules (single use, lifetime, bound
//! to one purpose), the redirects, the forms of the pages, and what happens without mail.

use auth::links::{self, Purpose};
use chrono::Utc;
use serde_json::json;

use crate::helpers::{
    Resp, TestApp, get, only_one_succeeds, read, spawn_app, spawn_nutrition, spawn_with,
};

const PASSWORD: &str = "password-123";

/// A token as the mail would carry it, issued by the service's own code.
fn issue(app: &TestApp, purpose: Purpose, user_id: &str) -> String {
    let mut conn = app.db.connect();
    links::issue(&mut conn, purpose, &user_id.to_owned().into(), Utc::now()).expect("issue")
}

async fn user_id(app: &TestApp, cookie: &str) -> String {
    app.get("/api/auth/get-session", Some(cookie))
        .await
        .user_id()
}

/// Signs `email` up and issues a link token for `purpose`: answers the session cookie, the
/// user's id and the token.
async fn signed_up_with_token(
    app: &TestApp,
    email: &str,
    purpose: Purpose,
) -> (String, String, String) {
    let (cookie, _) = app.sign_up(email, PASSWORD).await;
    let id = user_id(app, &cookie).await;
    let token = issue(app, purpose, &id);
    (cookie, id, token)
}

/// Opens the address-verification link with `token`, which leads on to `callback` (encoded).
async fn open_verify_link(app: &TestApp, token: &str, callback: &str) -> Resp {
    let link = format!("/api/auth/verify-email?token={token}&callbackURL={callback}");
    app.get(&link, None).await
}

/// Opens the password-reset link with `token`, which leads on to `callback` (encoded).
async fn open_reset_link(app: &TestApp, token: &str, callback: &str) -> Resp {
    let link = format!("/api/auth/reset-password/{token}?callbackURL={callback}");
    app.get(&link, None).await
}

#[tokio::test]
async fn without_smtp_the_mail_routes_are_503_and_the_pages_hide_the_links() {
    let app = spawn_app().await;
    let (cookie, _) = app.sign_up("mia@example.com", PASSWORD).await;
    let disabled = json!({ "code": "EMAIL_DISABLED", "message": "Sending e-mail isn't enabled on this server" });
    let resp = app.request_password_reset("mia@example.com").await;
    assert_eq!((resp.status, &resp.body), (503, &disabled));
    let resp = app
        .send_verification_email("mia@example.com", Some(&cookie))
        .await;
    assert_eq!((resp.status, &resp.body), (503, &disabled));
    assert_eq!(app.count("auth.verification"), 0);
    let page = app.get("/sign-in", None).await;
    assert!(
        !page.text.contains("/forgot-password"),
        "no reset link without mail"
    );
    let page = app.get("/forgot-password", None).await;
    assert_eq!(page.status, 200);
    assert!(!page.text.contains("<form"), "{}", page.text);
}

#[tokio::test]
async fn the_reset_link_redirects_and_its_token_works_once() {
    let app = spawn_app().await;
    let api = spawn_nutrition(&app).await;
    let me = format!("{}/me", api.base);
    let (cookie, _, token) = signed_up_with_token(&app, "lara@example.com", Purpose::Reset).await;
    assert!(
        app.scalar(&format!("SELECT count(*)::text AS v FROM auth.verification WHERE identifier LIKE '%{token}%' OR value LIKE '%{token}%'"))
            .as_deref()
            == Some("0"),
        "the token is stored only as a hash"
    );

    // The mail's link: a live token goes on to the page with ?token=.
    let resp = open_reset_link(&app, &token, "%2Freset-password").await;
    assert_eq!(resp.status, 302);
    assert_eq!(
        resp.header("location"),
        Some(format!("/reset-password?token={token}"))
    );
    let resp = app
        .get(&format!("/api/auth/reset-password/{token}"), None)
        .await;
    assert_eq!(
        resp.header("location"),
        Some(format!("/reset-password?token={token}")),
        "the default page"
    );
    let resp = open_reset_link(&app, "not-a-token", "%2Freset-password%3Fa%3D1").await;
    assert_eq!(resp.status, 302);
    assert_eq!(
        resp.header("location").as_deref(),
        Some("/reset-password?a=1&error=INVALID_TOKEN")
    );
    let resp = open_reset_link(&app, &token, "https%3A%2F%2Fevil.example.com%2F").await;
    assert_eq!(resp.status_and_code(), (403, Some("INVALID_CALLBACK_URL")));

    // The page shows the form for this token.
    let page = app
        .get(&format!("/reset-password?token={token}"), None)
        .await;
    assert!(page.text.contains(r#"action="/api/auth/reset-password""#));
    assert!(
        page.text
            .contains(&format!(r#"name="token" value="{token}""#))
    );

    let short = app.reset_password(&token, "short").await;
    assert_eq!(short.status_and_code(), (400, Some("PASSWORD_TOO_SHORT")));
    let resp = app.reset_password(&token, "brand-new-pass").await;
    resp.assert_status_true();
    assert_eq!(
        get(&app.http, &me, Some(&cookie)).await.status,
        401,
        "every session ended"
    );
    assert_eq!(app.count("auth.session"), 0);
    let signed_in = app.sign_in("lara@example.com", "brand-new-pass").await;
    assert_eq!(signed_in.status, 200);

    // Single use.
    let again = app.reset_password(&token, "another-pass-1").await;
    assert_eq!(again.status, 400);
    assert_eq!(
        again.body,
        json!({ "code": "INVALID_TOKEN", "message": "Invalid token" })
    );
    let link = open_reset_link(&app, &token, "%2Freset-password").await;
    assert_eq!(
        link.header("location").as_deref(),
        Some("/reset-password?error=INVALID_TOKEN")
    );
    for body in [
        json!({ "newPassword": "another-pass-1" }),
        json!({ "newPassword": "another-pass-1", "token": "" }),
    ] {
        let resp = app.post("/api/auth/reset-password", body, None).await;
        assert_eq!(resp.body["code"], "INVALID_TOKEN");
    }
}

#[tokio::test]
async fn reset_tokens_expire_after_an_hour_and_serve_one_purpose() {
    let app = spawn_app().await;
    let (_, uid, old) = signed_up_with_token(&app, "olga@example.com", Purpose::Reset).await;
    app.sql("UPDATE auth.verification SET expires_at = now() - interval '1 second'");
    let resp = app.reset_password(&old, "brand-new-pass").await;
    assert_eq!(resp.status_and_code(), (400, Some("INVALID_TOKEN")));
    let lifetime = {
        let _ = issue(&app, Purpose::Reset, &uid);
        app.scalar("SELECT round(extract(epoch FROM max(expires_at) - now()))::text AS v FROM auth.verification")
    };
    assert_eq!(lifetime.as_deref(), Some("3600"));
    // A verification token does not reset a password, nor the other way round.
    let verify = issue(&app, Purpose::Verify, &uid);
    let resp = app.reset_password(&verify, "brand-new-pass").await;
    assert_eq!(resp.body["code"], "INVALID_TOKEN");
    let reset = issue(&app, Purpose::Reset, &uid);
    let resp = open_verify_link(&app, &reset, "%2F").await;
    assert_eq!(
        resp.header("location").as_deref(),
        Some("/?error=INVALID_TOKEN")
    );
}

#[tokio::test]
async fn the_reset_page_posts_a_form_and_lands_on_sign_in() {
    let app = spawn_app().await;
    let (_, _, token) = signed_up_with_token(&app, "pia@example.com", Purpose::Reset).await;
    let form = |pw: &str, token: &str| {
        app.http
            .post(app.url("/api/auth/reset-password"))
            .header("origin", crate::helpers::BASE_URL)
            .form(&[("newPassword", pw), ("token", token)])
    };
    let resp = read(form("short", &token).send().await.expect("POST")).await;
    assert_eq!(resp.status, 303);
    assert_eq!(
        resp.header("location"),
        Some(format!(
            "/reset-password?error=PASSWORD_TOO_SHORT&token={token}"
        ))
    );
    let page = app
        .get(&resp.header("location").expect("location"), None)
        .await;
    assert!(page.text.contains("almeno 8 caratteri"));
    let resp = read(form("brand-new-pass", &token).send().await.expect("POST")).await;
    assert_eq!(
        (resp.status, resp.header("location").as_deref()),
        (303, Some("/sign-in?reset=1"))
    );
    let page = app.get("/sign-in?reset=1", None).await;
    assert!(page.text.contains("Password aggiornata"));
    let resp = read(form("brand-new-pass", &token).send().await.expect("POST")).await;
    let location = resp.header("location").expect("location");
    assert!(
        location.starts_with("/reset-password?error=INVALID_TOKEN"),
        "{location}"
    );
    let page = app.get(&location, None).await;
    assert!(page.text.contains(r#"href="/forgot-password""#));
    assert!(!page.text.contains("<form"));
    // The page without any token.
    let page = app.get("/reset-password", None).await;
    assert!(page.text.contains("non è valido"));
}

#[tokio::test]
async fn verify_email_marks_the_address_once() {
    let app = spawn_app().await;
    let (cookie, uid, token) =
        signed_up_with_token(&app, "vera@example.com", Purpose::Verify).await;
    let resp = open_verify_link(&app, &token, "%2Fplan").await;
    assert_eq!(
        (resp.status, resp.header("location").as_deref()),
        (302, Some("/plan"))
    );
    let user = app.get("/api/auth/get-session", Some(&cookie)).await.body["user"].clone();
    assert_eq!(user["emailVerified"], true);
    let again = open_verify_link(&app, &token, "%2Fplan").await;
    assert_eq!(
        again.header("location").as_deref(),
        Some("/plan?error=INVALID_TOKEN")
    );
    let without = app
        .get(&format!("/api/auth/verify-email?token={token}"), None)
        .await;
    assert_eq!(
        (without.status, &without.body),
        (
            401,
            &json!({ "code": "INVALID_TOKEN", "message": "Invalid token" })
        )
    );
    let token = issue(&app, Purpose::Verify, &uid);
    let plain = app
        .get(&format!("/api/auth/verify-email?token={token}"), None)
        .await;
    assert_eq!(
        (plain.status, &plain.body),
        (200, &json!({ "status": true, "user": null }))
    );
    let evil = open_verify_link(&app, "x", "https%3A%2F%2Fevil.example.com").await;
    assert_eq!(evil.status, 403);
}

#[tokio::test]
async fn required_verification_refuses_unverified_sign_in() {
    let app = spawn_with(&[("AUTH_REQUIRE_EMAIL_VERIFICATION".into(), "true".into())]).await;
    let resp = app.try_sign_up("Ida", "ida@example.com", PASSWORD).await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    assert!(
        resp.body["token"].is_null(),
        "no session before the address is confirmed"
    );
    assert!(resp.session_set_cookie().is_none());
    assert_eq!(app.count("auth.session"), 0);
    let sign_in = json!({ "email": "ida@example.com", "password": PASSWORD });
    let resp = app
        .post("/api/auth/sign-in/email", sign_in.clone(), None)
        .await;
    assert_eq!(resp.status, 403);
    assert_eq!(
        resp.body,
        json!({ "code": "EMAIL_NOT_VERIFIED", "message": "Email not verified" })
    );
    assert!(resp.session_set_cookie().is_none());
    // A wrong password is still the usual 401: the rule says nothing to a guesser.
    let wrong = app.sign_in("ida@example.com", "not-it-at-all").await;
    assert_eq!(wrong.status, 401);

    let uid = app
        .scalar("SELECT id AS v FROM auth.\"user\"")
        .expect("user");
    let token = issue(&app, Purpose::Verify, &uid);
    let resp = open_verify_link(&app, &token, "%2Fsign-in%3Fverified%3D1").await;
    assert_eq!(
        resp.header("location").as_deref(),
        Some("/sign-in?verified=1")
    );
    let resp = app.post("/api/auth/sign-in/email", sign_in, None).await;
    assert_eq!(resp.status, 200, "{}", resp.text);
}

/// Parallel posts of one reset token cost one password hash, not one each: the token is taken
/// before the hash, so the hashing workers cannot be filled with copies of one request (which
/// would answer everyone else's sign-in 503).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_resets_with_one_token_cost_one_hash() {
    let app = spawn_with(&[("AUTH_HASH_CONCURRENCY".into(), "1".into())]).await;
    let (_, _, token) =
        signed_up_with_token(&app, "parallel-reset@example.com", Purpose::Reset).await;
    let body = json!({ "newPassword": "brand-new-pass-1", "token": token });
    let posts = (0..60).map(|_| app.post("/api/auth/reset-password", body.clone(), None));
    let (answers, statuses) = only_one_succeeds(posts).await;
    assert!(
        answers
            .iter()
            .filter(|r| r.status != 200)
            .all(|r| r.status == 400 && r.body["code"] == "INVALID_TOKEN"),
        "{statuses:?}"
    );
    let signed_in = app
        .sign_in("parallel-reset@example.com", "brand-new-pass-1")
        .await;
    assert_eq!(signed_in.status, 200, "{}", signed_in.text);
}
