//! Google sign-in end to end against the local OAuth provider of the test kit, and its absence
//! when not configured.

use serde_json::json;
use testkit::oauth::{FakeOAuth, Identity};

use crate::helpers::{Resp, TestApp, get, send, spawn_app, spawn_with};

fn identity(sub: &str, email: &str, verified: bool) -> Identity {
    Identity {
        sub: sub.into(),
        email: email.into(),
        email_verified: verified,
        name: "Gianni Google".into(),
        picture: Some("https://example.com/p.png".into()),
    }
}

/// Runs the browser's part: start, visit the provider, come back to the callback.
/// Returns the callback's response.
async fn google_flow(app: &TestApp, callback_url: Option<&str>) -> Resp {
    let mut body = json!({ "provider": "google" });
    if let Some(cb) = callback_url {
        body["callbackURL"] = json!(cb);
    }
    let start = app.post("/api/auth/sign-in/social", body, None).await;
    assert_eq!(start.status, 200, "{}", start.text);
    assert_eq!(start.body["redirect"], true);
    let url = start.body["url"].as_str().expect("url");
    assert!(
        url.contains("code_challenge_method=S256") && url.contains("state="),
        "{url}"
    );
    let state_cookie = state_cookie_of(&start);
    let at_provider = get(&app.http, url, None).await;
    assert_eq!(at_provider.status, 302, "{}", at_provider.text);
    let back = at_provider.header("location").expect("redirect back");
    let back = url::Url::parse(&back).expect("absolute");
    assert_eq!(back.path(), "/api/auth/callback/google");
    let path = format!("{}?{}", back.path(), back.query().unwrap_or_default());
    send(app.http.get(app.url(&path)).header("cookie", state_cookie)).await
}

/// The callback refused to link Google into the account already there: back to sign-in with
/// `ACCOUNT_NOT_LINKED`, no Google account and no session but the sign-up's.
#[track_caller]
fn assert_not_linked(app: &TestApp, done: &Resp) {
    assert_eq!(done.status, 302, "{}", done.text);
    assert_eq!(
        done.header("location").as_deref(),
        Some("/sign-in?error=ACCOUNT_NOT_LINKED")
    );
    assert!(done.session_cookie().is_none());
    assert_eq!(app.count("auth.account"), 1, "no Google account linked");
    assert_eq!(app.count("auth.session"), 1, "only the sign-up's");
}

/// Signs `email` up with a password, then signs in with Google as `google`: asserts that the
/// Google sign-in is refused and links nothing.
async fn refused_as_not_linked(email: &str, google: Identity) -> TestApp {
    let fake = FakeOAuth::start().await;
    let app = spawn_with(&fake.env()).await;
    app.sign_up(email, "squatter-password").await;
    fake.sign_in_as(google);
    let done = google_flow(&app, None).await;
    assert_not_linked(&app, &done);
    app
}

/// `name=value` of the cookie that binds a started Google sign-in to this browser.
fn state_cookie_of(start: &Resp) -> String {
    start
        .set_cookies()
        .into_iter()
        .find(|c| c.starts_with("digiuno.oauth_state="))
        .and_then(|c| c.split(';').next().map(str::to_owned))
        .expect("state cookie")
}

fn session_cookie_of(resp: &Resp) -> String {
    resp.session_cookie()
        .expect("session cookie set by the callback")
}

#[tokio::test]
async fn without_credentials_google_does_not_exist() {
    let app = spawn_app().await;
    let providers = app.get("/api/auth/providers", None).await;
    assert_eq!(providers.body, json!({ "providers": [] }));
    let social = app.sign_in_social("google").await;
    assert_eq!(social.status_and_code(), (404, Some("PROVIDER_NOT_FOUND")));
    let callback = app
        .get("/api/auth/callback/google?code=x&state=y", None)
        .await;
    assert_eq!(callback.status, 302);
    assert_eq!(
        callback.header("location").as_deref(),
        Some("/sign-in?error=PROVIDER_NOT_FOUND")
    );
}

