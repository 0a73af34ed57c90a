//! `POST /api/auth/sign-up/email`.

use serde_json::json;

use crate::helpers::{COOKIE, spawn_app};

#[tokio::test]
async fn signs_up_and_in_at_once() {
    let app = spawn_app().await;
    let resp = app
        .try_sign_up(" Maria Rossi ", "  Maria.Rossi@Example.COM ", "s3cret-pass")
        .await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    let user = &resp.body["user"];
    for field in [
        "id",
        "name",
        "email",
        "emailVerified",
        "image",
        "createdAt",
        "updatedAt",
    ] {
        assert!(user.get(field).is_some(), "user.{field} missing: {user}");
    }
    assert_eq!(
        user["email"], "maria.rossi@example.com",
        "e-mails are stored lower-cased"
    );
    assert_eq!(user["name"], "Maria Rossi");
    assert_eq!(user["emailVerified"], false);
    assert!(user["image"].is_null());
    let created = user["createdAt"].as_str().expect("string");
    assert!(
        created.ends_with('Z') && chrono::DateTime::parse_from_rfc3339(created).is_ok(),
        "{created}"
    );

    let token = resp.body["token"].as_str().expect("token");
    assert_eq!(token.len(), 32);
    assert!(token.chars().all(|c| c.is_ascii_alphanumeric()));

    // The cookie: name, signed value, attributes.
    let set = resp.session_set_cookie().expect("cookie set");
    let (pair, attrs) = set.split_once(';').expect("attributes");
    let value = pair
        .strip_prefix(&format!("{COOKIE}="))
        .expect("cookie name");
    let decoded = value
        .replace("%2B", "+")
        .replace("%2F", "/")
        .replace("%3D", "=");
    let (cookie_token, signature) = decoded.split_once('.').expect("token.signature");
    assert_eq!(cookie_token, token);
    assert_eq!(signature.len(), 44, "base64 of a 32-byte HMAC");
    for attr in ["HttpOnly", "SameSite=Lax", "Path=/", "Max-Age=604800"] {
        assert!(attrs.contains(attr), "{attr} missing in {set}");
    }
    assert!(!attrs.contains("Secure"), "plain http base URL");

    // Stored: argon2id PHC hash, session with the same token.
    let hash = app
        .scalar("SELECT password AS v FROM auth.account WHERE provider_id = 'credential'")
        .expect("credential account");
    assert!(
        hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
        "{hash}"
    );
    assert!(!hash.contains("s3cret-pass"));
    let stored_token = app
        .scalar("SELECT token AS v FROM auth.session")
        .expect("session row");
    assert_eq!(stored_token, token);

    // Signed in at once.
    let session = app
        .get(
            "/api/auth/get-session",
            Some(&resp.session_cookie().expect("pair")),
        )
        .await;
    assert_eq!(session.body["user"]["email"], "maria.rossi@example.com");
}

#[tokio::test]
async fn password_and_email_rules_write_nothing() {
    let app = spawn_app().await;
    let cases = [
        (
            json!({ "name": "A", "email": "a@example.com", "password": "1234567" }),
            "PASSWORD_TOO_SHORT",
        ),
        (
            json!({ "name": "A", "email": "a@example.com", "password": "x".repeat(129) }),
            "PASSWORD_TOO_LONG",
        ),
        (
            json!({ "name": "A", "email": "not-an-email", "password": "12345678" }),
            "INVALID_EMAIL",
        ),
        (
            json!({ "name": "A", "email": "a@example", "password": "12345678" }),
            "INVALID_EMAIL",
        ),
    ];
    for (body, code) in cases {
        let resp = app.post("/api/auth/sign-up/email", body, None).await;
        assert_eq!(resp.status_and_code(), (400, Some(code)), "{}", resp.text);
        assert!(resp.body["message"].is_string());
        assert!(resp.session_set_cookie().is_none());
    }
    assert_eq!(app.count("auth.\"user\""), 0);
    assert_eq!(app.count("auth.session"), 0);
    // The boundaries themselves are accepted.
    app.sign_up("eight@example.com", "12345678").await;
    app.sign_up("long@example.com", &"y".repeat(128)).await;
}

#[tokio::test]
async fn an_address_can_only_be_used_once() {
    let app = spawn_app().await;
    app.sign_up("taken@example.com", "password-1").await;
    let resp = app
        .try_sign_up("B", "TAKEN@example.com", "password-2")
        .await;
    assert_eq!(resp.status, 422);
    assert_eq!(resp.body["code"], "USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL");
    assert_eq!(app.count("auth.\"user\""), 1);
    assert_eq!(app.count("auth.account"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_sign_ups_with_one_address_create_one_user() {
    let app = spawn_app().await;
    let attempts = (0..8).map(|i| {
        app.post(
            "/api/auth/sign-up/email",
            json!({ "name": format!("U{i}"), "email": "race@example.com", "password": "password-123" }),
            None,
        )
    });
    let results = futures_util::future::join_all(attempts).await;
    let ok = results.iter().filter(|r| r.status == 200).count();
    let taken = results.iter().filter(|r| r.status == 422).count();
    assert_eq!(
        (ok, taken),
        (1, 7),
        "{:?}",
        results.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    assert_eq!(app.count("auth.\"user\""), 1);
    assert_eq!(app.count("auth.account"), 1);
    assert_eq!(app.count("auth.session"), 1);
}
