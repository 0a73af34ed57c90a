//! The seat page buyers open from their e-mail (contract section 12): the mailed link, the list
//! of installations, the release form under the deactivation limit, forged and expired links,
//! the request for fresh links, both languages, and logs that never hold a link.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use licence_server::clock::Clock;
use licence_server::seat_links::Links;
use serde_json::{Value, json};

use crate::helpers::{
    DOWNLOAD_KEY, TestApp, VARIANT_PRO, assert_error, base_env, insert_licence, order_created,
    spawn_app,
};

/// The message with quoted-printable soft line breaks and `=3D` undone, enough to search it.
fn soft_decoded(data: &str) -> String {
    data.replace("=\r\n", "").replace("=3D", "=")
}

/// The seat links of a mail, as addresses of the test's service (the mail names
/// `PUBLIC_BASE_URL`).
fn links_in(data: &str, base: &str) -> Vec<String> {
    let text = soft_decoded(data);
    let mut found: Vec<String> = text
        .match_indices("http://127.0.0.1:8083/licence/manage?t=")
        .map(|(at, _)| {
            let rest = &text[at..];
            let end = rest
                .find(|c: char| c.is_whitespace() || c == '"' || c == '<')
                .unwrap_or(rest.len());
            rest[..end].replace("http://127.0.0.1:8083", base)
        })
        .collect();
    found.sort();
    found.dedup();
    found
}

/// A purchase by `email` through the webhook; its licence key and the seat link of its mail.
async fn purchase(app: &TestApp, order: u64, email: &str) -> (String, String) {
    let before = app.smtp.messages().len();
    let (s, b) = app.webhook(&order_created(order, VARIANT_PRO, email)).await;
    assert_eq!(s, 200, "{b}");
    let key = app.key_of_order(&order.to_string()).expect("a licence");
    let mails = app.smtp.wait_for(before + 1, Duration::from_secs(10)).await;
    let mail = mails.last().expect("the licence mail");
    let link = links_in(&mail.data, &app.base)
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no seat link in {}", mail.data));
    (key, link)
}

async fn activate_named(app: &TestApp, key: &str, instance: &str, name: &str) {
    let (s, b) = app
        .post(
            "/api/license/activate",
            &json!({"licenseKey": key, "instanceId": instance, "instanceName": name}),
            None,
        )
        .await;
    assert_eq!(s, 200, "{b}");
}

/// `GET url` with `Accept-Language`; status, headers and the page.
async fn open(
    app: &TestApp,
    url: &str,
    language: Option<&str>,
) -> (u16, reqwest::header::HeaderMap, String) {
    let mut req = app.client.get(url);
    if let Some(l) = language {
        req = req.header("accept-language", l);
    }
    let resp = req.send().await.expect("GET");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    (status, headers, resp.text().await.expect("page"))
}

/// The hidden fields of each release form of a page.
fn release_forms(html: &str) -> Vec<HashMap<String, String>> {
    html.split(r#"<form method="post" action="/licence/manage/release">"#)
        .skip(1)
        .map(|form| {
            let form = form.split("</form>").next().unwrap_or_default();
            form.split("<input type=\"hidden\" name=\"")
                .skip(1)
                .filter_map(|input| {
                    let (name, rest) = input.split_once('"')?;
                    let value = rest.split_once("value=\"")?.1.split_once('"')?.0;
                    Some((name.to_owned(), value.replace("&amp;", "&")))
                })
                .collect()
        })
        .collect()
}

fn form_of<'a>(
    forms: &'a [HashMap<String, String>],
    instance: &str,
) -> &'a HashMap<String, String> {
    forms
        .iter()
        .find(|f| f.get("instance").map(String::as_str) == Some(instance))
        .unwrap_or_else(|| panic!("no release form for {instance}: {forms:?}"))
}

