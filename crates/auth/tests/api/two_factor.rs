//! Two-factor sign-in (contract section 10, better-auth's twoFactor plugin): set-up with a code
//! of the authenticator app, the sign-in challenge, trusted devices, backup codes, the limits.
//! Codes are computed here from the `totpURI`, as an authenticator app would.

use serde_json::json;
use totp_rs::TOTP;

use crate::helpers::{Resp, TestApp, only_one_succeeds, spawn_app};

const PASSWORD: &str = "correct horse battery staple";

const CHALLENGE: &str = "digiuno.two_factor=";
const TRUST: &str = "digiuno.trust_device=";
const VERIFY_TOTP: &str = "/api/auth/two-factor/verify-totp";

fn app_code(uri: &str) -> String {
    TOTP::from_url_unchecked(uri)
        .expect("an otpauth URI")
        .generate_current()
        .expect("the clock")
}

/// A six-digit code that is not the current one (nor one step either side).
fn wrong_code(uri: &str) -> String {
    let totp = TOTP::from_url_unchecked(uri).expect("an otpauth URI");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let near: Vec<String> = [now - 30, now, now + 30]
        .iter()
        .map(|t| totp.generate(*t))
        .collect();
    (0..1_000_000u32)
        .map(|n| format!("{n:06}"))
        .find(|c| !near.contains(c))
        .unwrap()
}

/// `name=value` of the cookie the answer sets whose name starts `prefix`.
fn pair_of(resp: &Resp, prefix: &str) -> Option<String> {
    resp.set_cookies()
        .into_iter()
        .filter(|c| c.starts_with(prefix) && !c.contains("Max-Age=0"))
        .find_map(|c| c.split(';').next().map(str::to_owned))
}

/// Signs up and turns two-factor on; answers the session cookie, the URI and the backup codes.
async fn enabled(app: &TestApp, email: &str) -> (String, String, Vec<String>) {
    let (cookie, _) = app.sign_up(email, PASSWORD).await;
    let on = with_password(app, "enable", Some(&cookie)).await;
    assert_eq!(on.status, 200, "{}", on.text);
    let uri = on.body["totpURI"].as_str().expect("totpURI").to_owned();
    let codes: Vec<String> = serde_json::from_value(on.body["backupCodes"].clone()).unwrap();
    let first = confirm_totp(app, &uri, &cookie).await;
    assert_eq!(first.status, 200, "{}", first.text);
    let renewed = first
        .session_cookie()
        .expect("a session proven with two-factor");
    (renewed, uri, codes)
}

/// The set-up's last step: the authenticator app's current code for `uri`, from the session.
async fn confirm_totp(app: &TestApp, uri: &str, cookie: &str) -> Resp {
    let code = json!({ "code": app_code(uri) });
    app.post(VERIFY_TOTP, code, Some(cookie)).await
}

/// A form of the pages posted from the site, with `cookie`.
async fn form_post(
    app: &TestApp,
    path: &str,
    cookie: Option<&str>,
    fields: &[(&str, &str)],
) -> Resp {
    let mut req = app
        .http
        .post(app.url(path))
        .header("origin", crate::helpers::BASE_URL)
        .form(fields);
    if let Some(c) = cookie {
        req = req.header("cookie", c);
    }
    crate::helpers::send(req).await
}

/// `POST /api/auth/two-factor/<route>` with the account's password.
async fn with_password(app: &TestApp, route: &str, cookie: Option<&str>) -> Resp {
    let body = json!({ "password": PASSWORD });
    app.post(&format!("/api/auth/two-factor/{route}"), body, cookie)
        .await
}

/// A password sign-in that stops at the challenge; answers its cookie.
async fn challenged(app: &TestApp, email: &str, extra: Option<&str>) -> String {
    let credentials = json!({ "email": email, "password": PASSWORD });
    let resp = app
        .post("/api/auth/sign-in/email", credentials, extra)
        .await;
    assert_eq!(
        (resp.status, &resp.body),
        (
            200,
            &json!({ "twoFactorRedirect": true, "twoFactorMethods": ["totp"] })
        ),
        "{}",
        resp.text
    );
    assert!(
        resp.session_cookie().is_none_or(|c| c.ends_with('=')),
        "no session yet"
    );
    pair_of(&resp, CHALLENGE).expect("the challenge cookie")
}

async fn verify(app: &TestApp, route: &str, code: &str, cookie: &str, trust: bool) -> Resp {
    let body = json!({ "code": code, "trustDevice": trust });
    app.post(&format!("/api/auth/two-factor/{route}"), body, Some(cookie))
        .await
}

