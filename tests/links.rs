//! Every address the product hands a person opens a real page through the proxy: the links of
//! its e-mails, the redirects of auth, the `url` of every push and the links between pages, each
//! opened in Chromium through nginx (`web/tests/links.mjs`), and each routed by the Kubernetes
//! ingress to the same place. And the journeys through the mail catcher: a person who forgot the
//! password, from the sign-in page back into the app (`web/tests/reset.mjs`), and the others
//! below, among them a sign-in with a passkey on a stack opened at `localhost`
//! (`web/tests/passkey.mjs`).

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::{
    MailCatcher, Stack, first_link, run_node, start_stack_configured, start_stack_on_localhost,
};
use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

async fn stack_with_mail() -> (Stack, MailCatcher) {
    stack_with_mail_and(&[]).await
}

/// [`stack_with_mail`] with more of auth's settings.
async fn stack_with_mail_and(auth: &[(&str, &str)]) -> (Stack, MailCatcher) {
    stack_with_mail_at(auth, false).await
}

/// [`stack_with_mail_and`], opened at `http://localhost:<port>` when `on_localhost`.
async fn stack_with_mail_at(auth: &[(&str, &str)], on_localhost: bool) -> (Stack, MailCatcher) {
    let mail = MailCatcher::start().await;
    let smtp = mail.smtp_url();
    let mut settings = vec![
        ("SMTP_URL", smtp.as_str()),
        ("MAIL_FROM", "Digiuno <noreply@example.com>"),
    ];
    settings.extend_from_slice(auth);
    let stack = if on_localhost {
        start_stack_on_localhost(&settings, &[]).await
    } else {
        start_stack_configured(&settings, &[]).await
    };
    (stack, mail)
}

/// The path and query of an address on `base`; `None` for another origin.
fn local(base: &str, address: &str) -> Option<String> {
    if address.starts_with('/') {
        return Some(address.to_owned());
    }
    address.strip_prefix(base).map(|rest| {
        if rest.is_empty() {
            "/".to_owned()
        } else {
            rest.to_owned()
        }
    })
}

/// The page paths `source` hands out: the targets of its links (`href`), of its navigations and
/// redirects (`navigate(`, `assign(`, `see_other(`, `back_to_page(`) and its route lists
/// (`APP_ROUTES`). The API, assets and files are fetched rather than opened, so they are left out.
fn page_literals(source: &str) -> Vec<String> {
    const LEADS: [&str; 7] = [
        "href=",
        "href:",
        "navigate(",
        "assign(",
        "see_other(",
        "back_to_page(",
        "url:",
    ];
    let mut literals = Vec::new();
    for lead in LEADS {
        for (i, _) in source.match_indices(lead) {
            let after = source[i + lead.len()..].trim_start_matches(['{', ' ', '\\']);
            if let Some(quote) = after
                .chars()
                .next()
                .filter(|c| matches!(c, '\'' | '"' | '`'))
                && let Some(end) = after[1..].find(quote)
            {
                literals.push(after[1..1 + end].to_owned());
            }
        }
    }
    if let Some(i) = source.find("APP_ROUTES = [") {
        let list = &source[i..];
        let list = &list[..list.find(']').unwrap_or(list.len())];
        literals.extend(list.split('\'').skip(1).step_by(2).map(str::to_owned));
    }
    literals
        .into_iter()
        .map(|l| l.trim_end_matches('\\').to_owned())
        .filter(|l| {
            let path = l.split(['?', '#', '$', '{']).next().unwrap_or_default();
            path.starts_with('/')
                && !path.starts_with("//")
                && !["/me", "/api/", "/icons/", "/assets/", "/sw.js", "/manifest"]
                    .iter()
                    .any(|p| path.starts_with(p))
        })
        .map(|l| {
            // A template's or format string's interpolation stands for a value the person chose
            // (a page to go back to): drop it with the query it belongs to, keeping the page.
            if l.contains(['$', '{']) {
                l.split(['?', '$', '{'])
                    .next()
                    .unwrap_or_default()
                    .to_owned()
            } else {
                l
            }
        })
        .collect()
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path
            .extension()
            .is_some_and(|e| e == "ts" || e == "tsx" || e == "rs")
        {
            out.push(path);
        }
    }
}

