//! Change of address (section 10), as better-auth's core does it: an unverified address changes
//! at once, a verified one only through the link mailed to the new address, and an address in
//! use elsewhere gets the same answer and no mail.

use std::time::Duration;

use serde_json::json;
use testkit::smtp::SmtpServer;

use crate::email_otp::{code, wrong};
use crate::helpers::{BASE_URL, TestApp};
use crate::mail::{link, one_mail, with_mail};

const PASSWORD: &str = "password-123";

async fn change(app: &TestApp, cookie: &str, new_email: &str) -> crate::helpers::Resp {
    app.post(
        "/api/auth/change-email",
        json!({ "newEmail": new_email }),
        Some(cookie),
    )
    .await
}

/// The address-verification link of mail number `count`, which went to `to`.
async fn verify_link_mailed_to(smtp: &SmtpServer, count: usize, to: &str) -> String {
    let mail = one_mail(smtp, count).await;
    assert_eq!(mail.rcpt_to, [to]);
    link(&mail, &format!("{BASE_URL}/api/auth/verify-email?token="))
}

/// Asserts that the address-change route `path` refuses someone not signed in.
async fn assert_needs_a_session(app: &TestApp, path: &str) {
    let anonymous = app
        .post(path, json!({ "newEmail": "x@example.com" }), None)
        .await;
    anonymous.assert_refused(401, "UNAUTHORIZED");
}

/// Asserts that the user signed in with `cookie` has the address `email`, verified or not.
async fn assert_email_is(app: &TestApp, cookie: &str, email: &str, verified: bool) {
    let session = app.get("/api/auth/get-session", Some(cookie)).await;
    let user = &session.body["user"];
    assert_eq!(
        (user["email"].as_str(), user["emailVerified"].as_bool()),
        (Some(email), Some(verified)),
        "{}",
        session.text
    );
}

#[tokio::test]
async fn an_unverified_address_changes_at_once_and_the_new_one_is_asked_to_verify() {
    let (app, smtp) = with_mail(&[]).await;
    let (cookie, _) = app.sign_up("old@example.com", PASSWORD).await;
    // A verification link mailed to the old address first.
    app.send_verification_email("old@example.com", Some(&cookie))
        .await
        .assert_status_true();
    let old_link = verify_link_mailed_to(&smtp, 1, "old@example.com").await;
    change(&app, &cookie, "New@Example.com")
        .await
        .assert_status_true();
    // That link no longer verifies anything: the address it was sent to is not the account's.
    app.get(old_link.strip_prefix(BASE_URL).expect("ours"), None)
        .await;
    assert_email_is(&app, &cookie, "new@example.com", false).await;
    let verify = verify_link_mailed_to(&smtp, 2, "new@example.com").await;
    let opened = app
        .get(verify.strip_prefix(BASE_URL).expect("ours"), None)
        .await;
    assert!(opened.status < 400, "{}", opened.text);
    assert_email_is(&app, &cookie, "new@example.com", true).await;
    assert_eq!(app.sign_in("old@example.com", PASSWORD).await.status, 401);
    assert_eq!(app.sign_in("new@example.com", PASSWORD).await.status, 200);
}

#[tokio::test]
async fn a_verified_address_changes_only_through_the_link_mailed_to_the_new_one() {
    let (app, smtp) = with_mail(&[]).await;
    let (cookie, _) = app.sign_up("vale@example.com", PASSWORD).await;
    app.sql("UPDATE auth.\"user\" SET email_verified = true");
    change(&app, &cookie, "vale.new@example.com")
        .await
        .assert_status_true();
    // Nothing changes until the new address proves itself.
    assert_email_is(&app, &cookie, "vale@example.com", true).await;
    let moved = verify_link_mailed_to(&smtp, 1, "vale.new@example.com").await;
    let path = moved.strip_prefix(BASE_URL).expect("ours").to_owned();
    let opened = app.get(&path, None).await;
    assert!(opened.status < 400, "{}", opened.text);
    assert_email_is(&app, &cookie, "vale.new@example.com", true).await;
    // The link works once.
    let again = app.get(&path, None).await;
    assert!(
        again.status >= 400
            || again
                .header("location")
                .is_some_and(|l| l.contains("error=")),
        "{} {:?}",
        again.status,
        again.header("location")
    );
    assert_eq!(
        app.sign_in("vale.new@example.com", PASSWORD).await.status,
        200
    );
}

#[tokio::test]
async fn an_address_in_use_gets_the_same_answer_and_no_mail() {
    let (app, smtp) = with_mail(&[]).await;
    app.sign_up("taken@example.com", PASSWORD).await;
    let (cookie, _) = app.sign_up("mover@example.com", PASSWORD).await;
    change(&app, &cookie, "taken@example.com")
        .await
        .assert_status_true();
    assert_email_is(&app, &cookie, "mover@example.com", false).await;
    assert!(smtp.wait_for(1, Duration::from_secs(2)).await.is_empty());

    let same = change(&app, &cookie, "Mover@example.com").await;
    assert_eq!(same.status_and_code(), (400, Some("EMAIL_IS_THE_SAME")));
    let bad = change(&app, &cookie, "not an address").await;
    assert_eq!(bad.status_and_code(), (400, Some("VALIDATION_ERROR")));
    assert_needs_a_session(&app, "/api/auth/change-email").await;
}

#[tokio::test]
async fn a_code_mailed_to_the_new_address_moves_the_account_there() {
    let (app, smtp) = with_mail(&[]).await;
    app.sign_up("taken@example.com", PASSWORD).await;
    let (cookie, _) = app.sign_up("coda@example.com", PASSWORD).await;
    app.sql("UPDATE auth.\"user\" SET email_verified = true");
    let request = |new_email: &'static str| {
        let (app, cookie) = (&app, cookie.clone());
        async move {
            app.post(
                "/api/auth/email-otp/request-email-change",
                json!({ "newEmail": new_email }),
                Some(&cookie),
            )
            .await
        }
    };
    let submit = |new_email: &'static str, otp: String| {
        let (app, cookie) = (&app, cookie.clone());
        async move {
            app.post(
                "/api/auth/email-otp/change-email",
                json!({ "newEmail": new_email, "otp": otp }),
                Some(&cookie),
            )
            .await
        }
    };
    // An address in use elsewhere: the same answer, and no mail.
    let taken = request("taken@example.com").await;
    taken.assert_success_true();
    assert!(smtp.wait_for(1, Duration::from_secs(2)).await.is_empty());

    let asked = request("coda.new@example.com").await;
    asked.assert_success_true();
    let mail = one_mail(&smtp, 1).await;
    assert_eq!(mail.rcpt_to, ["coda.new@example.com"]);
    let otp = code(&mail);
    let refused = submit("coda.new@example.com", wrong(&otp, 0)).await;
    assert_eq!(refused.status_and_code(), (400, Some("INVALID_OTP")));
    // The code is bound to the address it was sent to.
    let elsewhere = submit("other@example.com", otp.clone()).await;
    assert_eq!(elsewhere.status_and_code(), (400, Some("INVALID_OTP")));
    let moved = submit("coda.new@example.com", otp.clone()).await;
    moved.assert_success_true();
    assert_email_is(&app, &cookie, "coda.new@example.com", true).await;
    let again = submit("coda.new@example.com", otp).await;
    assert!(again.status >= 400, "{}", again.text);
    assert_needs_a_session(&app, "/api/auth/email-otp/request-email-change").await;
}
