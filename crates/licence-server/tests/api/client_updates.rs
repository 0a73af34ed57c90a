//! licence-client's updater helper against the real Tauri feed: it finds the release the licence
//! is offered, downloads it by the signed address and keeps it only once the minisign signature
//! made where the build was made verifies with the pinned key.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use licence_client::{Error, UpdateKey};
use serde_json::json;
use testkit::stack::ScratchDir;

use crate::helpers::{TestApp, build_bytes, client, spawn_app, trusted_keys};

const BUILD: &str = "App_2.0.0_amd64.AppImage";

/// Writes a 2.0.0 release for Linux (AppImage) signed by a new minisign key; its public key.
fn publish(app: &TestApp) -> minisign::PublicKey {
    let minisign::KeyPair { pk, sk } =
        minisign::KeyPair::generate_unencrypted_keypair().expect("minisign key");
    let bytes = build_bytes(200_000, 42);
    std::fs::write(app.builds.path().join(BUILD), &bytes).expect("write build");
    let sig = minisign::sign(
        Some(&pk),
        &sk,
        std::io::Cursor::new(&bytes),
        Some("timestamp:1764000000\tfile:App_2.0.0_amd64.AppImage\tversion:2.0.0"),
        None,
    )
    .expect("sign");
    let releases = json!({"releases": [{
        "version": "2.0.0",
        "pubDate": "2026-11-20T10:00:00Z",
        "channel": "stable",
        "notes": "New editor.",
        "files": [{
            "platform": "linux-x86_64-appimage",
            "name": BUILD,
            "tauriSignature": STANDARD.encode(sig.to_string()),
        }],
    }]});
    std::fs::write(
        app.builds.path().join("releases.json"),
        releases.to_string(),
    )
    .expect("write releases.json");
    pk
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_installs_a_verified_update_from_the_real_feed() {
    let app = spawn_app().await;
    let pk = publish(&app);
    let dir = ScratchDir::new("licence-client-updates");
    let client = client(&app.base, trusted_keys(&app).await, &dir, &app.clock);
    let key = app.licence("pro", "active");
    client
        .activate(&key, Some("Laptop"))
        .await
        .expect("activate");

    let mut update = client
        .check_update_for("linux", "x86_64", "1.0.0", Some("appimage"))
        .await
        .expect("feed")
        .expect("2.0.0 is offered");
    assert_eq!(update.version, "2.0.0");
    assert_eq!(update.notes.as_deref(), Some("New editor."));
    // The address names PUBLIC_BASE_URL; the test's service listens elsewhere.
    update.url = update.url.replace("http://127.0.0.1:8083", &app.base);

    let pinned = UpdateKey::parse(&STANDARD.encode(pk.to_box().expect("box").to_string()))
        .expect("Tauri's form of the key");
    let dest = dir.path().join("downloads").join(BUILD);
    client
        .download_update(&update, &pinned, &dest)
        .await
        .expect("verified");
    assert_eq!(
        std::fs::read(&dest).expect("downloaded"),
        std::fs::read(app.builds.path().join(BUILD)).expect("build")
    );

    // A key the build was not signed with keeps nothing.
    let other = minisign::KeyPair::generate_unencrypted_keypair().expect("minisign key");
    let wrong = UpdateKey::parse(&other.pk.to_base64()).expect("key");
    let elsewhere = dir.path().join("elsewhere").join(BUILD);
    let refused = client.download_update(&update, &wrong, &elsewhere).await;
    assert!(
        matches!(refused, Err(Error::UpdateRefused(_))),
        "{refused:?}"
    );
    assert!(!elsewhere.exists());

    // Nothing newer than 2.0.0: the feed's 204.
    assert_eq!(
        client
            .check_update_for("linux", "x86_64", "2.0.0", Some("appimage"))
            .await
            .expect("feed"),
        None
    );
}