/// Posts a release form to the service at `base`; status, headers and the page.
async fn post_form(
    app: &TestApp,
    base: &str,
    fields: &HashMap<String, String>,
) -> (u16, reqwest::header::HeaderMap, String) {
    let body: String = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields.iter())
        .finish();
    let resp = app
        .client
        .post(format!("{base}/licence/manage/release"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .expect("POST");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    (status, headers, resp.text().await.expect("page"))
}

fn links_of(base: &url::Url) -> Links<'_> {
    Links {
        base,
        secret: DOWNLOAD_KEY.as_bytes(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_buyer_releases_a_seat_from_the_page_of_the_mailed_link() {
    let app = spawn_app().await;
    let (key, link) = purchase(&app, 9101, "seat.buyer@example.com").await;
    activate_named(&app, &key, "office-pc", "Office <PC>").await;
    activate_named(&app, &key, "home-mac", "Home Mac").await;

    let (s, headers, html) = open(&app, &link, None).await;
    assert_eq!(s, 200, "{html}");
    let header = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    assert!(header("content-type").starts_with("text/html"));
    assert_eq!(header("cache-control"), "no-store");
    assert_eq!(header("referrer-policy"), "no-referrer");
    let csp = header("content-security-policy");
    assert!(
        csp.contains("default-src 'none'") && csp.contains("form-action 'self'"),
        "{csp}"
    );
    assert!(
        !csp.contains("unsafe") && !csp.contains("script-src"),
        "{csp}"
    );
    assert!(!html.contains("<script"), "no script at all");
    assert!(
        html.contains("Office &lt;PC&gt;"),
        "names are escaped: {html}"
    );
    assert!(html.contains("Home Mac"));
    let forms = release_forms(&html);
    assert_eq!(forms.len(), 2, "one release form per seat");

    let (s, _, after) = post_form(&app, &app.base, form_of(&forms, "office-pc")).await;
    assert_eq!(s, 200, "{after}");
    assert!(after.contains("class=\"notice\""), "{after}");
    assert!(
        !after.contains("name=\"instance\" value=\"office-pc\""),
        "{after}"
    );
    assert_eq!(release_forms(&after).len(), 1);

    // The released installation is out, as after the API's deactivate.
    let (s, b) = app.validate(&key, "office-pc").await;
    assert_error(s, &b, 403, "INSTANCE_NOT_ACTIVE");
    let (s, b) = app.validate(&key, "home-mac").await;
    assert_eq!(s, 200, "{b}");
    // The same form again finds nothing to release.
    let (s, _, again) = post_form(&app, &app.base, form_of(&forms, "office-pc")).await;
    assert_eq!(s, 404, "{again}");

    // A form whose CSRF value is not the page's changes nothing.
    let mut forged = form_of(&forms, "home-mac").clone();
    forged.insert(
        "csrf".into(),
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA".into(),
    );
    let (s, _, page) = post_form(&app, &app.base, &forged).await;
    assert_eq!(s, 403, "{page}");
    let mut moved = form_of(&forms, "home-mac").clone();
    moved.insert("n".into(), "another-page".into());
    assert_eq!(post_form(&app, &app.base, &moved).await.0, 403);
    assert_eq!(app.validate(&key, "home-mac").await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_link_is_refused_with_a_page() {
    let app = spawn_app().await;
    let licence = insert_licence(&mut app.conn(), "pro", "active");
    activate_named(&app, &licence.license_key, "desk", "Desk").await;
    let base_url = url::Url::parse("http://127.0.0.1:8083").expect("url");
    let links = links_of(&base_url);
    let now = app.clock.now();
    let good = links.token(licence.id.as_str(), &licence.customer_email, now);
    let (s, _, html) = open(&app, &format!("{}/licence/manage?t={good}", app.base), None).await;
    assert_eq!(s, 200, "{html}");
    let forms = release_forms(&html);

    let other_secret = Links {
        base: &base_url,
        secret: b"another-download-key-0123456789abcdef",
    };
    let mut flipped = good.clone();
    let last = flipped.pop().expect("a character");
    flipped.push(if last == 'A' { 'B' } else { 'A' });
    let (id, rest) = good.split_once('.').expect("id");
    let (expires, mac) = rest.split_once('.').expect("expiry");
    let later = format!("{id}.{}.{mac}", expires.parse::<i64>().expect("n") + 86_400);
    let other_licence = insert_licence(&mut app.conn(), "pro", "active");
    let swapped = format!("{}.{expires}.{mac}", other_licence.id.as_str());
    for forged in [
        flipped,
        later,
        swapped,
        other_secret.token(licence.id.as_str(), &licence.customer_email, now),
        links.token(licence.id.as_str(), "someone.else@example.com", now),
        links.token("no-such-licence", &licence.customer_email, now),
        "garbage".to_owned(),
        "%00%ff".to_owned(),
        "x".repeat(5000),
        String::new(),
    ] {
        let (s, headers, html) = open(
            &app,
            &format!("{}/licence/manage?t={forged}", app.base),
            None,
        )
        .await;
        assert_eq!(s, 403, "{forged}: {html}");
        assert!(
            headers
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with("text/html"))
        );
        assert!(html.contains("Link non valido"), "{html}");
        assert!(
            html.contains("action=\"/licence/manage/link\""),
            "offers a new link"
        );
        assert!(release_forms(&html).is_empty());

        // A release posted with it changes nothing either.
        let mut form = form_of(&forms, "desk").clone();
        form.insert("t".into(), forged.clone());
        assert_eq!(post_form(&app, &app.base, &form).await.0, 403, "{forged}");
    }
    assert_eq!(app.validate(&licence.license_key, "desk").await.0, 200);

    // An erased buyer's links stop working: the address they were made for is gone.
    let mut conn = app.conn();
    {
        use diesel::prelude::*;
        use licence_server::schema::licence;
        diesel::update(licence::table.find(&licence.id))
            .set(licence::customer_email.eq("erased@erased.invalid"))
            .execute(&mut conn)
            .expect("erase the address");
    }
    let (s, _, _) = open(&app, &format!("{}/licence/manage?t={good}", app.base), None).await;
    assert_eq!(s, 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_link_is_refused_with_a_page() {
    let app = spawn_app().await;
    let (key, link) = purchase(&app, 9102, "expiring@example.com").await;
    activate_named(&app, &key, "desk", "Desk").await;
    let (s, _, html) = open(&app, &link, Some("en")).await;
    assert_eq!(s, 200);
    let forms = release_forms(&html);

    app.clock
        .advance(chrono::Duration::days(30) - chrono::Duration::seconds(5));
    assert_eq!(
        open(&app, &link, None).await.0,
        200,
        "still valid on day 30"
    );
    app.clock.advance(chrono::Duration::seconds(10));
    let (s, _, html) = open(&app, &link, Some("en")).await;
    assert_eq!(s, 410, "{html}");
    assert!(html.contains("This link has expired"), "{html}");
    assert!(html.contains("action=\"/licence/manage/link\""));
    // Nor does its page's form work any longer.
    let (s, _, _) = post_form(&app, &app.base, form_of(&forms, "desk")).await;
    assert_eq!(s, 410);
    assert_eq!(app.validate(&key, "desk").await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deactivation_limit_holds_under_parallel_posts() {
    let app = spawn_app().await;
    let (key, link) = purchase(&app, 9103, "parallel@example.com").await;
    for seat in ["a-seat", "b-seat", "c-seat"] {
        activate_named(&app, &key, seat, seat).await;
    }
    // Two replicas on the same database, one release allowed in 30 days.
    let limited = [("LICENCE_DEACTIVATIONS_PER_30_DAYS", "1")];
    let one = app.start_instance_with(&limited).await;
    let two = app.start_instance_with(&limited).await;
    let (_, _, html) = open(&app, &link.replace(&app.base, &one), None).await;
    let forms = release_forms(&html);
    assert_eq!(forms.len(), 3);

    let posts = forms.iter().zip([&one, &two, &one]).map(|(form, base)| {
        let app = &app;
        async move { post_form(app, base, form).await }
    });
    let answers = futures_util::future::join_all(posts).await;
    let released = answers.iter().filter(|(s, _, _)| *s == 200).count();
    let refused: Vec<_> = answers.iter().filter(|(s, _, _)| *s == 429).collect();
    assert_eq!(
        released,
        1,
        "{:?}",
        answers.iter().map(|a| a.0).collect::<Vec<_>>()
    );
    assert_eq!(refused.len(), 2);
    for (_, headers, html) in refused {
        let retry: u64 = headers
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .expect("Retry-After");
        assert!(retry > 29 * 86_400 && retry <= 30 * 86_400, "{retry}");
        assert!(html.contains("class=\"error\""), "{html}");
    }
    assert_eq!(app.count("activation"), 2, "exactly one seat released");
    assert_eq!(app.count("licence_deactivation"), 1);

    // One rule for the page and the API: the API's deactivate is out of room too.
    let survivors: Vec<String> = ["a-seat", "b-seat", "c-seat"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    let mut api_refused = 0;
    for seat in &survivors {
        let resp = app
            .client
            .post(format!("{one}/api/license/deactivate"))
            .json(&json!({"licenseKey": key, "instanceId": seat}))
            .send()
            .await
            .expect("POST");
        let status = resp.status().as_u16();
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        if status == 429 {
            assert_eq!(body["code"], "DEACTIVATION_LIMIT_REACHED");
            api_refused += 1;
        } else {
            assert_eq!(status, 404, "the released seat: {body}");
        }
    }
    assert_eq!(api_refused, 2);
}

/// Posts a JSON link request; status, body and how long it took.
async fn ask_for_links(app: &TestApp, body: &Value) -> (u16, Value, Duration) {
    let started = Instant::now();
    let (s, b) = app.post("/licence/manage/link", body, None).await;
    (s, b, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_request_answers_alike_for_unknown_addresses_and_is_rate_limited() {
    let app = spawn_app().await;
    purchase(&app, 9104, "Two.Licences@example.com").await;
    purchase(&app, 9105, "two.licences@example.com").await;
    let mails_before = app.smtp.messages().len();

    let (s_known, b_known, t_known) = ask_for_links(
        &app,
        &json!({"email": "TWO.licences@example.com", "lang": "en"}),
    )
    .await;
    let (s_unknown, b_unknown, t_unknown) =
        ask_for_links(&app, &json!({"email": "nobody@example.com", "lang": "en"})).await;
    assert_eq!((s_known, &b_known), (200, &json!({"requested": true})));
    assert_eq!(
        (s_unknown, &b_unknown),
        (s_known, &b_known),
        "the same answer"
    );
    let least = licence_server::routes::manage::LINK_REQUEST_MIN_TIME;
    assert!(
        t_known >= least && t_unknown >= least,
        "{t_known:?} {t_unknown:?}"
    );

    // One mail, to the buyer, with a fresh link for each of the two licences, in English.
    let mails = app
        .smtp
        .wait_for(mails_before + 1, Duration::from_secs(10))
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mails = app.smtp.messages().len().max(mails.len());
    assert_eq!(
        mails,
        mails_before + 1,
        "nothing goes to an unknown address"
    );
    let mail = app.smtp.messages().last().cloned().expect("mail");
    assert_eq!(mail.rcpt_to.len(), 1);
    assert!(mail.rcpt_to[0].eq_ignore_ascii_case("two.licences@example.com"));
    assert!(
        mail.header("subject")
            .is_some_and(|s| s.contains("Manage the computers of your licence")),
        "{:?}",
        mail.header("subject")
    );
    let links = links_in(&mail.data, &app.base);
    assert_eq!(links.len(), 2, "{}", mail.data);
    for link in &links {
        assert_eq!(open(&app, link, None).await.0, 200);
    }

    // At most three seat mails an hour to one address; the answer does not change.
    for _ in 0..3 {
        let (s, b, _) = ask_for_links(&app, &json!({"email": "two.licences@example.com"})).await;
        assert_eq!((s, b), (200, json!({"requested": true})));
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        app.smtp.messages().len(),
        mails_before + 3,
        "the fourth request of the hour mails nothing"
    );

    // Bad input is a validation error, never a mail.
    let (s, b, _) = ask_for_links(&app, &json!({"email": "not an address"})).await;
    assert_error(s, &b, 400, "VALIDATION_ERROR");
    let (s, b, _) = ask_for_links(&app, &json!({"email": "a@example.com", "admin": true})).await;
    assert_error(s, &b, 400, "VALIDATION_ERROR");

    // The form asks the same and is answered with a page.
    let resp = app
        .client
        .post(format!("{}/licence/manage/link", app.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept-language", "en-GB,en;q=0.9")
        .body("email=someone%40example.com")
        .send()
        .await
        .expect("POST");
    assert_eq!(resp.status().as_u16(), 200);
    let page = resp.text().await.expect("page");
    assert!(page.contains("Check your e-mail"), "{page}");

    // Ten requests a minute from one client; then 429 with Retry-After.
    let mut limited = None;
    for i in 0..10 {
        let (s, b) = app
            .post(
                "/licence/manage/link",
                &json!({"email": format!("flood{i}@example.com")}),
                None,
            )
            .await;
        if s == 429 {
            assert_error(s, &b, 429, "RATE_LIMITED");
            limited = Some(i);
            break;
        }
        assert_eq!(s, 200, "{b}");
    }
    // Seven requests were counted before the loop (a body that is not the route's JSON is
    // refused before it is counted): its fourth is the eleventh.
    assert_eq!(
        limited,
        Some(3),
        "the eleventh request of the minute is refused"
    );
    let resp = app
        .client
        .post(format!("{}/licence/manage/link", app.base))
        .json(&json!({"email": "late@example.com"}))
        .send()
        .await
        .expect("POST");
    assert_eq!(resp.status().as_u16(), 429);
    assert!(resp.headers().get("retry-after").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_speaks_italian_and_english() {
    let app = spawn_app().await;
    let (key, link) = purchase(&app, 9106, "bilingual@example.com").await;
    activate_named(&app, &key, "desk", "Desk").await;

    let (s, _, it) = open(&app, &link, None).await;
    assert_eq!(s, 200);
    assert!(it.contains("<html lang=\"it\">"), "Italian by default");
    assert!(
        it.contains("I computer della tua licenza") && it.contains(">Libera<"),
        "{it}"
    );
    assert!(it.contains("Ultimo accesso"));

    let (_, _, en) = open(&app, &link, Some("en-US,en;q=0.8,it;q=0.5")).await;
    assert!(en.contains("<html lang=\"en\">"));
    assert!(
        en.contains("The computers of your licence") && en.contains(">Release<"),
        "{en}"
    );
    assert!(en.contains("Last seen"));

    // ?lang= wins over the browser's languages; the form keeps the language.
    let (_, _, chosen) = open(&app, &format!("{link}&lang=en"), Some("it")).await;
    assert!(chosen.contains("<html lang=\"en\">"));
    let forms = release_forms(&chosen);
    assert_eq!(
        form_of(&forms, "desk").get("lang").map(String::as_str),
        Some("en")
    );
    let (s, _, released) = post_form(&app, &app.base, form_of(&forms, "desk")).await;
    assert_eq!(s, 200);
    assert!(
        released.contains("no longer uses the licence"),
        "{released}"
    );

    // The page without a link, and refusals, in both languages too.
    let (_, _, ask_it) = open(&app, &format!("{}/licence/manage", app.base), None).await;
    assert!(ask_it.contains("Gestisci la tua licenza"), "{ask_it}");
    let (_, _, ask_en) = open(&app, &format!("{}/licence/manage?lang=en", app.base), None).await;
    assert!(ask_en.contains("Manage your licence"), "{ask_en}");
    let (s, _, bad_en) = open(
        &app,
        &format!("{}/licence/manage?t=nope", app.base),
        Some("en"),
    )
    .await;
    assert_eq!(s, 403);
    assert!(bad_en.contains("This link is not valid"));

    // The link mail follows the language it was asked in.
    let before = app.smtp.messages().len();
    let (s, _) = app
        .post(
            "/licence/manage/link",
            &json!({"email": "bilingual@example.com", "lang": "it"}),
            None,
        )
        .await;
    assert_eq!(s, 200);
    let mails = app.smtp.wait_for(before + 1, Duration::from_secs(10)).await;
    let subject = mails
        .last()
        .and_then(|m| m.header("subject"))
        .unwrap_or_default();
    assert!(
        subject.contains("Gestisci") || subject.contains("=?utf-8?"),
        "{subject}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seat_links_never_reach_the_logs() {
    let app = spawn_app().await;
    let licence = insert_licence(&mut app.conn(), "pro", "active");
    activate_named(&app, &licence.license_key, "desk", "Desk").await;
    let port = testkit::stack::free_port();
    let logs = testkit::stack::ScratchDir::new("seat-logs");
    let builds = app.builds.path().to_string_lossy().into_owned();
    let mut env = base_env(app.db.url(), &builds);
    for (k, v) in &mut env {
        match k.as_str() {
            "LISTEN_ADDR" => *v = format!("127.0.0.1:{port}"),
            "SMTP_URL" => *v = app.smtp.url(),
            _ => {}
        }
    }
    env.push(("RUST_LOG".into(), "debug".into()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = testkit::stack::Process::start(
        "licence-server",
        std::path::Path::new(env!("CARGO_BIN_EXE_licence-server")),
        &[],
        &env,
        logs.path(),
    );
    let base = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    while app
        .client
        .get(format!("{base}/health"))
        .send()
        .await
        .is_err()
    {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{}",
            server.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // This process runs on the real clock.
    let base_url = url::Url::parse("http://127.0.0.1:8083").expect("url");
    let token = links_of(&base_url).token(
        licence.id.as_str(),
        &licence.customer_email,
        chrono::Utc::now(),
    );
    let (s, _, html) = open(&app, &format!("{base}/licence/manage?t={token}"), None).await;
    assert_eq!(s, 200, "{html}");
    let forms = release_forms(&html);
    let form = form_of(&forms, "desk").clone();
    let csrf = form.get("csrf").cloned().expect("csrf");
    let (s, _, _) = post_form(&app, &base, &form).await;
    assert_eq!(s, 200);
    let mut forged = token.clone();
    forged.pop();
    assert_eq!(
        open(&app, &format!("{base}/licence/manage?t={forged}"), None)
            .await
            .0,
        403
    );
    let resp = app
        .client
        .post(format!("{base}/licence/manage/link"))
        .json(&json!({"email": licence.customer_email}))
        .send()
        .await
        .expect("POST");
    assert_eq!(resp.status().as_u16(), 200);
    let mails = app.smtp.wait_for(1, Duration::from_secs(10)).await;
    let mailed = links_in(&mails[0].data, &base);
    let mailed_token = mailed[0].rsplit("t=").next().expect("token").to_owned();
    tokio::time::sleep(Duration::from_millis(500)).await;

    let log = server.log();
    assert!(
        log.contains("/licence/manage"),
        "requests are logged by route: {log}"
    );
    let mac = token.rsplit('.').next().expect("mac").to_owned();
    let mailed_mac = mailed_token.rsplit('.').next().expect("mac").to_owned();
    for secret in [
        token.as_str(),
        mac.as_str(),
        forged.as_str(),
        mailed_mac.as_str(),
        csrf.as_str(),
        licence.customer_email.as_str(),
        licence.license_key.as_str(),
    ] {
        let leaks: Vec<&str> = log.lines().filter(|l| l.contains(secret)).collect();
        assert!(leaks.is_empty(), "the log holds {secret}: {leaks:#?}");
    }
}
