//! Passkeys (contract section 10) around the ceremony: who may start one, that each challenge is
//! answered once, that a bad answer is a 4xx that changes nothing, the list, renaming and
//! removing, and the limits under parallel requests. The ceremonies themselves, with real
//! authenticators, are run side by side with better-auth (tests/plugins.rs, a software
//! authenticator) and in Chromium through nginx (web/tests/passkey.mjs).

use serde_json::{Value, json};

use crate::helpers::{Resp, TestApp, spawn_app, spawn_with};

const PASSWORD: &str = "correct horse battery staple";
const CHALLENGE: &str = "digiuno.better-auth-passkey";
const REGISTER_OPTIONS: &str = "/api/auth/passkey/generate-register-options";
const SIGN_IN_OPTIONS: &str = "/api/auth/passkey/generate-authenticate-options";
const REGISTER: &str = "/api/auth/passkey/verify-registration";
const SIGN_IN: &str = "/api/auth/passkey/verify-authentication";
const UPDATE: &str = "/api/auth/passkey/update-passkey";
const DELETE: &str = "/api/auth/passkey/delete-passkey";

/// Renames the passkey `id` of the user signed in with `cookie`.
async fn rename(app: &TestApp, cookie: &str, id: &str, name: &str) -> Resp {
    let change = json!({ "id": id, "name": name });
    app.post(UPDATE, change, Some(cookie)).await
}

/// `name=value` of the challenge cookie a response set.
fn challenge(resp: &Resp) -> String {
    resp.set_cookies()
        .into_iter()
        .find(|c| c.starts_with(&format!("{CHALLENGE}=")))
        .and_then(|c| c.split(';').next().map(str::to_owned))
        .unwrap_or_else(|| panic!("no challenge cookie: {:?}", resp.set_cookies()))
}

fn bogus() -> Value {
    json!({ "response": { "id": "bogus", "rawId": "bogus", "type": "public-key", "response": {} } })
}

/// A passkey row for `user_id`, as a registration leaves one.
fn stored(app: &TestApp, id: &str, user_id: &str) {
    app.sql(&format!(
        "INSERT INTO auth.passkey (id, user_id, name, credential_id, public_key, credential,
                                   device_type, backed_up, transports, created_at)
         VALUES ('{id}', '{user_id}', NULL, 'cred-{id}', 'key', '{{}}', 'singleDevice', false,
                 'internal', now())"
    ));
}

fn user_id(app: &TestApp, email: &str) -> String {
    app.scalar(&format!(
        "SELECT id AS v FROM auth.\"user\" WHERE email = '{email}'"
    ))
    .expect("user")
}

#[tokio::test]
async fn registration_options_need_a_fresh_session_and_name_the_relying_party() {
    let app = spawn_app().await;
    let signed_out = app.get(REGISTER_OPTIONS, None).await;
    signed_out.assert_refused(401, "UNAUTHORIZED");

    let (cookie, _) = app.sign_up("pk@example.com", PASSWORD).await;
    let options = app
        .get(
            "/api/auth/passkey/generate-register-options?authenticatorAttachment=platform&name=Telefono",
            Some(&cookie),
        )
        .await;
    assert_eq!(options.status, 200, "{}", options.text);
    let body = &options.body;
    assert_eq!(body["rp"]["id"], "localhost", "the host of AUTH_BASE_URL");
    assert_eq!(body["rp"]["name"], "Digiuno");
    assert_eq!(body["user"]["name"], "Telefono");
    assert_eq!(body["user"]["displayName"], "pk@example.com");
    assert_eq!(body["authenticatorSelection"]["residentKey"], "required");
    assert_eq!(
        body["authenticatorSelection"]["userVerification"],
        "required"
    );
    assert_eq!(
        body["authenticatorSelection"]["authenticatorAttachment"],
        "platform"
    );
    assert!(body["challenge"].as_str().is_some_and(|c| c.len() >= 22));
    let set = options
        .set_cookies()
        .into_iter()
        .find(|c| c.starts_with(CHALLENGE))
        .expect("challenge cookie");
    assert!(
        set.contains("HttpOnly") && set.contains("Max-Age=300"),
        "{set}"
    );

    // A day-old session with no recent proof: stale, as for delete-user and the export.
    app.sql("UPDATE auth.session SET created_at = now() - interval '2 days'");
    let stale = app.get(REGISTER_OPTIONS, Some(&cookie)).await;
    stale.assert_refused(403, "SESSION_NOT_FRESH");
    let confirmed = app.confirm_password(PASSWORD, Some(&cookie)).await;
    assert_eq!(confirmed.status, 200, "{}", confirmed.text);
    let again = app.get(REGISTER_OPTIONS, Some(&cookie)).await;
    assert_eq!(again.status, 200, "a password check makes it fresh");

    let long = format!(
        "/api/auth/passkey/generate-register-options?name={}",
        "x".repeat(101)
    );
    let too_long = app.get(&long, Some(&cookie)).await;
    too_long.assert_refused(400, "VALIDATION_ERROR");
}

