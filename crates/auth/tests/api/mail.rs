//! The mails of section 5 through the real outbox to the test kit's SMTP server: the reset link
//! works once, verification marks the address, the same answer for every address, and the rate
//! limits of the mail routes.

use std::time::{Duration, Instant};

use serde_json::json;
use testkit::smtp::{Received, SmtpServer};

use crate::helpers::{BASE_URL, TestApp, get, send, spawn_nutrition, spawn_with};

const PASSWORD: &str = "password-123";

pub(crate) async fn with_mail(extra: &[(&str, &str)]) -> (TestApp, SmtpServer) {
    let smtp = SmtpServer::start().await.expect("smtp");
    let mut env: Vec<(String, String)> = vec![
        ("SMTP_URL".into(), smtp.url()),
        ("MAIL_FROM".into(), "Digiuno <no-reply@example.com>".into()),
    ];
    env.extend(
        extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    (spawn_with(&env).await, smtp)
}

/// The body of a mail with quoted-printable soft breaks and escapes undone, so that a link reads
/// as one piece whatever transfer encoding the mail used for it.
pub(crate) fn readable(msg: &Received) -> String {
    let raw = msg.data.replace("=\r\n", "");
    let mut out = String::with_capacity(raw.len());
    let bytes = raw.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'='
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(&raw[i + 1..i + 3], 16)
        {
            out.push(char::from(b));
            i += 3;
            continue;
        }
        out.push(char::from(bytes[i]));
        i += 1;
    }
    out
}

/// The first link in `msg` starting with `prefix`.
pub(crate) fn link(msg: &Received, prefix: &str) -> String {
    let text = readable(msg);
    let start = text
        .find(prefix)
        .unwrap_or_else(|| panic!("no {prefix} in the mail:\n{text}"));
    text[start..]
        .chars()
        .take_while(|c| !c.is_whitespace() && !matches!(c, '"' | '<' | '>' | '\''))
        .collect()
}

/// `link` without `BASE_URL`, to request from the test server.
fn path_of(link: &str) -> String {
    link.strip_prefix(BASE_URL)
        .expect("a link on AUTH_BASE_URL")
        .to_owned()
}

pub(crate) async fn one_mail(smtp: &SmtpServer, count: usize) -> Received {
    let all = smtp.wait_for(count, Duration::from_secs(20)).await;
    assert_eq!(all.len(), count, "mails: {all:?}");
    all[count - 1].clone()
}

#[tokio::test]
async fn the_reset_mail_arrives_and_its_link_works_once() {
    let (app, smtp) = with_mail(&[]).await;
    let api = spawn_nutrition(&app).await;
    let me = format!("{}/me", api.base);
    let (cookie, _) = app.sign_up("nora@example.com", PASSWORD).await;
    let resp = app
        .post(
            "/api/auth/request-password-reset",
            json!({ "email": "Nora@Example.com", "redirectTo": "/reset-password" }),
            None,
        )
        .await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    assert_eq!(
        resp.body,
        json!({ "status": true, "message": "If this email exists in our system, check your email for the reset link" })
    );
    let mail = one_mail(&smtp, 1).await;
    assert_eq!(mail.rcpt_to, ["nora@example.com"]);
    let link = link(&mail, &format!("{BASE_URL}/api/auth/reset-password/"));
    let opened = app.get(&path_of(&link), None).await;
    assert_eq!(opened.status, 302);
    let page = opened.header("location").expect("location");
    assert!(page.starts_with("/reset-password?token="), "{page}");
    let token = page.trim_start_matches("/reset-password?token=").to_owned();
    assert!(app.get(&page, None).await.text.contains(&token));

    let resp = app.reset_password(&token, "chosen-anew-1").await;
    resp.assert_status_true();
    assert_eq!(get(&app.http, &me, Some(&cookie)).await.status, 401);
    let again = app.reset_password(&token, "chosen-anew-2").await;
    assert_eq!(again.status_and_code(), (400, Some("INVALID_TOKEN")));
    let reopened = app.get(&path_of(&link), None).await;
    assert_eq!(
        reopened.header("location").as_deref(),
        Some("/reset-password?error=INVALID_TOKEN")
    );
    let signed_in = app.sign_in("nora@example.com", "chosen-anew-1").await;
    assert_eq!(signed_in.status, 200);
}

