//! E-mail codes of section 10 through the real outbox to the test kit's SMTP server: signing in,
//! verifying and resetting with a code, the tries a code survives (also under parallel guesses),
//! and what a code does to an account whose address was never proven.

use serde_json::json;
use testkit::smtp::{Received, SmtpServer};

use crate::helpers::{BASE_URL, TestApp, send};
use crate::mail::{link, one_mail, readable, with_mail};

const PASSWORD: &str = "password-123";

/// The code in `msg`: the line of six digits alone.
pub(crate) fn code(msg: &Received) -> String {
    readable(msg)
        .lines()
        .map(str::trim)
        .find(|l| l.len() == 6 && l.bytes().all(|b| b.is_ascii_digit()))
        .unwrap_or_else(|| panic!("no code in the mail:\n{}", readable(msg)))
        .to_owned()
}

/// A code of the same length that is not `right`.
pub(crate) fn wrong(right: &str, n: u32) -> String {
    let guess = format!("{:06}", (right.parse::<u32>().unwrap() + 1 + n) % 1_000_000);
    assert_ne!(guess, right);
    guess
}

/// `POST /api/auth/email-otp/send-verification-otp` for `email` and the code's `kind`.
async fn request_code(app: &TestApp, email: &str, kind: &str) -> crate::helpers::Resp {
    let request = json!({ "email": email, "type": kind });
    app.post("/api/auth/email-otp/send-verification-otp", request, None)
        .await
}

async fn send_code(app: &TestApp, email: &str, kind: &str) {
    request_code(app, email, kind).await.assert_success_true();
}

/// Posts `{email, otp}` to `path`, with no cookie.
async fn post_code(app: &TestApp, path: &str, email: &str, otp: &str) -> crate::helpers::Resp {
    let proof = json!({ "email": email, "otp": otp });
    app.post(path, proof, None).await
}

async fn sign_in_with(app: &TestApp, email: &str, otp: &str) -> crate::helpers::Resp {
    post_code(app, "/api/auth/sign-in/email-otp", email, otp).await
}

async fn verify_email_with(app: &TestApp, email: &str, otp: &str) -> crate::helpers::Resp {
    post_code(app, "/api/auth/email-otp/verify-email", email, otp).await
}

async fn mailed_code(app: &TestApp, smtp: &SmtpServer, count: usize, email: &str) -> String {
    send_code(app, email, "sign-in").await;
    let mail = one_mail(smtp, count).await;
    assert_eq!(mail.rcpt_to, [email]);
    code(&mail)
}

/// Asserts that a newly mailed code, in mail number `count`, signs `email` in.
async fn assert_a_new_code_signs_in(app: &TestApp, smtp: &SmtpServer, count: usize, email: &str) {
    let otp = mailed_code(app, smtp, count, email).await;
    let resp = sign_in_with(app, email, &otp).await;
    assert_eq!(resp.status, 200, "{}", resp.text);
}

#[tokio::test]
async fn a_code_signs_an_unknown_address_up_and_works_once() {
    let (app, smtp) = with_mail(&[]).await;
    let otp = mailed_code(&app, &smtp, 1, "ines@example.com").await;
    let resp = sign_in_with(&app, "Ines@Example.com", &otp).await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    assert_eq!(resp.body["user"]["email"], "ines@example.com");
    assert_eq!(resp.body["user"]["emailVerified"], true);
    let cookie = resp.session_cookie().expect("a session cookie");
    assert_eq!(
        Some(resp.body["token"].as_str().expect("token")),
        cookie.split('=').nth(1).and_then(|v| v.split('.').next())
    );
    let session = app.get("/api/auth/get-session", Some(&cookie)).await;
    assert_eq!(session.body["user"]["email"], "ines@example.com");
    let again = sign_in_with(&app, "ines@example.com", &otp).await;
    assert_eq!(again.status_and_code(), (400, Some("INVALID_OTP")));
}

#[tokio::test]
async fn three_wrong_tries_void_the_code() {
    let (app, smtp) = with_mail(&[]).await;
    let otp = mailed_code(&app, &smtp, 1, "tess@example.com").await;
    for n in 0..3 {
        let resp = sign_in_with(&app, "tess@example.com", &wrong(&otp, n)).await;
        assert_eq!(
            resp.status_and_code(),
            (400, Some("INVALID_OTP")),
            "try {n}"
        );
        assert!(resp.session_set_cookie().is_none());
    }
    let right = sign_in_with(&app, "tess@example.com", &otp).await;
    assert_eq!(right.status_and_code(), (403, Some("TOO_MANY_ATTEMPTS")));
    let after = sign_in_with(&app, "tess@example.com", &otp).await;
    assert_eq!(after.status_and_code(), (400, Some("INVALID_OTP")));
    // A new code works, and replaces the old one.
    assert_a_new_code_signs_in(&app, &smtp, 2, "tess@example.com").await;
    assert_eq!(app.count("auth.user"), 1);
}