#[tokio::test]
async fn a_challenge_is_answered_once_and_a_bad_answer_is_a_4xx() {
    let app = spawn_app().await;
    let (cookie, _) = app.sign_up("once@example.com", PASSWORD).await;

    let none = app.post(REGISTER, bogus(), Some(&cookie)).await;
    none.assert_refused(400, "CHALLENGE_NOT_FOUND");

    let options = app.get(REGISTER_OPTIONS, Some(&cookie)).await;
    let both = format!("{cookie}; {}", challenge(&options));
    let garbage = app.post(REGISTER, bogus(), Some(&both)).await;
    garbage.assert_refused(400, "FAILED_TO_VERIFY_REGISTRATION");
    let replay = app.post(REGISTER, bogus(), Some(&both)).await;
    replay.assert_refused(400, "CHALLENGE_NOT_FOUND");
    assert_eq!(app.count("auth.passkey"), 0);

    // A sign-in ceremony's state does not answer a registration, nor the reverse.
    let sign_in = app.get(SIGN_IN_OPTIONS, None).await;
    assert_eq!(sign_in.status, 200, "{}", sign_in.text);
    assert!(sign_in.body.get("allowCredentials").is_none());
    assert_eq!(sign_in.body["rpId"], "localhost");
    let mixed = format!("{cookie}; {}", challenge(&sign_in));
    let wrong_kind = app.post(REGISTER, bogus(), Some(&mixed)).await;
    wrong_kind.assert_refused(400, "CHALLENGE_NOT_FOUND");

    let sign_in = app.get(SIGN_IN_OPTIONS, None).await;
    let jar = challenge(&sign_in);
    let unknown = app.post(SIGN_IN, bogus(), Some(&jar)).await;
    unknown.assert_refused(401, "PASSKEY_NOT_FOUND");
    let spent = app.post(SIGN_IN, bogus(), Some(&jar)).await;
    spent.assert_refused(400, "CHALLENGE_NOT_FOUND");

    // A known credential with an answer that is not WebAuthn: refused, nothing signed in.
    stored(&app, "pk1", &user_id(&app, "once@example.com"));
    let sessions = app.count("auth.session");
    let sign_in = app.get(SIGN_IN_OPTIONS, None).await;
    let mut forged = bogus();
    forged["response"]["id"] = json!("cred-pk1");
    let forged = app.post(SIGN_IN, forged, Some(&challenge(&sign_in))).await;
    forged.assert_refused(400, "AUTHENTICATION_FAILED");
    assert!(forged.session_cookie().is_none());
    assert_eq!(app.count("auth.session"), sessions);
}

