//! Italian and English: the language a sign-up keeps (from `Accept-Language`), the mails written
//! in the recipient's language, and the pages in the language of whoever reads them.

use serde_json::json;
use testkit::smtp::Received;

use crate::email_otp::code;
use crate::helpers::{TestApp, read, send};
use crate::mail::{one_mail, readable, with_mail};

const PASSWORD: &str = "password-123";

/// `POST /api/auth/sign-up/email` with `Accept-Language` when given.
async fn sign_up_in(app: &TestApp, email: &str, accept: Option<&str>) -> u16 {
    let mut req = app
        .http
        .post(app.url("/api/auth/sign-up/email"))
        .json(&json!({ "name": "Lea", "email": email, "password": PASSWORD }));
    if let Some(a) = accept {
        req = req.header("accept-language", a);
    }
    send(req).await.status
}

fn locale_of(app: &TestApp, email: &str) -> Option<String> {
    app.scalar(&format!(
        "SELECT locale AS v FROM auth.\"user\" WHERE email = '{email}'"
    ))
}

fn subject(mail: &Received) -> String {
    mail.header("subject").unwrap_or_default()
}

#[tokio::test]
async fn sign_up_keeps_the_first_known_language_and_mails_in_it() {
    let (app, smtp) = with_mail(&[("AUTH_REQUIRE_EMAIL_VERIFICATION", "true")]).await;

    assert_eq!(
        sign_up_in(&app, "emma@example.com", Some("en-US,en;q=0.9")).await,
        200
    );
    assert_eq!(locale_of(&app, "emma@example.com").as_deref(), Some("en"));
    let mail = one_mail(&smtp, 1).await;
    assert_eq!(subject(&mail), "Confirm your email address");
    let body = readable(&mail);
    assert!(body.contains("Hello Lea,"), "{body}");
    assert!(body.contains("<html lang=\"en\">"), "{body}");
    assert!(!body.contains("Ciao"), "{body}");

    assert_eq!(
        sign_up_in(&app, "franco@example.com", Some("fr, it;q=0.5")).await,
        200
    );
    assert_eq!(locale_of(&app, "franco@example.com").as_deref(), Some("it"));
    let mail = one_mail(&smtp, 2).await;
    assert_eq!(subject(&mail), "Conferma il tuo indirizzo e-mail");
    assert!(readable(&mail).contains("Ciao Lea,"));

    assert_eq!(sign_up_in(&app, "nessuno@example.com", None).await, 200);
    assert_eq!(
        locale_of(&app, "nessuno@example.com").as_deref(),
        Some("it")
    );
    assert_eq!(
        subject(&one_mail(&smtp, 3).await),
        "Conferma il tuo indirizzo e-mail"
    );

    // Whatever a header says, it is read, never refused.
    for (i, odd) in [";;,,q=,en;q=abc", "en;q=2", "*", "fr-\u{e9}, en"]
        .into_iter()
        .enumerate()
    {
        let email = format!("odd{i}@example.com");
        let req = app
            .http
            .post(app.url("/api/auth/sign-up/email"))
            .header(
                "accept-language",
                reqwest::header::HeaderValue::from_bytes(odd.as_bytes()).expect("header"),
            )
            .json(&json!({ "name": "Odd", "email": email, "password": PASSWORD }));
        assert_eq!(send(req).await.status, 200, "{odd:?}");
        assert_eq!(locale_of(&app, &email).as_deref(), Some("it"), "{odd:?}");
    }
}

#[tokio::test]
async fn later_mails_follow_the_account_not_the_request() {
    let (app, smtp) = with_mail(&[]).await;
    assert_eq!(
        sign_up_in(&app, "grace@example.com", Some("en-GB")).await,
        200
    );
    // Asked for from an Italian browser: the account's language still wins.
    let resp = send(
        app.http
            .post(app.url("/api/auth/email-otp/request-password-reset"))
            .header("accept-language", "it-IT")
            .json(&json!({ "email": "grace@example.com" })),
    )
    .await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    let mail = one_mail(&smtp, 1).await;
    assert_eq!(subject(&mail), "Your code to reset your password");
    let body = readable(&mail);
    assert!(
        body.contains("The code is valid for 5 minutes. Do not share it with anyone."),
        "{body}"
    );
}

