//! better-auth's own client (npm `better-auth` 1.7, run by Node) through nginx against the real
//! auth and nutrition-api: every account-management call of the contract, as the web front end
//! makes it.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{Value, json};
use testkit::smtp::{Received, SmtpServer};

use common::{node_client_lines, start_stack_configured};

/// Runs the client program; every line it prints is one call: `{step, status, data, error}`.
fn run_client(base: &str, mode: &str, env: &[(&str, &str)]) -> HashMap<String, Value> {
    let mut env = env.to_vec();
    env.push(("BASE_URL", base));
    node_client_lines("account-client.mjs", &[mode], &env)
        .into_iter()
        .map(|v| (v["step"].as_str().unwrap_or_default().to_owned(), v))
        .collect()
}

/// The first link of `msg` starting with `prefix`, with quoted-printable soft breaks and escapes
/// undone.
fn link_in(msg: &Received, prefix: &str) -> String {
    let raw = msg.data.replace("=\r\n", "");
    let mut text = String::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw.as_bytes()[i] == b'='
            && let Some(b) = raw
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            text.push(char::from(b));
            i += 3;
            continue;
        }
        text.push(char::from(raw.as_bytes()[i]));
        i += 1;
    }
    let start = text
        .find(prefix)
        .unwrap_or_else(|| panic!("no {prefix} in:\n{text}"));
    text[start..]
        .chars()
        .take_while(|c| !c.is_whitespace() && !matches!(c, '"' | '<' | '>'))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn better_auth_client_manages_the_account_through_nginx() {
    let smtp = SmtpServer::start().await.expect("smtp");
    let smtp_url = smtp.url();
    let stack = start_stack_configured(
        &[
            ("SMTP_URL", smtp_url.as_str()),
            ("MAIL_FROM", "Digiuno <no-reply@example.com>"),
        ],
        &[],
    )
    .await;
    let base = stack.base();
    let r = run_client(&base, "manage", &[]);
    let step = |name: &str| -> &Value {
        r.get(name)
            .unwrap_or_else(|| panic!("no step {name}: {r:?}\n{}", stack.auth.log()))
    };
    let ok = |name: &str| -> &Value {
        let s = step(name);
        assert_eq!(s["status"], 200, "{name}: {s}");
        &s["data"]
    };
    let err = |name: &str, status: u16, code: &str, message: &str| {
        let s = step(name);
        assert_eq!(s["status"], status, "{name}: {s}");
        assert_eq!(
            (s["error"]["code"].as_str(), s["error"]["message"].as_str()),
            (Some(code), Some(message)),
            "{name}: {s}"
        );
    };

    let user_id = ok("sign-up")["user"]["id"].as_str().expect("id").to_owned();
    ok("sign-in-phone");
    err("sign-in-malformed", 400, "INVALID_EMAIL", "Invalid email");

    let sessions = ok("list-sessions").as_array().expect("array").clone();
    assert_eq!(sessions.len(), 2);
    assert_eq!(sessions[0]["current"], false, "newest first: the phone's");
    assert_eq!(sessions[1]["current"], true);
    assert!(
        sessions
            .iter()
            .all(|s| s["token"].as_str().is_some_and(|t| t.len() == 43))
    );

    assert_eq!(ok("update-user"), &json!({ "status": true }));
    err(
        "update-user-email",
        400,
        "EMAIL_CAN_NOT_BE_UPDATED",
        "Email can not be updated",
    );
    let user = &ok("get-session")["user"];
    assert_eq!(
        (user["name"].as_str(), user["image"].is_null()),
        (Some("Client Renamed"), true)
    );

    err(
        "change-password-wrong",
        400,
        "INVALID_PASSWORD",
        "Invalid password",
    );
    err(
        "change-password-short",
        400,
        "PASSWORD_TOO_SHORT",
        "Password too short",
    );
    let changed = ok("change-password");
    assert!(changed["token"].is_null());
    assert_eq!(changed["user"]["id"], user_id.as_str());

    let accounts = ok("list-accounts").as_array().expect("array").clone();
    assert_eq!(accounts.len(), 1);
    assert_eq!(accounts[0]["providerId"], "credential");
    assert_eq!(accounts[0]["scopes"], json!([]));
    err(
        "unlink-last",
        400,
        "FAILED_TO_UNLINK_LAST_ACCOUNT",
        "You can't unlink your last account",
    );

    assert_eq!(ok("revoke-session"), &json!({ "status": true }));
    assert!(
        ok("phone-after-revoke").is_null(),
        "the phone is signed out at once"
    );
    ok("sign-in-phone-again");
    assert_eq!(ok("revoke-other-sessions"), &json!({ "status": true }));
    assert!(ok("phone-after-revoke-others").is_null());
    let revoked = ok("change-password-revoke");
    assert!(revoked["token"].as_str().is_some_and(|t| t.len() == 32));
    assert_eq!(
        ok("get-session-after-change")["user"]["id"],
        user_id.as_str(),
        "the client took the new session's cookie"
    );

    // The mail routes answer alike for a known and an unknown address; the mails go out.
    let requested = ok("request-password-reset").clone();
    assert_eq!(requested["status"], true);
    assert_eq!(&requested, ok("request-password-reset-unknown"));
    assert_eq!(ok("send-verification-email"), &json!({ "status": true }));
    let mails = smtp.wait_for(2, Duration::from_secs(20)).await;
    assert_eq!(mails.len(), 2, "{mails:?}\n{}", stack.auth.log());
    assert!(mails.iter().all(|m| m.rcpt_to == ["client@example.com"]));
    let reset_mail = mails
        .iter()
        .find(|m| m.data.contains("reset-password"))
        .expect("reset mail");
    let verify_mail = mails
        .iter()
        .find(|m| m.data.contains("verify-email"))
        .expect("verification mail");
    let reset_link = link_in(reset_mail, &format!("{base}/api/auth/reset-password/"));
    let verify_link = link_in(verify_mail, &format!("{base}/api/auth/verify-email?token="));
    // The reset link, opened through nginx, leads to the page with the token.
    let opened = testkit::http::client()
        .get(&reset_link)
        .send()
        .await
        .expect("GET");
    assert_eq!(opened.status(), 302);
    let page = testkit::http::header(&opened, "location").expect("location");
    let reset = page
        .strip_prefix("/reset-password?token=")
        .unwrap_or_else(|| panic!("{page}"))
        .to_owned();
    let verify = verify_link
        .split("token=")
        .nth(1)
        .and_then(|t| t.split('&').next())
        .expect("token")
        .to_owned();
    err(
        "reset-password-bad-token",
        400,
        "INVALID_TOKEN",
        "Invalid token",
    );
    err(
        "verify-email-bad-token",
        401,
        "INVALID_TOKEN",
        "Invalid token",
    );

    assert_eq!(ok("revoke-sessions"), &json!({ "status": true }));
    assert!(ok("get-session-after-revoke-all").is_null());

    // The links of the mails, used by the client.
    let r = run_client(
        &base,
        "links",
        &[
            ("RESET_TOKEN", reset.as_str()),
            ("VERIFY_TOKEN", verify.as_str()),
        ],
    );
    let step = |name: &str| {
        r.get(name)
            .cloned()
            .unwrap_or_else(|| panic!("no step {name}: {r:?}"))
    };
    let verified = step("verify-email");
    assert_eq!(verified["status"], 200, "{verified}");
    assert_eq!(verified["data"]["status"], true);
    assert_eq!(step("reset-password")["data"], json!({ "status": true }));
    let again = step("reset-password-again");
    assert_eq!(
        (again["status"].as_u64(), &again["error"]["code"]),
        (Some(400), &json!("INVALID_TOKEN"))
    );
    assert_eq!(step("sign-in-after-reset")["status"], 200);
    let session = step("get-session-after-reset");
    assert_eq!(session["data"]["user"]["emailVerified"], true, "{session}");
}