/// One rule of the ingress: its path, whether it is `Exact`, and its backend service.
struct Rule {
    path: String,
    exact: bool,
    service: String,
}

fn ingress_rules() -> Vec<Rule> {
    let text = std::fs::read_to_string(root().join("deploy/k8s/ingress.yaml")).expect("ingress");
    let mut rules = Vec::new();
    let mut current: Option<(String, Option<bool>)> = None;
    for line in text.lines().map(str::trim) {
        if let Some(p) = line.strip_prefix("- path: ") {
            current = Some((p.to_owned(), None));
        } else if let Some(t) = line.strip_prefix("pathType: ") {
            if let Some(c) = current.as_mut() {
                c.1 = Some(t == "Exact");
            }
        } else if let Some(name) = line.strip_prefix("name: ")
            && let Some((path, Some(exact))) = current.take()
        {
            rules.push(Rule {
                path,
                exact,
                service: name.to_owned(),
            });
        }
    }
    assert!(rules.len() > 5, "rules read from ingress.yaml");
    rules
}

/// The service the ingress sends `path` to: the longest matching rule, `Exact` before `Prefix`
/// (Kubernetes' rules; `Prefix` matches whole path elements).
fn ingress_service<'a>(rules: &'a [Rule], path: &str) -> Option<&'a str> {
    let path = path.split(['?', '#']).next().unwrap_or("/");
    rules
        .iter()
        .filter(|r| {
            if r.exact {
                path == r.path
            } else {
                r.path == "/"
                    || path == r.path
                    || path.starts_with(&format!("{}/", r.path.trim_end_matches('/')))
            }
        })
        .max_by_key(|r| (r.path.len(), r.exact))
        .map(|r| r.service.as_str())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_address_the_product_hands_out_opens_a_page_through_the_proxy() {
    let (stack, mail) = stack_with_mail().await;
    let base = stack.base();
    let http = testkit::http::client();
    let form = |path: &str, fields: &[(&str, &str)]| {
        http.post(format!("{base}{path}"))
            .header("origin", &base)
            .form(fields)
            .send()
    };
    let location = |r: &reqwest::Response| {
        testkit::http::header(r, "location")
            .unwrap_or_else(|| panic!("a redirect, got {}", r.status()))
    };
    // (where it comes from, the address)
    let mut addresses: Vec<(String, String)> = Vec::new();

    // Pushes.
    for kind in domain::notifications::Kind::ALL {
        for locale in domain::locale::Locale::ALL {
            let p = domain::notifications::payload(kind, locale);
            addresses.push((format!("push {} ({locale})", p.kind), p.url));
        }
    }

    // Links between pages: every page path named in the web app's and auth's sources.
    let mut files = Vec::new();
    sources(&root().join("web/src"), &mut files);
    sources(&root().join("crates/auth/src/routes"), &mut files);
    files.push(root().join("crates/auth/src/redirect.rs"));
    let mut seen = BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("source");
        for path in page_literals(&text) {
            if seen.insert(path.clone()) {
                addresses.push((format!("link in {}", file.display()), path));
            }
        }
    }

    // Redirects of auth, as its forms and links really answer them.
    let email = "links@example.com";
    let r = form(
        "/api/auth/sign-up/email",
        &[
            ("name", "Lina"),
            ("email", email),
            ("password", "una-password-lunga"),
            ("callbackURL", "/plan"),
        ],
    )
    .await
    .expect("sign-up");
    addresses.push(("sign-up redirect".into(), location(&r)));
    let cookie = r
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or_default().to_owned())
        .collect::<Vec<_>>()
        .join("; ");
    let r = form(
        "/api/auth/sign-in/email",
        &[("email", email), ("password", "sbagliata-davvero")],
    )
    .await
    .expect("sign-in");
    addresses.push(("failed sign-in redirect".into(), location(&r)));
    let r = form(
        "/api/auth/sign-in/email",
        &[
            ("email", email),
            ("password", "una-password-lunga"),
            ("callbackURL", "/stats"),
        ],
    )
    .await
    .expect("sign-in");
    addresses.push(("sign-in redirect".into(), location(&r)));

    // The verification mail and where its link leads.
    let r = http
        .post(format!("{base}/api/auth/send-verification-email"))
        .header("origin", &base)
        .header("cookie", &cookie)
        .json(&serde_json::json!({ "email": email, "callbackURL": "/settings" }))
        .send()
        .await
        .expect("send verification");
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap_or_default());
    let link = first_link(&mail.wait_for_mail_to(email, 0).await);
    addresses.push(("verification mail".into(), link.clone()));
    let r = http.get(&link).send().await.expect("verify");
    addresses.push(("verification redirect".into(), location(&r)));
    let r = http.get(&link).send().await.expect("verify again");
    addresses.push(("spent verification link redirect".into(), location(&r)));

    // The reset mail, its link, and the pages of the reset.
    let r = form("/api/auth/request-password-reset", &[("email", email)])
        .await
        .expect("request reset");
    addresses.push(("reset request redirect".into(), location(&r)));
    let link = first_link(&mail.wait_for_mail_to(email, 1).await);
    addresses.push(("reset mail".into(), link.clone()));
    let r = http.get(&link).send().await.expect("reset link");
    let reset_page = location(&r);
    addresses.push(("reset link redirect".into(), reset_page.clone()));
    let token = reset_page
        .split("token=")
        .nth(1)
        .expect("token")
        .split('&')
        .next()
        .expect("token")
        .to_owned();
    let r = form(
        "/api/auth/reset-password",
        &[("token", &token), ("newPassword", "short")],
    )
    .await
    .expect("reset refused");
    addresses.push(("refused reset redirect".into(), location(&r)));
    let r = form(
        "/api/auth/reset-password",
        &[("token", &token), ("newPassword", "una-nuova-password")],
    )
    .await
    .expect("reset");
    addresses.push(("reset redirect".into(), location(&r)));
    let r = http
        .get(format!("{base}/api/auth/reset-password/spent-token"))
        .send()
        .await
        .expect("spent reset link");
    addresses.push(("invalid reset link redirect".into(), location(&r)));

    // Google's answer when the person cancels, and the app's way to sign-in.
    let r = http
        .get(format!(
            "{base}/api/auth/callback/google?error=access_denied&state=x"
        ))
        .send()
        .await
        .expect("google callback");
    if r.status().is_redirection() {
        addresses.push(("google callback redirect".into(), location(&r)));
    }
    addresses.push((
        "missing session".into(),
        "/sign-in?callbackURL=%2Fplan".into(),
    ));

    let list: Vec<Value> = addresses
        .iter()
        .map(|(from, address)| {
            let path = local(&base, address)
                .unwrap_or_else(|| panic!("{from} hands out {address}, not an address of {base}"));
            serde_json::json!({ "from": from, "path": path })
        })
        .collect();
    let listed = serde_json::to_string(&list).expect("json");
    let b = base.clone();
    let out = tokio::task::spawn_blocking(move || {
        run_node("links.mjs", &b, &[("ADDRESSES", listed.as_str())])
    })
    .await
    .expect("join");
    let out = match out {
        Ok(out) => out,
        Err(out) => panic!(
            "{out}\n--- auth ---\n{}\n--- nutrition-api ---\n{}",
            stack.auth.log(),
            stack.nutrition.log()
        ),
    };

    // The ingress sends each address, and the page it ended on, where nginx sent it.
    let rules = ingress_rules();
    let opened: Vec<Value> = out
        .lines()
        .filter_map(|l| l.strip_prefix("OPENED "))
        .map(|l| serde_json::from_str(l).expect("opened line"))
        .collect();
    assert_eq!(opened.len(), list.len(), "{out}");
    let mut problems = Vec::new();
    for o in &opened {
        let served_by = if o["app"].as_bool() == Some(true) {
            "web"
        } else {
            "auth"
        };
        let last = local(&base, o["final"].as_str().expect("final")).expect("same origin");
        for path in [o["path"].as_str().expect("path"), last.as_str()] {
            let first_hop_is_auth_api = path.starts_with("/api/auth/");
            let expected = if first_hop_is_auth_api {
                "auth"
            } else {
                served_by
            };
            let got = ingress_service(&rules, path);
            if got != Some(expected) {
                problems.push(format!(
                    "{} {path}: the ingress sends it to {got:?}, nginx to {expected}",
                    o["from"]
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    println!("{} addresses opened", opened.len());
}

/// Runs the Chromium journey `script` (web/tests) against a stack with its mail catcher and
/// `auth`'s settings; the script prints `done` once every step passed.
async fn mail_journey(script: &'static str, done: &str, auth: &[(&str, &str)]) {
    mail_journey_at(script, done, auth, false).await;
}

/// [`mail_journey`], the stack opened at `http://localhost:<port>` when `on_localhost`.
async fn mail_journey_at(
    script: &'static str,
    done: &str,
    auth: &[(&str, &str)],
    on_localhost: bool,
) {
    let (stack, mail) = stack_with_mail_at(auth, on_localhost).await;
    let base = stack.base();
    let web = mail.web();
    let out = tokio::task::spawn_blocking(move || {
        run_node(script, &base, &[("MAIL_CATCHER", web.as_str())])
    })
    .await
    .expect("join");
    match out {
        Ok(out) => assert!(out.contains(done), "{out}"),
        Err(out) => panic!("{out}\n--- auth ---\n{}", stack.auth.log()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_who_forgot_the_password_gets_back_in_through_the_mail() {
    mail_journey("reset.mjs", "reset: all steps passed", &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_signs_in_with_a_code_from_the_mail() {
    mail_journey("code-sign-in.mjs", "code sign-in: all steps passed", &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_turns_two_factor_on_and_signs_in_with_the_app_and_a_backup_code() {
    // Four codes in a few seconds from one address: more than the test stack's limit of 3 per
    // 10 s lets through, and more than a person types.
    let limit = [("AUTH_RATE_LIMIT_MAX", "20")];
    mail_journey("two-factor.mjs", "two-factor: all steps passed", &limit).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sign_in_from_a_new_browser_is_mailed_and_its_link_ends_every_session() {
    let limit = [("AUTH_RATE_LIMIT_MAX", "20")];
    mail_journey("new-device.mjs", "new device: all steps passed", &limit).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_adds_a_passkey_and_signs_in_with_it_without_typing_an_address() {
    // A passkey belongs to the public host (the relying party), which must be a name: the
    // stack is opened on localhost. Two sign-ins and their ceremonies in a few seconds are more
    // than the test stack's limit of 3 per 10 s lets through.
    let limit = [("AUTH_RATE_LIMIT_MAX", "20")];
    mail_journey_at("passkey.mjs", "passkey: all steps passed", &limit, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_who_switched_to_english_reads_the_mail_and_its_pages_in_english() {
    let limit = [("AUTH_RATE_LIMIT_MAX", "20")];
    mail_journey("english.mjs", "english: all steps passed", &limit).await;
}

/// The seat links of a mail's text that open on `base`.
fn seat_links(text: &str, base: &str) -> Vec<String> {
    let mut links: Vec<String> = text
        .split(|c: char| c.is_whitespace() || c == '"' || c == '<' || c == '>')
        .filter(|w| w.starts_with(&format!("{base}/licence/manage?t=")))
        .map(str::to_owned)
        .collect();
    links.sort();
    links.dedup();
    links
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_buyer_opens_the_mailed_seat_links_through_the_proxy_and_releases_a_seat_in_chromium() {
    let (stack, mail) = stack_with_mail().await;
    let base = stack.base();
    let http = testkit::http::client();
    let buyer = "seat.links@example.com";
    // A purchase, delivered through the proxy as the payment provider delivers it.
    let (event, signature) = common::signed_purchase("77101", buyer, "Seat Buyer");
    let r = http
        .post(format!("{base}/api/webhook/lemonsqueezy"))
        .header("content-type", "application/json")
        .header("x-signature", signature)
        .body(event)
        .send()
        .await
        .expect("webhook");
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap_or_default());
    let licence_mail = mail.wait_for_mail_to(buyer, 0).await;
    let mut links = seat_links(&licence_mail, &base);
    assert_eq!(
        links.len(),
        1,
        "the licence mail's seat link: {licence_mail}"
    );

    // The form of the page asks for fresh links; they arrive and open too.
    let r = http
        .post(format!("{base}/licence/manage/link"))
        .form(&[("email", buyer), ("lang", "en")])
        .send()
        .await
        .expect("link request");
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap_or_default());
    links.extend(seat_links(&mail.wait_for_mail_to(buyer, 1).await, &base));
    assert_eq!(links.len(), 2);

    let rules = ingress_rules();
    for link in &links {
        let r = http.get(link).send().await.expect("seat page");
        assert_eq!(r.status(), 200, "{link}");
        assert!(
            r.headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with("text/html"))
        );
        let page = r.text().await.expect("page");
        assert!(page.contains("I computer della tua licenza"), "{page}");
        let path = local(&base, link).expect("same origin");
        assert_eq!(
            ingress_service(&rules, &path),
            Some("licence-server"),
            "{path}"
        );
    }
    for form in ["/licence/manage/release", "/licence/manage/link"] {
        assert_eq!(
            ingress_service(&rules, form),
            Some("licence-server"),
            "{form}"
        );
    }

    // The app activates the key of the mail on a computer; the buyer then releases that seat
    // in Chromium from the mailed link, and the app's next check is refused.
    let key = licence_mail
        .lines()
        .skip_while(|l| !l.contains("Your licence key"))
        .skip(1)
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_else(|| panic!("a key in {licence_mail}"))
        .to_owned();
    let name = "Portatile vecchio";
    let r = http
        .post(format!("{base}/api/license/activate"))
        .json(&serde_json::json!({ "licenseKey": key, "instanceId": "old-laptop-0001", "instanceName": name }))
        .send()
        .await
        .expect("activate");
    assert_eq!(r.status(), 200);
    let activated: Value = r.json().await.expect("activation");
    let token = activated["token"].as_str().expect("token").to_owned();
    let (b, link, web) = (base.clone(), links[0].clone(), mail.web());
    let out = tokio::task::spawn_blocking(move || {
        run_node(
            "seats.mjs",
            &b,
            &[
                ("MAIL_CATCHER", web.as_str()),
                ("SEAT_LINK", link.as_str()),
                ("SEAT_NAME", name),
            ],
        )
    })
    .await
    .expect("join");
    match out {
        Ok(out) => assert!(out.contains("seats: all steps passed"), "{out}"),
        Err(out) => panic!("{out}"),
    }
    let r = http
        .post(format!("{base}/api/license/validate"))
        .bearer_auth(&token)
        .send()
        .await
        .expect("validate");
    assert_eq!(r.status(), 403);
    let refused: Value = r.json().await.expect("refusal");
    assert_eq!(refused["code"], "INSTANCE_NOT_ACTIVE", "{refused}");
}