#[tokio::test]
async fn set_up_then_sign_in_with_the_apps_code_and_a_trusted_device() {
    let app = spawn_app().await;
    let (cookie, uri, _) = enabled(&app, "tfa@example.com").await;
    assert!(
        uri.starts_with("otpauth://totp/Digiuno:tfa%40example.com?"),
        "{uri}"
    );
    let me = app.get("/api/auth/get-session", Some(&cookie)).await;
    assert_eq!(me.body["user"]["twoFactorEnabled"], true, "{}", me.text);
    // The secret is sealed at rest.
    let stored = app
        .scalar("SELECT secret AS v FROM auth.two_factor")
        .unwrap();
    let key = url_secret(&uri);
    assert!(!stored.contains(&key) && stored.len() > 40, "{stored}");

    let challenge = challenged(&app, "tfa@example.com", None).await;
    let wrong = verify(&app, "verify-totp", &wrong_code(&uri), &challenge, false).await;
    assert_eq!(wrong.status_and_code(), (401, Some("INVALID_CODE")));
    let right = verify(&app, "verify-totp", &app_code(&uri), &challenge, true).await;
    assert_eq!(right.status, 200, "{}", right.text);
    assert_eq!(right.body["user"]["email"], "tfa@example.com");
    let session = right.session_cookie().expect("signed in");
    assert_eq!(
        app.get("/api/auth/get-session", Some(&session))
            .await
            .status,
        200
    );
    let trusted = pair_of(&right, TRUST).expect("the trusted-device cookie");
    // The challenge is spent.
    let again = verify(&app, "verify-totp", &app_code(&uri), &challenge, false).await;
    assert_eq!(
        again.status_and_code(),
        (401, Some("INVALID_TWO_FACTOR_COOKIE"))
    );

    // The trusted device signs in with the password alone, and its cookie is renewed.
    let credentials = json!({ "email": "tfa@example.com", "password": PASSWORD });
    let direct = app
        .post(
            "/api/auth/sign-in/email",
            credentials.clone(),
            Some(&trusted),
        )
        .await;
    assert_eq!(direct.status, 200, "{}", direct.text);
    assert!(direct.session_cookie().is_some());
    let renewed = pair_of(&direct, TRUST).expect("a renewed trust cookie");
    assert_ne!(renewed, trusted);
    // The old trust cookie no longer passes.
    challenged(&app, "tfa@example.com", Some(&trusted)).await;
}

