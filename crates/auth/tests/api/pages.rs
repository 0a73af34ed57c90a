//! The sign-in and sign-up pages and their no-JavaScript form flow.

use testkit::oauth::FakeOAuth;

use crate::helpers::{BASE_URL, read, spawn_app, spawn_with};

#[tokio::test]
async fn pages_without_a_provider_have_no_social_button_or_divider() {
    let app = spawn_app().await;
    for path in ["/sign-in", "/sign-up"] {
        let page = app.get(path, None).await;
        assert_eq!(page.status, 200);
        assert!(
            page.header("content-type")
                .is_some_and(|c| c.starts_with("text/html"))
        );
        assert!(page.header("content-security-policy").is_some());
        assert!(
            page.text
                .contains(r#"<form method="post" action="/api/auth/sign-"#),
            "{path}"
        );
        assert!(!page.text.contains("Google"), "{path}");
        assert!(!page.text.contains(r#"class="divider""#), "{path}");
        assert!(!page.text.contains("sign-in/social"), "{path}");
    }
}

#[tokio::test]
async fn pages_with_google_show_the_button_and_the_divider() {
    let fake = FakeOAuth::start().await;
    let app = spawn_with(&fake.env()).await;
    for path in ["/sign-in", "/sign-up"] {
        let page = app.get(path, None).await;
        assert!(page.text.contains("Continua con Google"), "{path}");
        assert!(page.text.contains(r#"class="divider""#), "{path}");
        assert!(
            page.text.contains(r#"action="/api/auth/sign-in/social""#),
            "{path}"
        );
        let csp = page.header("content-security-policy").expect("csp");
        assert!(
            csp.contains(&fake.base),
            "the form may continue to the provider: {csp}"
        );
    }
}

#[tokio::test]
async fn errors_are_shown_inline_and_escaped() {
    let app = spawn_app().await;
    let page = app
        .get("/sign-in?error=INVALID_EMAIL_OR_PASSWORD&email=%22%3E%3Cscript%3Ealert(1)%3C%2Fscript%3E", None)
        .await;
    assert!(page.text.contains(r#"role="alert""#));
    assert!(page.text.contains("E-mail o password non corretti."));
    assert!(!page.text.contains("<script>"), "user input is escaped");
    assert!(page.text.contains("&quot;&gt;&lt;script&gt;"));
}

#[tokio::test]
async fn form_sign_up_redirects_signed_in_and_errors_go_back_to_the_page() {
    let app = spawn_app().await;
    let post = |path: &str, form: &[(&str, &str)]| {
        let req = app
            .http
            .post(app.url(path))
            .header("origin", BASE_URL)
            .form(form);
        async move { read(req.send().await.expect("POST")).await }
    };
    let short = post(
        "/api/auth/sign-up/email",
        &[
            ("name", "Pia"),
            ("email", "pia@example.com"),
            ("password", "short"),
            ("rememberMe", "true"),
        ],
    )
    .await;
    assert_eq!(short.status, 303);
    let location = short.header("location").expect("location");
    assert!(
        location.starts_with("/sign-up?error=PASSWORD_TOO_SHORT&name=Pia&email=pia%40example.com"),
        "{location}"
    );
    assert!(!location.contains("short"), "the password is never echoed");

    let ok = post(
        "/api/auth/sign-up/email",
        &[
            ("name", "Pia"),
            ("email", "pia@example.com"),
            ("password", "long-enough"),
            ("rememberMe", "true"),
            ("callbackURL", "/me"),
        ],
    )
    .await;
    assert_eq!(ok.status, 303);
    assert_eq!(ok.header("location").as_deref(), Some("/me"));
    let cookie = ok.session_cookie().expect("signed in");
    assert!(
        ok.session_set_cookie()
            .is_some_and(|c| c.contains("Max-Age=604800"))
    );
    assert_eq!(
        app.get("/api/auth/get-session", Some(&cookie)).await.body["user"]["email"],
        "pia@example.com"
    );

    let wrong = post(
        "/api/auth/sign-in/email",
        &[("email", "pia@example.com"), ("password", "nope-nope")],
    )
    .await;
    assert_eq!(wrong.status, 303);
    assert_eq!(
        wrong.header("location").as_deref(),
        Some("/sign-in?error=INVALID_EMAIL_OR_PASSWORD&email=pia%40example.com")
    );
    let right = post(
        "/api/auth/sign-in/email",
        &[("email", "pia@example.com"), ("password", "long-enough")],
    )
    .await;
    assert_eq!(right.status, 303);
    assert_eq!(right.header("location").as_deref(), Some("/"));
    let set = right.session_set_cookie().expect("cookie");
    assert!(
        !set.contains("Max-Age"),
        "an unticked 'remember me' gives a browser-session cookie"
    );
}