#[tokio::test]
async fn unknown_addresses_get_the_same_answer_in_the_same_time() {
    let (app, smtp) = with_mail(&[]).await;
    app.sign_up("known@example.com", PASSWORD).await;
    let (mut known, mut unknown) = (Vec::new(), Vec::new());
    let mut bodies = Vec::new();
    for i in 0..4 {
        for (email, times) in [
            ("known@example.com", &mut known),
            ("nobody@example.com", &mut unknown),
        ] {
            let start = Instant::now();
            let resp = app.request_password_reset(email).await;
            times.push(start.elapsed());
            assert_eq!(resp.status, 200, "{i} {email}: {}", resp.text);
            bodies.push(resp.body);
        }
    }
    assert!(
        bodies.windows(2).all(|w| w[0] == w[1]),
        "one body for all: {bodies:?}"
    );
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (k, u) = (median(&mut known), median(&mut unknown));
    assert!(
        k >= Duration::from_millis(300) && u >= Duration::from_millis(300),
        "{k:?} {u:?}"
    );
    let gap = k.abs_diff(u);
    assert!(
        gap < Duration::from_millis(100),
        "known {k:?} unknown {u:?}"
    );
    let mails = smtp.wait_for(4, Duration::from_secs(20)).await;
    assert!(
        mails.iter().all(|m| m.rcpt_to == ["known@example.com"]),
        "{mails:?}"
    );
}

#[tokio::test]
async fn mail_routes_are_rate_limited_with_both_headers() {
    let (app, _smtp) = with_mail(&[
        ("AUTH_MAIL_RATE_LIMIT_MAX", "2"),
        ("AUTH_MAIL_RATE_LIMIT_WINDOW_SECS", "60"),
    ])
    .await;
    let (cookie, _) = app.sign_up("lim@example.com", PASSWORD).await;
    for path_body in [
        (
            "/api/auth/request-password-reset",
            json!({ "email": "lim@example.com" }),
            None,
        ),
        (
            "/api/auth/send-verification-email",
            json!({ "email": "lim@example.com" }),
            Some(cookie.as_str()),
        ),
    ] {
        let (path, body, cookie) = path_body;
        for _ in 0..2 {
            assert_eq!(
                app.post(path, body.clone(), cookie).await.status,
                200,
                "{path}"
            );
        }
        let limited = app.post(path, body, cookie).await;
        assert_eq!(
            limited.status_and_code(),
            (429, Some("RATE_LIMITED")),
            "{path}"
        );
        let retry = limited.header("retry-after").expect("Retry-After");
        assert_eq!(limited.header("x-retry-after"), Some(retry), "{path}");
    }
}

#[tokio::test]
async fn verification_mail_marks_the_address_verified() {
    let (app, smtp) = with_mail(&[]).await;
    let (cookie, _) = app.sign_up("vito@example.com", PASSWORD).await;
    let mismatch = app
        .send_verification_email("else@example.com", Some(&cookie))
        .await;
    assert_eq!(
        (mismatch.status, &mismatch.body),
        (
            400,
            &json!({ "code": "EMAIL_MISMATCH", "message": "Email mismatch" })
        )
    );
    let resp = app
        .post(
            "/api/auth/send-verification-email",
            json!({ "email": "vito@example.com", "callbackURL": "/plan" }),
            Some(&cookie),
        )
        .await;
    resp.assert_status_true();
    let mail = one_mail(&smtp, 1).await;
    assert_eq!(mail.rcpt_to, ["vito@example.com"]);
    let link = link(&mail, &format!("{BASE_URL}/api/auth/verify-email?token="));
    let opened = app.get(&path_of(&link), None).await;
    assert_eq!(
        (opened.status, opened.header("location").as_deref()),
        (302, Some("/plan"))
    );
    let user = app.get("/api/auth/get-session", Some(&cookie)).await.body["user"].clone();
    assert_eq!(user["emailVerified"], true);
    let again = app.get(&path_of(&link), None).await;
    assert_eq!(
        again.header("location").as_deref(),
        Some("/plan?error=INVALID_TOKEN")
    );
    let verified = app
        .send_verification_email("vito@example.com", Some(&cookie))
        .await;
    assert_eq!(
        verified.body,
        json!({ "code": "EMAIL_ALREADY_VERIFIED", "message": "Email is already verified" })
    );
    // Without a session: the same 200 for a verified, an unknown and an unverified address, and a
    // mail only for the last.
    app.sign_up("una@example.com", PASSWORD).await;
    for email in ["vito@example.com", "ghost@example.com", "una@example.com"] {
        let resp = app.send_verification_email(email, None).await;
        assert_eq!(
            (resp.status, &resp.body),
            (200, &json!({ "status": true })),
            "{email}"
        );
    }
    let mail = one_mail(&smtp, 2).await;
    assert_eq!(mail.rcpt_to, ["una@example.com"]);
}