fn url_secret(uri: &str) -> String {
    let query = uri.split_once('?').unwrap().1;
    query
        .split('&')
        .find_map(|p| p.strip_prefix("secret="))
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn a_backup_code_works_once() {
    let app = spawn_app().await;
    let (cookie, _, codes) = enabled(&app, "backup@example.com").await;
    assert_eq!(codes.len(), 10);
    let stored = app
        .scalar("SELECT backup_codes::text AS v FROM auth.two_factor")
        .unwrap();
    assert!(!stored.contains(&codes[0]), "stored in clear: {stored}");
    let challenge = challenged(&app, "backup@example.com", None).await;
    let used = verify(&app, "verify-backup-code", &codes[0], &challenge, false).await;
    assert_eq!(used.status, 200, "{}", used.text);
    let challenge = challenged(&app, "backup@example.com", None).await;
    let reused = verify(&app, "verify-backup-code", &codes[0], &challenge, false).await;
    assert_eq!(reused.status_and_code(), (401, Some("INVALID_BACKUP_CODE")));
    // New codes replace the old ones.
    let renewed = with_password(&app, "generate-backup-codes", Some(&cookie)).await;
    assert_eq!(renewed.body["status"], true, "{}", renewed.text);
    let old = verify(&app, "verify-backup-code", &codes[1], &challenge, false).await;
    assert_eq!(old.status_and_code(), (401, Some("INVALID_BACKUP_CODE")));
    let new = renewed.body["backupCodes"][0].as_str().unwrap();
    assert_eq!(
        verify(&app, "verify-backup-code", new, &challenge, false)
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn parallel_uses_of_one_backup_code_sign_in_once() {
    let app = spawn_app().await;
    let (_, _, codes) = enabled(&app, "race@example.com").await;
    let mut challenges = Vec::new();
    for _ in 0..6 {
        challenges.push(challenged(&app, "race@example.com", None).await);
    }
    let tries = challenges
        .iter()
        .map(|c| verify(&app, "verify-backup-code", &codes[3], c, false));
    let (_, statuses) = only_one_succeeds(tries).await;
    assert_eq!(
        statuses.iter().filter(|s| **s == 401).count(),
        5,
        "{statuses:?}"
    );
}

#[tokio::test]
async fn a_challenge_takes_five_codes_and_ten_wrong_codes_lock_the_account() {
    let app = spawn_app().await;
    let (_, uri, _) = enabled(&app, "locked@example.com").await;
    let wrong = wrong_code(&uri);
    let challenge = challenged(&app, "locked@example.com", None).await;
    for _ in 0..5 {
        let r = verify(&app, "verify-totp", &wrong, &challenge, false).await;
        assert_eq!(r.status_and_code(), (401, Some("INVALID_CODE")));
    }
    let sixth = verify(&app, "verify-totp", &app_code(&uri), &challenge, false).await;
    assert_eq!(
        sixth.status_and_code(),
        (400, Some("TOO_MANY_ATTEMPTS_REQUEST_NEW_CODE"))
    );
    assert!(
        sixth
            .set_cookies()
            .iter()
            .any(|c| c.starts_with(CHALLENGE) && c.contains("Max-Age=0"))
    );
    // Five more wrong codes, in parallel, on a new challenge: the tenth in a row locks.
    let challenge = challenged(&app, "locked@example.com", None).await;
    let tries = (0..5).map(|_| verify(&app, "verify-totp", &wrong, &challenge, false));
    let answers = futures_util::future::join_all(tries).await;
    assert!(
        answers.iter().all(|r| r.status == 401),
        "{:?}",
        answers.iter().map(|r| &r.text).collect::<Vec<_>>()
    );
    let challenge = challenged(&app, "locked@example.com", None).await;
    let locked = verify(&app, "verify-totp", &app_code(&uri), &challenge, false).await;
    assert_eq!(
        locked.status_and_code(),
        (429, Some("ACCOUNT_TEMPORARILY_LOCKED"))
    );
    // After the lock, the right code works and clears the run.
    app.sql("UPDATE auth.two_factor SET locked_until = now() - interval '1 second'");
    let open = verify(&app, "verify-totp", &app_code(&uri), &challenge, false).await;
    assert_eq!(open.status, 200, "{}", open.text);
}

#[tokio::test]
async fn set_up_rules_and_turning_it_off() {
    let app = spawn_app().await;
    let (cookie, _) = app.sign_up("rules@example.com", PASSWORD).await;
    let anonymous = with_password(&app, "enable", None).await;
    assert_eq!(anonymous.status_and_code(), (401, Some("UNAUTHORIZED")));
    let wrong = app
        .post(
            "/api/auth/two-factor/enable",
            json!({ "password": "not-the-password" }),
            Some(&cookie),
        )
        .await;
    assert_eq!(wrong.status_and_code(), (400, Some("INVALID_PASSWORD")));
    let no_secret = with_password(&app, "get-totp-uri", Some(&cookie)).await;
    assert_eq!(no_secret.status_and_code(), (400, Some("TOTP_NOT_ENABLED")));
    let off = with_password(&app, "generate-backup-codes", Some(&cookie)).await;
    assert_eq!(off.status_and_code(), (400, Some("TWO_FACTOR_NOT_ENABLED")));
    // Begun but not verified: sign-in is not asked for a code yet.
    let begun = with_password(&app, "enable", Some(&cookie)).await;
    assert_eq!(begun.status, 200);
    assert_eq!(
        app.sign_in("rules@example.com", PASSWORD).await.body["redirect"],
        false
    );
    let uri = begun.body["totpURI"].as_str().unwrap().to_owned();
    let first = confirm_totp(&app, &uri, &cookie).await;
    let cookie = first.session_cookie().expect("renewed");
    let twice = with_password(&app, "enable", Some(&cookie)).await;
    assert_eq!(twice.status_and_code(), (400, Some("TOTP_ALREADY_ENABLED")));
    let shown = with_password(&app, "get-totp-uri", Some(&cookie)).await;
    assert_eq!(shown.body["totpURI"], uri.as_str());

    let disabled = with_password(&app, "disable", Some(&cookie)).await;
    disabled.assert_status_true();
    assert_eq!(app.count("auth.two_factor"), 0);
    let cookie = disabled.session_cookie().expect("renewed");
    let me = app.get("/api/auth/get-session", Some(&cookie)).await;
    assert_eq!(me.body["user"]["twoFactorEnabled"], false);
    assert!(
        app.sign_in("rules@example.com", PASSWORD)
            .await
            .session_cookie()
            .is_some()
    );
}

#[tokio::test]
async fn the_pages_form_signs_in_with_a_code() {
    let app = spawn_app().await;
    let (_, uri, _) = enabled(&app, "form@example.com").await;
    let fields = [
        ("email", "form@example.com"),
        ("password", PASSWORD),
        ("callbackURL", "/plan"),
    ];
    let signed = form_post(&app, "/api/auth/sign-in/email", None, &fields).await;
    assert_eq!(signed.status, 303, "{}", signed.text);
    assert_eq!(
        signed.header("location").as_deref(),
        Some("/two-factor?callbackURL=%2Fplan")
    );
    let challenge = pair_of(&signed, CHALLENGE).expect("challenge");
    let page = app.get("/two-factor?callbackURL=%2Fplan", None).await;
    assert!(
        page.text
            .contains(r#"action="/api/auth/two-factor/verify-totp""#),
        "{}",
        page.text
    );
    let post = async |code: &str| {
        let fields = [("code", code), ("callbackURL", "/plan")];
        form_post(&app, VERIFY_TOTP, Some(&challenge), &fields).await
    };
    let wrong = post(&wrong_code(&uri)).await;
    assert_eq!(wrong.status, 303);
    assert_eq!(
        wrong.header("location").as_deref(),
        Some("/two-factor?error=INVALID_CODE&callbackURL=%2Fplan")
    );
    let right = post(&app_code(&uri)).await;
    assert_eq!(
        (right.status, right.header("location").as_deref()),
        (303, Some("/plan"))
    );
    assert!(right.session_cookie().is_some());
}

#[tokio::test]
async fn a_mailed_code_is_the_second_factor_once() {
    let (app, smtp) = crate::mail::with_mail(&[]).await;
    let (cookie, _) = app.sign_up("mailed@example.com", PASSWORD).await;
    let on = app
        .post(
            "/api/auth/two-factor/enable",
            json!({ "password": PASSWORD, "method": "otp" }),
            Some(&cookie),
        )
        .await;
    assert_eq!(
        (on.status, &on.body),
        (200, &json!({ "method": "otp" })),
        "{}",
        on.text
    );
    assert!(on.session_cookie().is_some(), "the session is renewed");

    let credentials = json!({ "email": "mailed@example.com", "password": PASSWORD });
    let redirect = app.post("/api/auth/sign-in/email", credentials, None).await;
    assert_eq!(
        redirect.body,
        json!({ "twoFactorRedirect": true, "twoFactorMethods": ["otp"] })
    );
    let challenge = pair_of(&redirect, CHALLENGE).expect("challenge");
    let early = verify(&app, "verify-otp", "123456", &challenge, false).await;
    assert_eq!(early.status_and_code(), (400, Some("OTP_HAS_EXPIRED")));
    let sent = app
        .post("/api/auth/two-factor/send-otp", json!({}), Some(&challenge))
        .await;
    sent.assert_status_true();
    let mail = crate::mail::one_mail(&smtp, 1).await;
    assert_eq!(mail.rcpt_to, ["mailed@example.com"]);
    let code = crate::email_otp::code(&mail);
    let wrong = verify(
        &app,
        "verify-otp",
        &crate::email_otp::wrong(&code, 0),
        &challenge,
        false,
    )
    .await;
    assert_eq!(wrong.status_and_code(), (401, Some("INVALID_CODE")));
    let right = verify(&app, "verify-otp", &code, &challenge, false).await;
    assert_eq!(right.status, 200, "{}", right.text);
    assert!(right.session_cookie().is_some());
    let again = verify(&app, "verify-otp", &code, &challenge, false).await;
    assert_eq!(
        again.status_and_code(),
        (401, Some("INVALID_TWO_FACTOR_COOKIE"))
    );
    // Without a session or a challenge, nothing is sent.
    let stranger = app
        .post("/api/auth/two-factor/send-otp", json!({}), None)
        .await;
    assert_eq!(
        stranger.status_and_code(),
        (401, Some("INVALID_TWO_FACTOR_COOKIE"))
    );
}

#[tokio::test]
async fn a_limited_form_try_goes_back_to_the_page() {
    let limit = [("AUTH_RATE_LIMIT_MAX".to_owned(), "2".to_owned())];
    let app = crate::helpers::spawn_with(&limit).await;
    let (_, uri, _) = enabled(&app, "limited@example.com").await;
    let challenge = challenged(&app, "limited@example.com", None).await;
    let form = async |code: &str| {
        let fields = [("code", code)];
        form_post(&app, VERIFY_TOTP, Some(&challenge), &fields).await
    };
    // The set-up's code was the first try of the window; this is the second, the third is over.
    assert_eq!(form(&wrong_code(&uri)).await.status, 303);
    let limited = form(&app_code(&uri)).await;
    assert_eq!(
        (limited.status, limited.header("location").as_deref()),
        (303, Some("/two-factor?error=RATE_LIMITED"))
    );
    let page = app.get("/two-factor?error=RATE_LIMITED", None).await;
    assert!(page.text.contains("Troppi tentativi"), "{}", page.text);
}
