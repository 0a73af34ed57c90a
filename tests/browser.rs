//! A person in a real browser: headless Chromium signs up through the `/sign-up` page (no
//! JavaScript involved) and lands signed in.

mod common;

use std::time::Duration;

use testkit::webdriver::ChromeDriver;

use common::start_stack;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_signs_up_through_the_page_and_lands_signed_in() {
    let stack = start_stack().await;
    let base = stack.base();
    let driver = ChromeDriver::start().await;
    let browser = driver.session().await;

    browser
        .goto(&format!("{base}/sign-up?callbackURL=/me"))
        .await;
    let page = browser.source().await;
    assert!(page.contains("Crea un account"), "{page}");

    browser.type_into("#name", "Chiara Browser").await;
    browser.type_into("#email", "chiara@example.com").await;
    browser.type_into("#password", "a-long-password").await;
    browser.click("form.credentials button[type=submit]").await;
    let landed = browser
        .wait_for_url(Duration::from_secs(15), |u| u.ends_with("/me"))
        .await;
    assert!(landed.ends_with("/me"), "landed on {landed}");
    let page = browser.source().await;
    assert!(
        page.contains("chiara@example.com"),
        "GET /me shows the signed-in user: {page}"
    );
    assert!(page.contains("Chiara Browser"));

    let cookies = browser.cookies().await;
    let session = cookies
        .iter()
        .find(|c| c["name"] == "digiuno.session_token")
        .unwrap_or_else(|| panic!("no session cookie in {cookies:?}"));
    assert_eq!(session["httpOnly"], true);
    assert_eq!(session["sameSite"], "Lax");
    browser.quit().await;

    // Someone else in another browser tries the same address: the server refuses and the page
    // says why, next to the form, keeping what was typed (never the password).
    let other = driver.session().await;
    other.goto(&format!("{base}/sign-up")).await;
    other.type_into("#name", "Impostor").await;
    other.type_into("#email", "CHIARA@example.com").await;
    other.type_into("#password", "another-password").await;
    other.click("form.credentials button[type=submit]").await;
    let back = other
        .wait_for_url(Duration::from_secs(15), |u| u.contains("error="))
        .await;
    assert!(
        back.contains("/sign-up?error=USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL"),
        "{back}"
    );
    let page = other.source().await;
    assert!(
        page.contains("Esiste già un account con questa e-mail"),
        "{page}"
    );
    assert!(page.contains(r#"value="CHIARA@example.com""#) && page.contains(r#"value="Impostor""#));
    assert!(!page.contains("another-password"));
    assert!(
        other
            .cookies()
            .await
            .iter()
            .all(|c| c["name"] != "digiuno.session_token")
    );
    other.quit().await;
}

/// Each service's `/docs` page renders every operation of its `/openapi.json` in Chromium, and
/// everything the page loads comes from the service itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_renders_each_services_api_reference_from_loopback_only() {
    let stack = start_stack().await;
    let driver = ChromeDriver::start().await;
    let browser = driver.session().await;
    let http = testkit::http::client();
    for port in stack.ports {
        let origin = format!("http://127.0.0.1:{port}");
        let doc: serde_json::Value = http
            .get(format!("{origin}/openapi.json"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let operations: usize = doc["paths"]
            .as_object()
            .unwrap()
            .values()
            .map(|item| {
                ["get", "put", "post", "patch", "delete", "head"]
                    .iter()
                    .filter(|m| item.get(**m).is_some())
                    .count()
            })
            .sum();

        browser.goto(&format!("{origin}/docs")).await;
        let deadline = std::time::Instant::now() + Duration::from_secs(15);
        let rendered = loop {
            let n = browser
                .execute("return document.body.getAttribute('data-rendered');")
                .await;
            if let Some(n) = n.as_str() {
                break n.parse::<usize>().unwrap();
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{origin}/docs did not render: {}",
                browser.source().await
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert_eq!(
            rendered, operations,
            "{origin}/docs renders every operation"
        );
        let title = doc["info"]["title"].as_str().unwrap();
        assert!(browser.source().await.contains(title));

        let loaded = browser
            .execute(
                "return performance.getEntriesByType('resource').map(e => e.name)\
                 .concat([location.href]);",
            )
            .await;
        let loaded: Vec<String> = serde_json::from_value(loaded).unwrap();
        assert!(
            loaded.iter().any(|u| u.ends_with("/openapi.json")),
            "{loaded:?}"
        );
        for url in &loaded {
            assert!(
                url.starts_with(&format!("{origin}/")),
                "{origin}/docs loaded {url}, which is not the service"
            );
        }
    }
    browser.quit().await;
}