#[tokio::test]
async fn unverified_sign_in_is_refused_and_mails_a_new_link() {
    let (app, smtp) = with_mail(&[("AUTH_REQUIRE_EMAIL_VERIFICATION", "true")]).await;
    let resp = app.try_sign_up("Ines", "ines@example.com", PASSWORD).await;
    assert_eq!(resp.status, 200);
    assert!(resp.body["token"].is_null());
    one_mail(&smtp, 1).await;
    let sign_in = json!({ "email": "ines@example.com", "password": PASSWORD });
    let refused = app
        .post("/api/auth/sign-in/email", sign_in.clone(), None)
        .await;
    assert_eq!(refused.status_and_code(), (403, Some("EMAIL_NOT_VERIFIED")));
    let mail = one_mail(&smtp, 2).await;
    let link = link(&mail, &format!("{BASE_URL}/api/auth/verify-email?token="));
    assert_eq!(app.get(&path_of(&link), None).await.status, 302);
    let resp = app.post("/api/auth/sign-in/email", sign_in, None).await;
    assert_eq!(resp.status, 200, "{}", resp.text);
}

#[tokio::test]
async fn the_forgot_password_page_posts_a_form() {
    let (app, smtp) = with_mail(&[]).await;
    app.sign_up("fede@example.com", PASSWORD).await;
    let sign_in = app.get("/sign-in", None).await;
    assert!(sign_in.text.contains(r#"href="/forgot-password""#));
    let page = app.get("/forgot-password", None).await;
    assert!(
        page.text
            .contains(r#"action="/api/auth/request-password-reset""#)
    );
    let resp = send(
        app.http
            .post(app.url("/api/auth/request-password-reset"))
            .header("origin", BASE_URL)
            .form(&[("email", "fede@example.com")]),
    )
    .await;
    assert_eq!(
        (resp.status, resp.header("location").as_deref()),
        (
            303,
            Some("/forgot-password?sent=1&email=fede%40example.com")
        )
    );
    let sent = app
        .get("/forgot-password?sent=1&email=fede%40example.com", None)
        .await;
    assert!(sent.text.contains("riceverai"));
    // The same page takes the mail's code instead of its link.
    assert!(
        sent.text
            .contains(r#"action="/api/auth/email-otp/reset-password""#)
    );
    assert!(sent.text.contains(r#"value="fede@example.com""#));
    let mail = one_mail(&smtp, 1).await;
    let link = link(&mail, &format!("{BASE_URL}/api/auth/reset-password/"));
    let opened = app.get(&path_of(&link), None).await;
    assert!(
        opened
            .header("location")
            .is_some_and(|l| l.starts_with("/reset-password?token="))
    );
}

async fn reset_from(app: &TestApp, email: &str, client_ip: &str) -> u16 {
    app.http
        .post(format!("{}/api/auth/request-password-reset", app.base))
        .header("x-forwarded-for", client_ip)
        .json(&json!({ "email": email }))
        .send()
        .await
        .expect("POST")
        .status()
        .as_u16()
}

/// Someone asking again and again for another person's reset spends only their own client's
/// budget: the person asking from elsewhere still gets the mail. What one address can be sent
/// is capped per day instead, so that nobody can flood a person's inbox either.
#[tokio::test]
async fn nobody_can_block_another_persons_reset_and_mails_per_address_are_capped() {
    let (app, _smtp) = with_mail(&[
        ("AUTH_MAIL_RATE_LIMIT_MAX", "3"),
        ("AUTH_MAIL_RATE_LIMIT_WINDOW_SECS", "60"),
        ("TRUSTED_PROXIES", "127.0.0.1"),
    ])
    .await;
    app.sign_up("target@example.com", PASSWORD).await;
    let queued = || app.count("auth.mail_outbox WHERE kind = 'password_reset'");
    for _ in 0..3 {
        assert_eq!(
            reset_from(&app, "target@example.com", "203.0.113.5").await,
            200
        );
    }
    assert_eq!(
        reset_from(&app, "target@example.com", "203.0.113.5").await,
        429
    );
    // The person, from their own device.
    assert_eq!(
        reset_from(&app, "target@example.com", "198.51.100.7").await,
        200
    );
    assert_eq!(queued(), 4);
    // From many addresses, no more than 10 mails a day reach one address; the answers stay the
    // same, so they tell nothing either.
    for i in 0..10 {
        assert_eq!(
            reset_from(&app, "target@example.com", &format!("192.0.2.{}", 10 + i)).await,
            200
        );
    }
    assert_eq!(queued(), 10);
}
