//! The four services at `debug` level through a realistic flow: sign-up, sign-in, a diary entry,
//! a push device, a test push and a licence purchase with its mail. Their logs must hold no
//! e-mail address, password, session token, symptom note, push endpoint or key, or licence key.

mod common;

use std::time::Duration;

use serde_json::{Value, json};
use testkit::http::client;
use testkit::push_service::FakePushService;

use common::start_stack_logging;

const EMAIL: &str = "log.hygiene@example.com";
const PASSWORD: &str = "Secret-Passw0rd-XYZ";
const NOTE: &str = "private-symptom-note-QWERTY";
const BUYER: &str = "licence.buyer@example.com";

async fn send(req: reqwest::RequestBuilder) -> (u16, Value, Vec<String>) {
    let resp = req.send().await.expect("request");
    let status = resp.status().as_u16();
    let cookies = resp
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(str::to_owned)
        .collect();
    let text = resp.text().await.unwrap_or_default();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::Null),
        cookies,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debug_logs_hold_no_personal_data_or_secret() {
    let pair = push::VapidKeyPair::generate();
    let private = pair.private_key.expose().to_owned();
    let push_env = [
        ("VAPID_PUBLIC_KEY", pair.public_key.as_str()),
        ("VAPID_PRIVATE_KEY", private.as_str()),
        ("VAPID_SUBJECT", "mailto:ops@example.com"),
        ("PUSH_ALLOW_HTTP_ENDPOINTS", "true"),
    ];
    let stack = start_stack_logging(&push_env, Some("debug")).await;
    let base = stack.base();
    let http = client();
    let push_service = FakePushService::start().await;

    let (status, body, _) = send(
        http.post(format!("{base}/api/auth/sign-up/email"))
            .header("origin", &base)
            .json(&json!({ "name": "Log Hygiene", "email": EMAIL, "password": PASSWORD })),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body, cookies) = send(
        http.post(format!("{base}/api/auth/sign-in/email"))
            .header("origin", &base)
            .json(&json!({ "email": EMAIL, "password": PASSWORD })),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let token = body["token"].as_str().expect("token").to_owned();
    let user_id = body["user"]["id"].as_str().expect("user id").to_owned();
    let cookie = cookies
        .iter()
        .find(|c| c.contains("session_token="))
        .and_then(|c| c.split(';').next())
        .expect("cookie")
        .to_owned();
    let me = |method: reqwest::Method, path: &str| {
        http.request(method, format!("{base}{path}"))
            .header("cookie", &cookie)
            .header("origin", &base)
    };
    let (status, fast, _) =
        send(me(reqwest::Method::POST, "/me/fast-events").json(&json!({ "protocol": "16:8" })))
            .await;
    assert_eq!(status, 201, "{fast}");
    let id = fast["id"].as_str().expect("fast id");
    let (status, body, _) = send(
        me(reqwest::Method::PATCH, &format!("/me/fast-events/{id}"))
            .json(&json!({ "symptoms": { "headache": true, "energy": 5, "note": NOTE } })),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let sub = push_service.subscribe();
    let (status, body, _) = send(me(reqwest::Method::POST, "/me/device-tokens").json(
        &json!({ "platform": "web", "endpoint": sub.endpoint, "keys": { "p256dh": sub.p256dh, "auth": sub.auth } }),
    ))
    .await;
    assert_eq!(status, 201, "{body}");
    let (status, body, _) = send(me(reqwest::Method::POST, "/me/notifications/test")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["sent"], 1, "{body}");

    // Two-factor set up and used through nginx: its secret, its codes and the challenge cookie
    // each open the account as well.
    let enabled = send(
        me(reqwest::Method::POST, "/api/auth/two-factor/enable")
            .json(&json!({ "password": PASSWORD })),
    )
    .await;
    assert_eq!(enabled.0, 200, "{}", enabled.1);
    let uri = enabled.1["totpURI"].as_str().expect("totpURI").to_owned();
    let app = totp_rs::TOTP::from_url_unchecked(&uri).expect("an otpauth URI");
    let totp_secret = app.get_secret_base32();
    // The key as auth keeps it: 32 characters whose bytes the URI carries in base32.
    let totp_key = String::from_utf8(app.secret.clone()).expect("a text key");
    let backup_code = enabled.1["backupCodes"][0]
        .as_str()
        .expect("codes")
        .to_owned();
    let first_code = app.generate_current().expect("clock");
    let (status, body, cookies) = send(
        me(reqwest::Method::POST, "/api/auth/two-factor/verify-totp")
            .json(&json!({ "code": first_code })),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        cookies.iter().any(|c| c.contains("session_token=")),
        "renewed"
    );
    let (status, body, cookies) = send(
        http.post(format!("{base}/api/auth/sign-in/email"))
            .header("origin", &base)
            .json(&json!({ "email": EMAIL, "password": PASSWORD })),
    )
    .await;
    assert_eq!(body["twoFactorRedirect"], true, "{status} {body}");
    let challenge = cookies
        .iter()
        .find(|c| c.contains("two_factor="))
        .and_then(|c| c.split(';').next())
        .expect("challenge cookie")
        .to_owned();
    let (status, body, _) = send(
        http.post(format!("{base}/api/auth/two-factor/verify-backup-code"))
            .header("origin", &base)
            .header("cookie", &challenge)
            .json(&json!({ "code": backup_code })),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let challenge_value = challenge
        .split_once('=')
        .map(|(_, v)| v.to_owned())
        .unwrap_or_default();

    // A reset link followed through nginx: its token opens the account, so it must appear in no
    // log, nginx's access log included.
    let reset_token = {
        let mut conn = stack.pg.connect();
        auth::links::issue(
            &mut conn,
            auth::links::Purpose::Reset,
            &user_id.clone().into(),
            chrono::Utc::now(),
        )
        .expect("issue a reset token")
    };
    let (status, _, _) = send(http.get(format!(
        "{base}/api/auth/reset-password/{reset_token}?callbackURL=%2Freset-password"
    )))
    .await;
    assert!(status < 400, "reset link {status}");

    // A "this was not me" link opened and confirmed through nginx: its token ends every session.
    let not_me_token = {
        let mut conn = stack.pg.connect();
        auth::links::issue(
            &mut conn,
            auth::links::Purpose::NotMe,
            &user_id.clone().into(),
            chrono::Utc::now(),
        )
        .expect("issue a not-me token")
    };
    let (status, _, _) =
        send(http.get(format!("{base}/api/auth/not-me?token={not_me_token}"))).await;
    assert_eq!(status, 200, "not-me page");
    let (status, body, _) = send(
        http.post(format!("{base}/api/auth/not-me/confirm"))
            .header("origin", &base)
            .json(&json!({ "token": not_me_token })),
    )
    .await;
    assert_eq!(status, 200, "{body}");

    // An e-mailed sign-in code, used through nginx: it opens the account too.
    let sign_in_code = {
        let mut conn = stack.pg.connect();
        auth::otp::issue(
            &mut conn,
            common::SECRET,
            auth::otp::Kind::SignIn,
            EMAIL,
            chrono::Utc::now(),
        )
        .expect("issue a code")
    };
    let (status, body, _) = send(
        http.post(format!("{base}/api/auth/sign-in/email-otp"))
            .header("origin", &base)
            .json(&json!({ "email": EMAIL, "otp": sign_in_code })),
    )
    .await;
    assert_eq!(status, 200, "{body}");

    // A purchase: the licence server creates the licence and queues its mail.
    let (event, signature) = common::signed_purchase("77001", BUYER, "Licence Buyer");
    let (status, body, _) = send(
        http.post(format!(
            "http://127.0.0.1:{}/api/webhook/lemonsqueezy",
            stack.ports[3]
        ))
        .header("content-type", "application/json")
        .header("x-signature", signature)
        .body(event),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let out = testkit::process::run(
        &testkit::stack::bin("licence-server"),
        &["admin", "export", "--email", BUYER],
        &[("DATABASE_URL", stack.my.url())],
    );
    let export: Value = serde_json::from_slice(&out.stdout).expect("export JSON");
    let licence_key = export["tables"]["licence"][0]["license_key"]
        .as_str()
        .expect("licence key")
        .to_owned();
    // A seat link (contract section 12) carries its capability in the query string: opened
    // through the proxy, neither nginx nor licence-server may write it down.
    let seat_token = "6f1c2f9e-3b1a-4c8e-9f00-0123456789ab.1900000000.SeatTokenNeverLogged0123456789abcdefghijkl";
    let (status, _, _) =
        send(http.get(format!("{base}/licence/manage?t={seat_token}&lang=en"))).await;
    assert_eq!(status, 403, "a token of no licence");
    // Give the mail sender a round to try (and fail: no SMTP server listens there).
    tokio::time::sleep(Duration::from_secs(2)).await;

    let secrets = [
        EMAIL,
        BUYER,
        PASSWORD,
        NOTE,
        token.as_str(),
        sub.endpoint.as_str(),
        sub.p256dh.as_str(),
        sub.auth.as_str(),
        licence_key.as_str(),
        reset_token.as_str(),
        not_me_token.as_str(),
        totp_secret.as_str(),
        totp_key.as_str(),
        backup_code.as_str(),
        challenge_value.as_str(),
        seat_token,
        "SeatTokenNeverLogged",
    ];
    let access = stack.nginx.access_log();
    assert!(access.contains("/api/auth/reset-password/"), "{access}");
    for secret in secrets {
        let leaks: Vec<&str> = access.lines().filter(|l| l.contains(secret)).collect();
        assert!(leaks.is_empty(), "nginx logs {secret}: {leaks:#?}");
    }
    for process in [
        &stack.auth,
        &stack.nutrition,
        &stack.scheduler,
        &stack.licence,
    ] {
        let log = process.log();
        assert!(
            log.lines().count() > 3,
            "{} logged at debug: {log}",
            process.name()
        );
        for secret in secrets {
            let leaks: Vec<&str> = log.lines().filter(|l| l.contains(secret)).collect();
            assert!(
                leaks.is_empty(),
                "{} logs {secret}: {leaks:#?}",
                process.name()
            );
        }
        for code in [&sign_in_code, &first_code] {
            let leaks: Vec<&str> = log.lines().filter(|l| names_number(l, code)).collect();
            assert!(
                leaks.is_empty(),
                "{} logs the code {code}: {leaks:#?}",
                process.name()
            );
        }
    }
}

/// Whether `line` holds `number` on its own: not inside a longer run of digits, nor as the
/// fraction of a timestamp, where six digits turn up by chance.
fn names_number(line: &str, number: &str) -> bool {
    line.match_indices(number).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + number.len()..].chars().next();
        !before.is_some_and(|c| c.is_ascii_digit() || c == '.')
            && !after.is_some_and(|c| c.is_ascii_digit())
    })
}