#[tokio::test]
async fn new_google_user_is_created_and_signed_in() {
    let fake = FakeOAuth::start().await;
    let app = spawn_with(&fake.env()).await;
    assert_eq!(
        app.get("/api/auth/providers", None).await.body,
        json!({ "providers": ["google"] })
    );
    let other = app.sign_in_social("github").await;
    assert_eq!(other.status, 404);

    fake.sign_in_as(identity("google-sub-1", "New.Person@Gmail.com", true));
    let done = google_flow(&app, Some("/welcome")).await;
    assert_eq!(done.status, 302, "{}", done.text);
    assert_eq!(done.header("location").as_deref(), Some("/welcome"));
    let cookie = session_cookie_of(&done);
    assert!(
        done.set_cookies()
            .iter()
            .any(|c| c.starts_with("digiuno.oauth_state=;") && c.contains("Max-Age=0"))
    );
    let session = app.get("/api/auth/get-session", Some(&cookie)).await;
    assert_eq!(session.body["user"]["email"], "new.person@gmail.com");
    assert_eq!(session.body["user"]["emailVerified"], true);
    assert_eq!(session.body["user"]["name"], "Gianni Google");

    // The second sign-in finds the same user.
    let again = google_flow(&app, None).await;
    assert_eq!(again.header("location").as_deref(), Some("/"));
    assert_eq!(app.count("auth.\"user\""), 1);
    assert_eq!(app.count("auth.account"), 1);
    assert_eq!(app.count("auth.verification"), 0, "states are single use");
}

#[tokio::test]
async fn google_never_links_into_an_account_that_has_a_password() {
    // Someone registered the address with a password of their own, and its owner confirmed it
    // by opening the verification mail that registration sent. Linking the owner's Google
    // account into it would give the owner an account whose password someone else knows; the
    // owner is sent to sign in with the password instead (or to reset it, which ends every
    // session of the account).
    let fake = FakeOAuth::start().await;
    let app = spawn_with(&fake.env()).await;
    let (squatter, signed_up) = app.sign_up("mix@example.com", "squatter-password").await;
    app.sql("UPDATE auth.\"user\" SET email_verified = true WHERE email = 'mix@example.com'");
    fake.sign_in_as(identity("google-sub-2", "mix@example.com", true));
    let done = google_flow(&app, Some("/plan")).await;
    assert_not_linked(&app, &done);
    let still = app.get("/api/auth/get-session", Some(&squatter)).await;
    assert_eq!(still.body["user"]["id"], signed_up.body["user"]["id"]);
}

#[tokio::test]
async fn unverified_google_address_does_not_take_over_an_account() {
    refused_as_not_linked(
        "victim@example.com",
        identity("attacker", "victim@example.com", false),
    )
    .await;
}

#[tokio::test]
async fn google_never_links_to_a_user_whose_address_is_unverified() {
    // Someone registered the address with a password and never confirmed it; its owner now
    // signs in with Google, which vouches for the address. Linking would let the first
    // registrant into the owner's account with their password.
    let app = refused_as_not_linked(
        "owner@example.com",
        identity("owner-sub", "owner@example.com", true),
    )
    .await;
    assert_eq!(
        app.scalar("SELECT email_verified::text AS v FROM auth.\"user\"")
            .as_deref(),
        Some("false"),
        "the address is not marked verified either"
    );
}

#[tokio::test]
async fn a_callback_without_the_browsers_state_cookie_fails() {
    let fake = FakeOAuth::start().await;
    let app = spawn_with(&fake.env()).await;
    fake.sign_in_as(identity("sub-3", "c@example.com", true));
    let start = app.sign_in_social("google").await;
    let at_provider = get(&app.http, start.body["url"].as_str().expect("url"), None).await;
    let back = url::Url::parse(&at_provider.header("location").expect("location")).expect("url");
    let path = format!("{}?{}", back.path(), back.query().unwrap_or_default());
    // Another browser (no cookie, or a cookie for another flow) presents the code.
    let stolen = app.get(&path, None).await;
    assert_eq!(
        stolen.header("location").as_deref(),
        Some("/sign-in?error=STATE_MISMATCH")
    );
    let forged = send(
        app.http
            .get(app.url(&path))
            .header("cookie", "digiuno.oauth_state=abc.AAAA"),
    )
    .await;
    assert_eq!(
        forged.header("location").as_deref(),
        Some("/sign-in?error=STATE_MISMATCH")
    );
    assert_eq!(fake.token_requests(), 0, "no code was exchanged");
    assert_eq!(app.count("auth.\"user\""), 0);
}

#[tokio::test]
async fn a_state_works_once() {
    let fake = FakeOAuth::start().await;
    let app = spawn_with(&fake.env()).await;
    fake.sign_in_as(identity("sub-4", "d@example.com", true));
    let mut body = json!({ "provider": "google" });
    body["callbackURL"] = json!("/x");
    let start = app.post("/api/auth/sign-in/social", body, None).await;
    let state_cookie = state_cookie_of(&start);
    let at_provider = get(&app.http, start.body["url"].as_str().expect("url"), None).await;
    let back = url::Url::parse(&at_provider.header("location").expect("location")).expect("url");
    let path = format!("{}?{}", back.path(), back.query().unwrap_or_default());
    let first = send(app.http.get(app.url(&path)).header("cookie", &state_cookie)).await;
    assert_eq!(first.header("location").as_deref(), Some("/x"));
    let replay = send(app.http.get(app.url(&path)).header("cookie", &state_cookie)).await;
    assert_eq!(
        replay.header("location").as_deref(),
        Some("/sign-in?error=STATE_EXPIRED")
    );
    assert_eq!(app.count("auth.session"), 1);
}