#[tokio::test]
async fn passkeys_are_listed_renamed_and_removed_by_their_owner_only() {
    let app = spawn_app().await;
    let (ann, _) = app.sign_up("ann@example.com", PASSWORD).await;
    app.sign_up("bob@example.com", PASSWORD).await;
    stored(&app, "pk-ann", &user_id(&app, "ann@example.com"));
    stored(&app, "pk-bob", &user_id(&app, "bob@example.com"));

    let listed = app
        .get("/api/auth/passkey/list-user-passkeys", Some(&ann))
        .await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    let items = listed.body.as_array().expect("a list").clone();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["id"], "pk-ann");
    assert_eq!(items[0]["credentialID"], "cred-pk-ann");
    assert_eq!(items[0]["name"], Value::Null);
    assert!(
        items[0].get("credential").is_none(),
        "never the verifier's record"
    );

    // Signed in, the sign-in options list the user's own passkeys.
    let options = app.get(SIGN_IN_OPTIONS, Some(&ann)).await;
    assert_eq!(options.body["allowCredentials"][0]["id"], "cred-pk-ann");
    assert_eq!(
        options.body["allowCredentials"][0]["transports"],
        json!(["internal"])
    );

    let renamed = rename(&app, &ann, "pk-ann", "  Telefono  ").await;
    assert_eq!(renamed.status, 200, "{}", renamed.text);
    assert_eq!(renamed.body["passkey"]["name"], "Telefono");
    let blank = rename(&app, &ann, "pk-ann", "   ").await;
    blank.assert_refused(400, "VALIDATION_ERROR");

    // Someone else's passkey is as unknown as one that does not exist.
    for (path, body) in [
        (UPDATE, json!({ "id": "pk-bob", "name": "mine" })),
        (DELETE, json!({ "id": "pk-bob" })),
    ] {
        let theirs = app.post(path, body, Some(&ann)).await;
        assert_eq!(
            theirs.status_and_code(),
            (404, Some("PASSKEY_NOT_FOUND")),
            "{path}"
        );
    }
    assert_eq!(
        app.scalar("SELECT coalesce(name, '') AS v FROM auth.passkey WHERE id = 'pk-bob'"),
        Some(String::new())
    );

    let deleted = app
        .post(DELETE, json!({ "id": "pk-ann" }), Some(&ann))
        .await;
    deleted.assert_status_true();
    assert_eq!(app.count("auth.passkey"), 1, "bob's is still there");
    let activity = app.get("/api/auth/activity", Some(&ann)).await;
    assert_eq!(activity.body["items"][0]["kind"], "passkey_removed");

    let signed_out = app.get("/api/auth/passkey/list-user-passkeys", None).await;
    signed_out.assert_refused(401, "UNAUTHORIZED");
}

/// Each options answer leaves a row for five minutes: parallel requests from one address get
/// exactly the budget, and the refused leave nothing.
#[tokio::test]
async fn sign_in_options_are_limited_per_address_under_parallel_requests() {
    let app = spawn_with(&[("AUTH_RATE_LIMIT_MAX".into(), "5".into())]).await;
    let rows_before = app.count("auth.verification");
    let answers =
        futures_util::future::join_all((0..20).map(|_| app.get(SIGN_IN_OPTIONS, None))).await;
    let ok = answers.iter().filter(|r| r.status == 200).count();
    let limited = answers.iter().filter(|r| r.status == 429).count();
    assert_eq!((ok, limited), (5, 15));
    assert_eq!(app.count("auth.verification") - rows_before, 5);
}

/// A base URL whose host is an IP address has no relying party: the ceremonies say so, with a
/// 400, and the list still answers.
#[tokio::test]
async fn passkeys_are_off_where_the_base_url_is_an_ip_address() {
    let app = spawn_with(&[("AUTH_BASE_URL".into(), "http://127.0.0.1:8080".into())]).await;
    let options = app.get(SIGN_IN_OPTIONS, None).await;
    options.assert_refused(400, "PASSKEYS_UNAVAILABLE");
}

/// The sign-in page offers passkeys where they work: the button (shown by the script once it
/// finds WebAuthn), the address field's autofill, and a policy that runs our script only.
#[tokio::test]
async fn the_sign_in_page_offers_passkeys_with_our_script_only() {
    let app = spawn_app().await;
    let page = app.get("/sign-in?callbackURL=%2Fsettings", None).await;
    assert_eq!(page.status, 200);
    assert!(page.text.contains(r#"id="passkey""#), "{}", page.text);
    assert!(page.text.contains(r#"data-next="/settings""#));
    assert!(page.text.contains(r#"autocomplete="username webauthn""#));
    assert!(
        page.text
            .contains(r#"<script src="/api/auth/passkey/sign-in.js" defer>"#)
    );
    let csp = page.header("content-security-policy").expect("csp");
    assert!(
        csp.contains("script-src 'self'") && csp.contains("connect-src 'self'"),
        "{csp}"
    );
    let script = app.get("/api/auth/passkey/sign-in.js", None).await;
    assert_eq!(script.status, 200);
    assert!(
        script
            .header("content-type")
            .is_some_and(|c| c.starts_with("text/javascript"))
    );
    assert!(script.text.contains("generate-authenticate-options"));

    // The sign-up page runs no script at all; nor does sign-in where passkeys are off.
    let sign_up = app.get("/sign-up", None).await;
    assert!(!sign_up.text.contains("<script"));
    assert!(
        !sign_up
            .header("content-security-policy")
            .expect("csp")
            .contains("script-src")
    );
    let off = spawn_with(&[("AUTH_BASE_URL".into(), "http://127.0.0.1:8080".into())]).await;
    let page = off.get("/sign-in", None).await;
    assert!(!page.text.contains("<script") && !page.text.contains(r#"id="passkey""#));
}
