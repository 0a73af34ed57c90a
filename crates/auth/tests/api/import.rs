//! `auth import-better-auth`: a user signed up by the real better-auth server (run by Node from
//! tests/node) signs in here with the same password, after which the hash is argon2id.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use testkit::postgres::TestPostgres;
use testkit::process;

use crate::helpers::spawn_app;

const EMAIL: &str = "imported@example.com";
/// Not ASCII, so that the NFKC step and the salt handling both matter.
const PASSWORD: &str = "Pässwörd-ﬁle-123";

fn node_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/node")
}

/// Signs `EMAIL` up (and in once more) with better-auth's own server code on `url`.
fn sign_up_with_better_auth(url: &str) -> Value {
    let dir = node_dir();
    assert!(
        dir.join("node_modules/better-auth").is_dir(),
        "tests/node has no node_modules: run `npm ci` there (scripts/test does)"
    );
    let out = Command::new("node")
        .current_dir(&dir)
        .args([
            "better-auth-server.mjs",
            url,
            EMAIL,
            PASSWORD,
            "Imported User",
        ])
        .output()
        .expect("run node");
    assert!(
        out.status.success(),
        "better-auth failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON line")
}

fn import(target: &str, source: &str) -> Value {
    let out = process::run(
        Path::new(env!("CARGO_BIN_EXE_auth")),
        &["import-better-auth", "--from", source],
        &[("DATABASE_URL", target), ("RUST_LOG", "warn")],
    );
    assert!(
        out.status.success(),
        "import failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("report")
}

#[tokio::test]
async fn a_better_auth_user_signs_in_with_the_old_password_and_gets_argon2id() {
    let source = TestPostgres::empty();
    let made = sign_up_with_better_auth(source.url());
    let user_id = made["userId"].as_str().expect("user id").to_owned();
    assert_eq!(made["sessions"], 2);

    let app = spawn_app().await;
    let report = import(app.db.url(), source.url());
    assert_eq!(
        report,
        json!({ "users": { "copied": 1, "existing": 0 }, "conflicts": 0,
                "accounts": { "copied": 1, "existing": 0 },
                "sessions": { "copied": 2, "existing": 0 } })
    );
    let hash_query = format!(
        "SELECT password AS v FROM auth.account WHERE user_id = '{user_id}' AND provider_id = 'credential'"
    );
    let imported = app.scalar(&hash_query).expect("hash");
    assert!(
        imported.len() == 32 + 1 + 128 && imported.as_bytes()[32] == b':',
        "better-auth's saltHex:keyHex: {imported}"
    );

    let wrong = app.sign_in(EMAIL, "Passwörd-ﬁle-123").await;
    assert_eq!(wrong.status, 401);
    assert_eq!(app.scalar(&hash_query).as_deref(), Some(imported.as_str()));

    let signed_in = app.sign_in(EMAIL, PASSWORD).await;
    assert_eq!(signed_in.status, 200, "{}", signed_in.text);
    assert_eq!(signed_in.body["user"]["id"], json!(user_id));
    let upgraded = app.scalar(&hash_query).expect("hash");
    assert!(upgraded.starts_with("$argon2id$"), "{upgraded}");

    // A second run copies nothing and leaves the upgraded hash alone.
    let again = import(app.db.url(), source.url());
    assert_eq!(again["users"], json!({ "copied": 0, "existing": 1 }));
    assert_eq!(again["accounts"], json!({ "copied": 0, "existing": 1 }));
    assert_eq!(app.scalar(&hash_query).as_deref(), Some(upgraded.as_str()));
    let later = app.sign_in(EMAIL, PASSWORD).await;
    assert_eq!(later.status, 200, "{}", later.text);
}