#[tokio::test]
async fn a_code_sign_up_mails_and_keeps_the_browser_language() {
    let (app, smtp) = with_mail(&[]).await;
    let resp = send(
        app.http
            .post(app.url("/api/auth/email-otp/send-verification-otp"))
            .header("accept-language", "en-US,en;q=0.9,it;q=0.8")
            .json(&json!({ "email": "otto@example.com", "type": "sign-in" })),
    )
    .await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    let mail = one_mail(&smtp, 1).await;
    assert_eq!(subject(&mail), "Your sign-in code");
    assert!(readable(&mail).contains("Hello,"));
    let otp = code(&mail);
    let resp = send(
        app.http
            .post(app.url("/api/auth/sign-in/email-otp"))
            .header("accept-language", "en")
            .json(&json!({ "email": "otto@example.com", "otp": otp })),
    )
    .await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    assert_eq!(locale_of(&app, "otto@example.com").as_deref(), Some("en"));
}

async fn page(app: &TestApp, path: &str, accept: Option<&str>, cookie: Option<&str>) -> String {
    let mut req = app.http.get(app.url(path));
    if let Some(a) = accept {
        req = req.header("accept-language", a);
    }
    if let Some(c) = cookie {
        req = req.header("cookie", c);
    }
    let resp = read(req.send().await.expect("GET")).await;
    assert_eq!(resp.status, 200, "{path}: {}", resp.text);
    resp.text
}

#[tokio::test]
async fn anonymous_pages_follow_the_query_then_the_browser() {
    let (app, _smtp) = with_mail(&[]).await;
    let english = page(&app, "/sign-in?lang=en", None, None).await;
    assert!(english.contains(r#"<html lang="en">"#), "{english}");
    assert!(english.contains("<h1>Sign in</h1>"), "{english}");
    assert!(english.contains("Forgot your password?"), "{english}");
    assert!(!english.contains("Accedi"), "{english}");

    let english = page(&app, "/sign-in", Some("en"), None).await;
    assert!(english.contains(r#"<html lang="en">"#));
    assert!(english.contains("<h1>Sign in</h1>"));

    // The query wins over the browser, both ways.
    let italian = page(&app, "/sign-in?lang=it", Some("en"), None).await;
    assert!(italian.contains(r#"<html lang="it">"#));
    assert!(italian.contains("<h1>Accedi</h1>"));
    let english = page(&app, "/sign-up?lang=en", Some("it"), None).await;
    assert!(english.contains("<h1>Create an account</h1>"), "{english}");

    for (path, accept) in [
        ("/sign-in", None),
        ("/sign-in?lang=fr", Some("de, fr;q=0.5")),
        ("/sign-in?lang=", Some(";;q=")),
    ] {
        let italian = page(&app, path, accept, None).await;
        assert!(italian.contains(r#"<html lang="it">"#), "{path}");
        assert!(italian.contains("<h1>Accedi</h1>"), "{path}");
    }

    // Every page auth writes, in English, with its errors.
    for path in [
        "/sign-in?with=code&lang=en",
        "/sign-in?with=code&sent=1&email=a%40example.com&lang=en",
        "/sign-up?lang=en&error=INVALID_EMAIL",
        "/two-factor?lang=en",
        "/two-factor?backup=1&lang=en",
        "/forgot-password?lang=en",
        "/forgot-password?sent=1&lang=en",
        "/reset-password?token=abc&lang=en",
        "/reset-password?lang=en",
        "/api/auth/not-me?token=nothing&lang=en",
    ] {
        let english = page(&app, path, None, None).await;
        assert!(english.contains(r#"<html lang="en">"#), "{path}");
        for italian in [
            "Accedi",
            "codice",
            "Codice",
            "password dimenticata",
            "Nuova",
            "Torna",
            "Questo link",
            "non è",
        ] {
            assert!(!english.contains(italian), "{path}: {italian}\n{english}");
        }
    }
    let error = page(&app, "/sign-up?lang=en&error=INVALID_EMAIL", None, None).await;
    assert!(error.contains("The email address is not valid."), "{error}");
}

#[tokio::test]
async fn a_signed_in_page_follows_the_account() {
    let app = crate::helpers::spawn_app().await;
    let resp = send(
        app.http
            .post(app.url("/api/auth/sign-up/email"))
            .header("accept-language", "en")
            .json(&json!({ "name": "Ada", "email": "ada@example.com", "password": PASSWORD })),
    )
    .await;
    let cookie = resp.session_cookie().expect("signed in");
    let english = page(&app, "/forgot-password", Some("it"), Some(&cookie)).await;
    assert!(english.contains(r#"<html lang="en">"#), "{english}");
    assert!(
        english.contains("<h1>Forgot your password?</h1>"),
        "{english}"
    );
}