#[tokio::test]
async fn parallel_guesses_are_weighed_at_most_three_times() {
    let (app, smtp) = with_mail(&[]).await;
    let otp = mailed_code(&app, &smtp, 1, "pia@example.com").await;
    let guesses: Vec<String> = (0..40).map(|n| wrong(&otp, n)).collect();
    let answers = futures_util::future::join_all(
        guesses
            .iter()
            .map(|g| sign_in_with(&app, "pia@example.com", g)),
    )
    .await;
    for resp in &answers {
        assert!(
            matches!(
                resp.status_and_code(),
                (400, Some("INVALID_OTP")) | (403, Some("TOO_MANY_ATTEMPTS"))
            ),
            "{}",
            resp.text
        );
    }
    let tries = app
        .scalar(
            "SELECT split_part(value, ':', 2) FROM auth.verification \
             WHERE identifier = 'sign-in-otp-pia@example.com'",
        )
        .map_or(3, |n| n.parse::<u32>().expect("a count"));
    assert!(tries <= 3, "{tries} tries counted");
    // The right code among parallel wrong ones: never more than one session.
    let otp = mailed_code(&app, &smtp, 2, "pia@example.com").await;
    let mut mixed: Vec<String> = (0..20).map(|n| wrong(&otp, n)).collect();
    mixed.insert(7, otp.clone());
    let answers = futures_util::future::join_all(
        mixed
            .iter()
            .map(|g| sign_in_with(&app, "pia@example.com", g)),
    )
    .await;
    let signed_in = answers.iter().filter(|r| r.status == 200).count();
    assert!(signed_in <= 1, "{signed_in} sign-ins with one code");
    assert!(app.count("auth.session") <= 1);
}

#[tokio::test]
async fn a_code_ends_every_other_way_into_an_unproven_account() {
    let (app, smtp) = with_mail(&[]).await;
    // Someone signs up with an address that is not theirs and keeps the session.
    let (squatter, _) = app.sign_up("owner@example.com", PASSWORD).await;
    assert_eq!(
        app.get("/api/auth/get-session", Some(&squatter))
            .await
            .status,
        200
    );
    // The address's owner arrives and signs in with a code.
    let otp = mailed_code(&app, &smtp, 1, "owner@example.com").await;
    let owner = sign_in_with(&app, "owner@example.com", &otp).await;
    assert_eq!(owner.status, 200, "{}", owner.text);
    assert_eq!(owner.body["user"]["emailVerified"], true);
    let owner_cookie = owner.session_cookie().expect("cookie");
    let gone = app.get("/api/auth/get-session", Some(&squatter)).await;
    assert_eq!(gone.body, serde_json::Value::Null, "{}", gone.text);
    let by_password = app.sign_in("owner@example.com", PASSWORD).await;
    assert_eq!(
        by_password.status_and_code(),
        (401, Some("INVALID_EMAIL_OR_PASSWORD"))
    );
    let accounts = app
        .get("/api/auth/list-accounts", Some(&owner_cookie))
        .await;
    assert_eq!(accounts.body, json!([]), "{}", accounts.text);
    // A verified account keeps its password when its owner signs in with a code.
    assert_a_new_code_signs_in(&app, &smtp, 2, "owner@example.com").await;
    assert_eq!(app.count("auth.session"), 2);
}

#[tokio::test]
async fn an_address_is_verified_with_a_code() {
    let (app, smtp) = with_mail(&[]).await;
    let (cookie, _) = app.sign_up("vera@example.com", PASSWORD).await;
    send_code(&app, "vera@example.com", "email-verification").await;
    let otp = code(&one_mail(&smtp, 1).await);
    let check = app
        .post(
            "/api/auth/email-otp/check-verification-otp",
            json!({ "email": "vera@example.com", "type": "email-verification", "otp": otp }),
            None,
        )
        .await;
    check.assert_success_true();
    let resp = verify_email_with(&app, "vera@example.com", &otp).await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    assert_eq!(resp.body["status"], true);
    assert_eq!(resp.body["token"], serde_json::Value::Null);
    assert_eq!(resp.body["user"]["emailVerified"], true);
    let session = app.get("/api/auth/get-session", Some(&cookie)).await;
    assert_eq!(session.body["user"]["emailVerified"], true);
    let spent = verify_email_with(&app, "vera@example.com", &otp).await;
    assert_eq!(spent.status_and_code(), (400, Some("INVALID_OTP")));
}