#[tokio::test]
async fn social_sign_in_refuses_cross_site_requests_without_cookies() {
    let fake = FakeOAuth::start().await;
    let app = spawn_with(&fake.env()).await;
    for (headers, code) in [
        (
            vec![("origin", "https://evil.example.com")],
            "INVALID_ORIGIN",
        ),
        (
            vec![("origin", "null"), ("sec-fetch-site", "cross-site")],
            "MISSING_OR_NULL_ORIGIN",
        ),
        (
            vec![("sec-fetch-site", "cross-site")],
            "MISSING_OR_NULL_ORIGIN",
        ),
    ] {
        let mut req = app
            .http
            .post(app.url("/api/auth/sign-in/social"))
            .json(&json!({ "provider": "google" }));
        for (k, v) in &headers {
            req = req.header(*k, *v);
        }
        let resp = send(req).await;
        assert_eq!(resp.status_and_code(), (403, Some(code)), "{headers:?}");
        assert!(resp.set_cookies().is_empty(), "no state cookie");
    }
    assert_eq!(app.count("auth.verification"), 0, "no flow started");
}

/// Each started Google sign-in stores a state row until it ends or expires; how many may be
/// pending is bounded per client address and in total, so that nobody can fill the table.
#[tokio::test]
async fn pending_google_sign_ins_are_bounded_per_address_and_in_total() {
    let oauth = FakeOAuth::start().await;
    let mut env = oauth.env();
    env.extend([
        ("TRUSTED_PROXIES".to_owned(), "127.0.0.1".to_owned()),
        ("AUTH_SOCIAL_PENDING_PER_ADDRESS".to_owned(), "3".to_owned()),
        ("AUTH_SOCIAL_PENDING_MAX".to_owned(), "5".to_owned()),
    ]);
    let app = spawn_with(&env).await;
    let start = |ip: &'static str| {
        let app = &app;
        async move {
            send(
                app.http
                    .post(app.url("/api/auth/sign-in/social"))
                    .header("x-forwarded-for", ip)
                    .json(&json!({ "provider": "google" })),
            )
            .await
        }
    };
    for _ in 0..3 {
        assert_eq!(start("192.0.2.1").await.status, 200);
    }
    let per_address = start("192.0.2.1").await;
    assert_eq!(per_address.status, 429, "{}", per_address.text);
    assert_eq!(per_address.body["code"], "RATE_LIMITED");
    assert_eq!(per_address.body["limit"]["scope"], "address");
    assert_eq!(per_address.body["limit"]["max"], 3);
    assert!(per_address.header("retry-after").is_some());
    for _ in 0..2 {
        assert_eq!(start("192.0.2.2").await.status, 200);
    }
    let total = start("192.0.2.3").await;
    assert_eq!(total.status, 429, "{}", total.text);
    assert_eq!(total.body["limit"]["scope"], "all");
    assert_eq!(total.body["limit"]["max"], 5);
    assert_eq!(
        app.count("auth.verification WHERE identifier LIKE 'oauth:%'"),
        5
    );
}

/// With verification required, a Google profile whose address Google does not vouch for creates
/// no user and opens no session: the address would be unproven, which the requirement forbids.
#[tokio::test]
async fn with_verification_required_an_unverified_google_address_creates_no_user() {
    let fake = FakeOAuth::start().await;
    let mut env = fake.env();
    env.push(("AUTH_REQUIRE_EMAIL_VERIFICATION".into(), "true".into()));
    let app = spawn_with(&env).await;
    fake.sign_in_as(identity(
        "google-sub-unverified",
        "unproven@example.com",
        false,
    ));
    let done = google_flow(&app, Some("/welcome")).await;
    assert_eq!(done.status, 302, "{}", done.text);
    let location = done.header("location").unwrap_or_default();
    assert!(
        location.contains("error=GOOGLE_EMAIL_NOT_VERIFIED"),
        "{location}"
    );
    assert!(done.session_cookie().is_none(), "no session");
    assert_eq!(app.count("auth.\"user\""), 0);
    assert_eq!(app.count("auth.account"), 0);

    // Google vouching for it, the same person gets in.
    fake.sign_in_as(identity(
        "google-sub-unverified",
        "unproven@example.com",
        true,
    ));
    let done = google_flow(&app, None).await;
    assert!(
        done.session_cookie().is_some(),
        "{:?}",
        done.header("location")
    );
    assert_eq!(app.count("auth.\"user\""), 1);
}
