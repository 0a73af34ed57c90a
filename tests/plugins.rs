//! better-auth 1.7's own client plugins (`emailOTPClient`, `twoFactorClient` and `passkeyClient`,
//! run by Node from `tests/node`) drive the e-mail code, two-factor and passkey flows of section
//! 10 twice: against our auth through nginx, reading the codes from the mail catcher as a person
//! would, computing the authenticator's codes from the `totpURI` and answering the passkey
//! ceremonies with a software authenticator, and against better-auth's own server with the same
//! plugins. Step by step, the answers (status, body shape, error codes, cookies set and cleared)
//! must agree, except where docs/api.md lists a difference.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use testkit::http::wait_for_status;
use testkit::postgres::TestPostgres;
use testkit::stack::{Process, ScratchDir, free_port};

use common::{MailCatcher, node_client_lines, start_stack_on_localhost};

const FLOWS: &str = "otp-sign-in,otp-attempts,otp-verify-email,otp-reset-password,otp-check,\
    otp-takeover,two-factor,two-factor-otp,passkey,change-email";

/// The steps where our answer differs from better-auth's on purpose, with the reason
/// (docs/api.md, "E-mail codes").
const DIFFERENCES: [(&str, &str, &str); 13] = [
    (
        "otp-sign-in",
        "send-change-email-type",
        "change-email is no code type here: 400 VALIDATION_ERROR with a code",
    ),
    (
        "otp-reset-password",
        "old-session-after-reset",
        "a reset by code ends every session, as the reset by link does",
    ),
    (
        "two-factor",
        "verify-totp-setup",
        "better-auth answers the user as it was before the set-up (twoFactorEnabled false); \
         auth answers it as it is now",
    ),
    (
        "passkey",
        "register-options",
        "a discoverable key with user verification (requireResidentKey true), for sign-in with \
         no address; webauthn-rs also asks for credProtect and uvm in `extensions`",
    ),
    (
        "passkey",
        "register-options-platform",
        "the same, with the attachment asked for",
    ),
    (
        "passkey",
        "verify-registration-garbage",
        "400 FAILED_TO_VERIFY_REGISTRATION where better-auth answers 500 with that code",
    ),
    (
        "passkey",
        "verify-registration",
        "aaguid is null: attestation is not asked for, so the authenticator's model is not kept",
    ),
    ("passkey", "list-user-passkeys", "the same: aaguid null"),
    ("passkey", "update-passkey", "the same: aaguid null"),
    (
        "change-email",
        "unverified-change",
        "better-auth sets its session cookie again to refresh the user it caches in it; ours \
         holds only the session's token, which does not change",
    ),
    (
        "change-email",
        "change-email-code",
        "the same: no session cookie set again",
    ),
    (
        "change-email",
        "verified-open-link",
        "the same: no session cookie set again (the body, the user as it is now, agrees)",
    ),
    (
        "change-email",
        "unverified-same-address",
        "400 with the contract's {code, message}: EMAIL_IS_THE_SAME, where better-auth sends the \
         message alone",
    ),
];

fn node_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("node")
}

/// Every line the client printed, by `(flow, step)`.
fn run_client(base: &str, codes: &str) -> BTreeMap<(String, String), Value> {
    node_client_lines("plugins-client.mjs", &[base, codes], &[("FLOWS", FLOWS)])
        .into_iter()
        .map(|v| {
            let key = (
                v["flow"].as_str().unwrap_or_default().to_owned(),
                v["step"].as_str().unwrap_or_default().to_owned(),
            );
            (key, v)
        })
        .collect()
}