#[tokio::test]
async fn the_reset_mail_carries_a_code_that_resets_instead_of_the_link() {
    let (app, smtp) = with_mail(&[]).await;
    let (cookie, _) = app.sign_up("rosa@example.com", PASSWORD).await;
    let resp = app.request_password_reset("rosa@example.com").await;
    assert_eq!(resp.status, 200);
    let mail = one_mail(&smtp, 1).await;
    let reset_link = link(&mail, &format!("{BASE_URL}/api/auth/reset-password/"));
    let otp = code(&mail);
    let reset = |password: &'static str, otp: String| {
        let app = &app;
        async move {
            app.post(
                "/api/auth/email-otp/reset-password",
                json!({ "email": "rosa@example.com", "otp": otp, "password": password }),
                None,
            )
            .await
        }
    };
    let short = reset("short", otp.clone()).await;
    assert_eq!(short.status_and_code(), (400, Some("PASSWORD_TOO_SHORT")));
    let done = reset("chosen-anew-1", otp.clone()).await;
    done.assert_success_true();
    assert_eq!(
        app.get("/api/auth/get-session", Some(&cookie)).await.body,
        serde_json::Value::Null
    );
    assert_eq!(
        app.sign_in("rosa@example.com", "chosen-anew-1")
            .await
            .status,
        200
    );
    let again = reset("chosen-anew-2", otp).await;
    assert_eq!(again.status_and_code(), (400, Some("INVALID_OTP")));
    // The link of the same mail is spent with its code.
    let token = reset_link.rsplit('/').next().expect("token").to_owned();
    let by_link = app.reset_password(&token, "chosen-anew-3").await;
    assert_eq!(by_link.status_and_code(), (400, Some("INVALID_TOKEN")));
}

#[tokio::test]
async fn codes_for_unknown_addresses_get_the_same_answer_and_no_mail() {
    let (app, smtp) = with_mail(&[]).await;
    app.sign_up("known@example.com", PASSWORD).await;
    for email in ["nobody@example.com", "known@example.com"] {
        for path in [
            "/api/auth/forget-password/email-otp",
            "/api/auth/email-otp/request-password-reset",
        ] {
            let resp = app.post(path, json!({ "email": email }), None).await;
            resp.assert_success_true();
        }
        send_code(&app, email, "email-verification").await;
    }
    let mails = smtp.wait_for(4, std::time::Duration::from_secs(5)).await;
    assert_eq!(mails.len(), 3, "{mails:?}");
    assert!(mails.iter().all(|m| m.rcpt_to == ["known@example.com"]));
    let wrong_type = request_code(&app, "known@example.com", "change-email").await;
    assert_eq!(wrong_type.status, 400);
}

#[tokio::test]
async fn the_sign_in_page_signs_in_with_a_mailed_code_without_javascript() {
    let (app, smtp) = with_mail(&[]).await;
    let page = app.get("/sign-in?callbackURL=%2Fplan", None).await;
    assert!(
        page.text
            .contains(r#"href="/sign-in?with=code&amp;callbackURL=%2Fplan""#),
        "{}",
        page.text
    );
    let ask = app
        .get("/sign-in?with=code&callbackURL=%2Fplan", None)
        .await;
    assert!(
        ask.text
            .contains(r#"action="/api/auth/email-otp/send-verification-otp""#)
    );
    let form = |path: &str, fields: &[(&str, &str)]| {
        send(
            app.http
                .post(app.url(path))
                .header("origin", BASE_URL)
                .form(fields),
        )
    };
    let sent = form(
        "/api/auth/email-otp/send-verification-otp",
        &[
            ("email", "Lia@example.com"),
            ("type", "sign-in"),
            ("callbackURL", "/plan"),
        ],
    )
    .await;
    let next = "/sign-in?with=code&sent=1&email=Lia%40example.com&callbackURL=%2Fplan";
    assert_eq!(
        (sent.status, sent.header("location").as_deref()),
        (303, Some(next))
    );
    let code_form = app.get(next, None).await;
    assert!(
        code_form
            .text
            .contains(r#"action="/api/auth/sign-in/email-otp""#)
    );
    let otp = code(&one_mail(&smtp, 1).await);
    let fields = |otp: &str| {
        [
            ("email", "Lia@example.com".to_owned()),
            ("otp", otp.to_owned()),
            ("callbackURL", "/plan".to_owned()),
        ]
    };
    let refused = send(
        app.http
            .post(app.url("/api/auth/sign-in/email-otp"))
            .header("origin", BASE_URL)
            .form(&fields(&wrong(&otp, 0))),
    )
    .await;
    assert_eq!(
        (refused.status, refused.header("location").as_deref()),
        (303, Some(format!("{next}&error=INVALID_OTP").as_str()))
    );
    assert!(refused.session_set_cookie().is_none());
    let shown = app.get(&format!("{next}&error=INVALID_OTP"), None).await;
    assert!(shown.text.contains("Il codice non è corretto"));
    let signed_in = send(
        app.http
            .post(app.url("/api/auth/sign-in/email-otp"))
            .header("origin", BASE_URL)
            .form(&fields(&otp)),
    )
    .await;
    assert_eq!(
        (signed_in.status, signed_in.header("location").as_deref()),
        (303, Some("/plan"))
    );
    let cookie = signed_in.session_cookie().expect("cookie");
    let session = app.get("/api/auth/get-session", Some(&cookie)).await;
    assert_eq!(session.body["user"]["email"], "lia@example.com");
}