/// better-auth's own server with the plugins, on a database of its own.
async fn start_peer(db: &TestPostgres, dir: &ScratchDir) -> (Process, String) {
    let port = free_port();
    let script = node_dir().join("peer-server.mjs");
    let process = Process::start(
        "better-auth",
        &PathBuf::from("node"),
        &[script.to_str().expect("path"), db.url(), &port.to_string()],
        &[],
        dir.path(),
    );
    // Its own host name, which its passkeys are bound to (peer-server.mjs).
    let base = format!("http://localhost:{port}");
    let status =
        wait_for_status(&format!("{base}/api/auth/ok"), 200, Duration::from_secs(60)).await;
    assert_eq!(
        status,
        Some(200),
        "better-auth never answered:\n{}",
        process.log()
    );
    (process, base)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codes_and_two_factor_answer_as_better_auth_does() {
    let catcher = MailCatcher::start().await;
    let smtp = catcher.smtp_url();
    // Passkeys need a host name: no browser, and no relying party, takes an IP address.
    let stack = start_stack_on_localhost(
        &[
            ("SMTP_URL", smtp.as_str()),
            ("MAIL_FROM", "Digiuno <no-reply@example.com>"),
            // Every call of the flows comes from this one address.
            ("AUTH_MAIL_RATE_LIMIT_MAX", "1000"),
            ("AUTH_RATE_LIMIT_MAX", "1000"),
        ],
        &[],
    )
    .await;
    let peer_db = TestPostgres::empty();
    let dir = ScratchDir::new("better-auth-peer");
    let (peer, peer_base) = start_peer(&peer_db, &dir).await;

    let ours = run_client(&stack.base(), &format!("maildump:{}", catcher.web()));
    let mut theirs = run_client(
        &peer_base,
        &format!("{peer_base}/__codes?email={{email}}&type={{type}}"),
    );
    // Our get-session does not show the session's token: it is the bearer secret, kept in the
    // HttpOnly cookie only. And auth has no cookie cache (`session_data`) and no don't-remember
    // cookie (a session-only cookie says it): better-auth clears both wherever it clears the
    // session, auth has neither to clear.
    for line in theirs.values_mut() {
        if let Some(session) = line["body"].get_mut("session") {
            drop_field(session, "token");
        }
        for list in ["cookies", "cleared"] {
            if let Some(names) = line[list].as_array_mut() {
                names.retain(|n| {
                    !["digiuno.session_data", "digiuno.dont_remember"]
                        .contains(&n.as_str().unwrap_or_default())
                });
            }
        }
    }
    assert!(ours.len() > 50, "{} steps ran", ours.len());

    let mut unexplained = Vec::new();
    let mut explained = Vec::new();
    let keys: std::collections::BTreeSet<_> = ours.keys().chain(theirs.keys()).collect();
    for key in keys {
        let (a, b) = (ours.get(key), theirs.get(key));
        let same = match (a, b) {
            (Some(a), Some(b)) => ["status", "body", "cookies", "cleared"]
                .iter()
                .all(|f| a[f] == b[f]),
            _ => false,
        };
        if same {
            continue;
        }
        let line = format!(
            "{} / {}:\n  ours   {}\n  theirs {}",
            key.0,
            key.1,
            a.map_or("(missing)".into(), Value::to_string),
            b.map_or("(missing)".into(), Value::to_string)
        );
        if DIFFERENCES
            .iter()
            .any(|(flow, step, _)| *flow == key.0 && *step == key.1)
        {
            explained.push(line);
        } else {
            unexplained.push(line);
        }
    }
    assert!(
        unexplained.is_empty(),
        "answers that differ from better-auth's:\n{}\n\nexpected differences:\n{}\n\nauth:\n{}\nbetter-auth:\n{}",
        unexplained.join("\n"),
        explained.join("\n"),
        stack.auth.log(),
        peer.log()
    );
    // Each listed difference still exists: a list that no longer holds is fixed, not kept.
    assert_eq!(
        explained.len(),
        DIFFERENCES.len(),
        "listed differences that no longer differ:\n{}",
        explained.join("\n")
    );
}

/// `value` without `field`, at any depth.
fn drop_field(value: &mut Value, field: &str) {
    match value {
        Value::Object(map) => {
            map.remove(field);
            map.values_mut().for_each(|v| drop_field(v, field));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| drop_field(v, field)),
        _ => {}
    }
}
