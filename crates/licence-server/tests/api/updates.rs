//! The updater feeds (contract section 12): each answer is read by the updater's own code or
//! its documented format, and its signatures are checked against the bytes the signed address
//! downloads.

use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use ed25519_dalek::{Signer as _, SigningKey, Verifier as _, VerifyingKey};
use licence_server::schema::licence;
use serde_json::{Value, json};
use sha2::Digest;

use crate::helpers::{
    DOWNLOAD_KEY, TestApp, VARIANT_PRO, assert_error, build_bytes, local_path, order_created,
    spawn_app_at,
};

/// A copy of tauri-plugin-updater's reading of an update server's answer and of its signature
/// check (plugins-workspace, `plugins/updater/src/updater.rs`; MIT or Apache-2.0, © Tauri
/// Programme within The Commons Conservancy), reduced to what a dynamic server answers, so that
/// the tests read our answers exactly as an installed Tauri app does.
mod tauri_plugin {
    use std::collections::HashMap;
    use std::str::FromStr;

    use base64::Engine;
    use minisign_verify::{PublicKey, Signature};
    use semver::Version;
    use serde::de::Error as DeError;
    use serde::{Deserialize, Deserializer};
    use time::OffsetDateTime;
    use url::Url;

    #[derive(Debug, Deserialize, Clone)]
    pub struct ReleaseManifestPlatform {
        pub url: Url,
        pub signature: String,
    }

    #[derive(Debug, Clone)]
    pub enum RemoteReleaseInner {
        Dynamic(ReleaseManifestPlatform),
        Static {
            #[allow(dead_code)]
            platforms: HashMap<String, ReleaseManifestPlatform>,
        },
    }

    #[derive(Debug, Clone)]
    pub struct RemoteRelease {
        pub version: Version,
        pub notes: Option<String>,
        pub pub_date: Option<OffsetDateTime>,
        pub data: RemoteReleaseInner,
    }

    impl<'de> Deserialize<'de> for RemoteRelease {
        fn deserialize<D>(deserializer: D) -> std::result::Result<Self, D::Error>
        where
            D: Deserializer<'de>,
        {
            #[derive(Deserialize)]
            struct InnerRemoteRelease {
                #[serde(alias = "name", deserialize_with = "parse_version")]
                version: Version,
                notes: Option<String>,
                pub_date: Option<String>,
                platforms: Option<HashMap<String, ReleaseManifestPlatform>>,
                // dynamic platform response
                url: Option<Url>,
                signature: Option<String>,
            }

            let release = InnerRemoteRelease::deserialize(deserializer)?;

            let pub_date = if let Some(date) = release.pub_date {
                Some(
                    OffsetDateTime::parse(&date, &time::format_description::well_known::Rfc3339)
                        .map_err(|e| {
                            DeError::custom(format!("invalid value for `pub_date`: {e}"))
                        })?,
                )
            } else {
                None
            };

            Ok(RemoteRelease {
                version: release.version,
                notes: release.notes,
                pub_date,
                data: if let Some(platforms) = release.platforms {
                    RemoteReleaseInner::Static { platforms }
                } else {
                    RemoteReleaseInner::Dynamic(ReleaseManifestPlatform {
                        url: release.url.ok_or_else(|| {
                            DeError::custom("the `url` field was not set on the updater response")
                        })?,
                        signature: release.signature.ok_or_else(|| {
                            DeError::custom(
                                "the `signature` field was not set on the updater response",
                            )
                        })?,
                    })
                },
            })
        }
    }

    fn parse_version<'de, D>(deserializer: D) -> std::result::Result<Version, D::Error>
    where
        D: serde::Deserializer<'de>,
    {
        let str = String::deserialize(deserializer)?;

        Version::from_str(str.trim_start_matches('v')).map_err(serde::de::Error::custom)
    }

    pub fn verify_signature(
        data: &[u8],
        release_signature: &str,
        pub_key: &str,
        announced_version: &str,
        require_signed_version: bool,
    ) -> Result<(), String> {
        let pub_key_decoded = base64_to_string(pub_key)?;
        let public_key = PublicKey::decode(&pub_key_decoded).map_err(|e| e.to_string())?;
        let signature_base64_decoded = base64_to_string(release_signature)?;
        let signature = Signature::decode(&signature_base64_decoded).map_err(|e| e.to_string())?;
        public_key
            .verify(data, &signature, true)
            .map_err(|e| e.to_string())?;
        verify_signed_version(
            signature.trusted_comment(),
            announced_version,
            require_signed_version,
        )
    }

    pub fn verify_signed_version(
        trusted_comment: &str,
        announced_version: &str,
        require_signed_version: bool,
    ) -> Result<(), String> {
        let Some(signed_version) = signed_version(trusted_comment) else {
            return if require_signed_version {
                Err("missing signed version".into())
            } else {
                Ok(())
            };
        };
        let matches = match (
            Version::from_str(signed_version.trim_start_matches('v')),
            Version::from_str(announced_version.trim_start_matches('v')),
        ) {
            (Ok(signed), Ok(announced)) => signed == announced,
            _ => signed_version == announced_version,
        };
        if matches {
            Ok(())
        } else {
            Err(format!(
                "signed for {signed_version}, announced as {announced_version}"
            ))
        }
    }

    pub fn signed_version(trusted_comment: &str) -> Option<&str> {
        trusted_comment
            .split('\t')
            .find_map(|field| field.strip_prefix("version:"))
    }

    fn base64_to_string(base64_string: &str) -> Result<String, String> {
        let decoded_string = &base64::engine::general_purpose::STANDARD
            .decode(base64_string)
            .map_err(|e| e.to_string())?;
        let result = std::str::from_utf8(decoded_string)
            .map_err(|_| format!("signature is not UTF-8: {base64_string}"))?
            .to_string();
        Ok(result)
    }

    // The plugin's own tests of the signed version, and of the reading above.
    const CURRENT: &str = "timestamp:1700000000\tfile:app_1.2.3_x64.msi.zip\tversion:1.2.3";
    const LEGACY: &str = "timestamp:1600000000\tfile:app_1.0.0_x64.msi.zip";

    #[test]
    fn reads_the_signed_version() {
        assert_eq!(signed_version(CURRENT), Some("1.2.3"));
        assert_eq!(signed_version(LEGACY), None);
        assert_eq!(signed_version("timestamp:1\tfile:app-version:2.zip"), None);
    }

    #[test]
    fn accepts_a_matching_version() {
        assert!(verify_signed_version(CURRENT, "1.2.3", true).is_ok());
        assert!(verify_signed_version(CURRENT, "1.2.3", false).is_ok());
        assert!(verify_signed_version(CURRENT, "v1.2.3", true).is_ok());
    }

    #[test]
    fn rejects_a_version_the_artifact_was_not_signed_for() {
        assert!(verify_signed_version(CURRENT, "9.9.9", false).is_err());
        assert!(verify_signed_version(CURRENT, "9.9.9", true).is_err());
        assert!(verify_signed_version(CURRENT, "1.2.4", true).is_err());
    }

    #[test]
    fn only_requires_a_signed_version_when_configured() {
        assert!(verify_signed_version(LEGACY, "9.9.9", false).is_ok());
        assert!(verify_signed_version(LEGACY, "9.9.9", true).is_err());
    }

    #[test]
    fn reads_dynamic_and_static_answers() {
        let dynamic: RemoteRelease = serde_json::from_str(
            r#"{"version": "v2.0.0", "notes": "n", "pub_date": "2026-11-20T10:00:00Z",
                "url": "https://example.com/a", "signature": "c2ln"}"#,
        )
        .expect("dynamic");
        assert_eq!(dynamic.version, Version::new(2, 0, 0));
        assert!(matches!(dynamic.data, RemoteReleaseInner::Dynamic(_)));
        let stat: RemoteRelease = serde_json::from_str(
            r#"{"version": "2.0.0", "platforms": {"linux-x86_64":
                {"url": "https://example.com/a", "signature": "c2ln"}}}"#,
        )
        .expect("static");
        assert!(matches!(stat.data, RemoteReleaseInner::Static { .. }));
        for bad in [
            r#"{"version": "2.0", "url": "https://e/a", "signature": "s"}"#,
            r#"{"version": "2.0.0", "pub_date": "yesterday", "url": "https://e/a", "signature": "s"}"#,
            r#"{"version": "2.0.0", "url": "https://e/a"}"#,
        ] {
            assert!(serde_json::from_str::<RemoteRelease>(bad).is_err(), "{bad}");
        }
    }
}

/// When every test's clock stands: after every release below.
fn now() -> DateTime<Utc> {
    "2026-11-28T12:00:00Z".parse().expect("time")
}

/// One file of the test releases.
struct Build {
    version: &'static str,
    platform: &'static str,
    name: &'static str,
    len: usize,
    tauri: bool,
    sparkle: bool,
}

const APPIMAGE_2: &str = "app_2.0.0_amd64.AppImage";
const MAC_ZIP_2: &str = "App-2.0.0-arm64-mac.zip";

const BUILDS: &[Build] = &[
    Build {
        version: "1.9.0",
        platform: "linux-x86_64",
        name: "app_1.9.0_amd64.AppImage",
        len: 3000,
        tauri: true,
        sparkle: false,
    },
    Build {
        version: "1.9.0",
        platform: "darwin-aarch64",
        name: "App-1.9.0-arm64-mac.zip",
        len: 3100,
        tauri: true,
        sparkle: true,
    },
    Build {
        version: "1.9.0",
        platform: "windows-x86_64",
        name: "App Setup 1.9.0.exe",
        len: 3200,
        tauri: true,
        sparkle: false,
    },
    Build {
        version: "2.0.0",
        platform: "linux-x86_64-deb",
        name: "app_2.0.0_amd64.deb",
        len: 4000,
        tauri: true,
        sparkle: false,
    },
    // Bigger than the service's 512 KiB read buffer, so that ranges cross its chunks.
    Build {
        version: "2.0.0",
        platform: "linux-x86_64-appimage",
        name: APPIMAGE_2,
        len: 1_200_000,
        tauri: true,
        sparkle: false,
    },
    Build {
        version: "2.0.0",
        platform: "darwin-aarch64-dmg",
        name: "App-2.0.0-arm64.dmg",
        len: 4200,
        tauri: false,
        sparkle: false,
    },
    Build {
        version: "2.0.0",
        platform: "darwin-aarch64",
        name: MAC_ZIP_2,
        len: 4300,
        tauri: true,
        sparkle: true,
    },
    Build {
        version: "2.0.0",
        platform: "windows-x86_64",
        name: "App Setup 2.0.0.exe",
        len: 4400,
        tauri: true,
        sparkle: false,
    },
    Build {
        version: "2.1.0-beta.1",
        platform: "linux-x86_64-appimage",
        name: "app_2.1.0-beta.1_amd64.AppImage",
        len: 5000,
        tauri: true,
        sparkle: false,
    },
    Build {
        version: "2.1.0-beta.1",
        platform: "darwin-aarch64",
        name: "App-2.1.0-beta.1-arm64-mac.zip",
        len: 5100,
        tauri: true,
        sparkle: true,
    },
];

const RELEASES: &[(&str, &str, &str, &str)] = &[
    ("1.9.0", "2026-10-01T09:00:00Z", "stable", "Calmer sync."),
    (
        "2.0.0",
        "2026-11-20T10:00:00Z",
        "stable",
        "New editor: \"fast\" & <safe>.\nSecond line: ok",
    ),
    (
        "2.1.0-beta.1",
        "2026-11-25T10:00:00Z",
        "beta",
        "Try the new export.",
    ),
];

/// A service whose builds directory holds the releases above, signed the way their builders
/// sign them: Tauri's minisign key and Sparkle's Ed25519 key.
struct Feeds {
    app: TestApp,
    /// Tauri's `pubkey`: the base64 of the minisign public key file.
    tauri_pubkey: String,
    sparkle_key: VerifyingKey,
}

async fn feeds() -> Feeds {
    let app = spawn_app_at(now()).await;
    let minisign::KeyPair { pk, sk } =
        minisign::KeyPair::generate_unencrypted_keypair().expect("minisign key");
    let tauri_pubkey = STANDARD.encode(pk.to_box().expect("public key box").to_string());
    let sparkle = SigningKey::from_bytes(&[7u8; 32]);
    let mut files: Vec<(String, Value)> = Vec::new();
    for (i, b) in BUILDS.iter().enumerate() {
        let bytes = build_bytes(b.len, u32::try_from(i).unwrap_or(0) + 100);
        std::fs::write(app.builds.path().join(b.name), &bytes).expect("write build");
        let mut file = json!({"platform": b.platform, "name": b.name});
        if b.tauri {
            // As `tauri signer sign` writes it: the trusted comment names the file and version.
            let trusted = format!(
                "timestamp:1764000000\tfile:{}\tversion:{}",
                b.name, b.version
            );
            let sig = minisign::sign(
                Some(&pk),
                &sk,
                std::io::Cursor::new(&bytes),
                Some(&trusted),
                Some("signature from tauri secret key"),
            )
            .expect("minisign");
            file["tauriSignature"] = json!(STANDARD.encode(sig.to_string()));
        }
        if b.sparkle {
            file["edSignature"] = json!(STANDARD.encode(sparkle.sign(&bytes).to_bytes()));
        }
        files.push((b.version.to_owned(), file));
    }
    std::fs::write(
        app.builds.path().join(format!("{APPIMAGE_2}.blockmap")),
        blockmap_bytes(),
    )
    .expect("write blockmap");
    let releases: Vec<Value> = RELEASES
        .iter()
        .map(|(version, date, channel, notes)| {
            json!({
                "version": version,
                "pubDate": date,
                "channel": channel,
                "notes": notes,
                "files": files.iter().filter(|(v, _)| v == version).map(|(_, f)| f.clone()).collect::<Vec<_>>(),
            })
        })
        .collect();
    write_releases(&app, &json!({ "releases": releases }));
    Feeds {
        app,
        tauri_pubkey,
        sparkle_key: sparkle.verifying_key(),
    }
}

fn blockmap_bytes() -> Vec<u8> {
    build_bytes(2345, 99)
}

fn write_releases(app: &TestApp, releases: &Value) {
    std::fs::write(
        app.builds.path().join("releases.json"),
        serde_json::to_vec_pretty(releases).expect("json"),
    )
    .expect("write releases.json");
}

fn bytes_of(app: &TestApp, name: &str) -> Vec<u8> {
    std::fs::read(app.builds.path().join(name)).expect("read build")
}

/// A licence activated on one installation: its key and token.
async fn licensed(app: &TestApp) -> (String, String) {
    let key = app.licence("pro", "active");
    let token = app.token(&key, "desk-1").await;
    (key, token)
}

/// Sets columns of the licence with `key` as an operator or a subscription event would.
fn set_licence(app: &TestApp, key: &str, status: &str, expires_at: Option<&str>, disabled: bool) {
    let expires = expires_at.map(|t| t.parse::<DateTime<Utc>>().expect("time").naive_utc());
    let disabled_at = disabled.then(|| now().naive_utc());
    diesel::update(licence::table.filter(licence::license_key.eq(key)))
        .set((
            licence::status.eq(status),
            licence::expires_at.eq(expires),
            licence::disabled_at.eq(disabled_at),
        ))
        .execute(&mut app.conn())
        .expect("update licence");
}

/// `licence-server admin channel --key K <channel>`, as an operator runs it.
fn admin_channel(app: &TestApp, key: &str, channel: &str) {
    let out = testkit::process::run(
        Path::new(env!("CARGO_BIN_EXE_licence-server")),
        &["admin", "channel", "--key", key, channel],
        &[("DATABASE_URL", app.db.url()), ("RUST_LOG", "warn")],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: Value = serde_json::from_str(stdout.trim()).expect("JSON on stdout");
    assert_eq!(answer["channel"], channel, "{answer}");
    // `admin show` says it too.
    let out = testkit::process::run(
        Path::new(env!("CARGO_BIN_EXE_licence-server")),
        &["admin", "show", key],
        &[("DATABASE_URL", app.db.url()), ("RUST_LOG", "warn")],
    );
    let shown: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(shown["channel"], channel, "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_channel_refuses_unknown_keys_and_channels() {
    let app = spawn_app_at(now()).await;
    let key = app.licence("pro", "active");
    for args in [
        [
            "admin",
            "channel",
            "--key",
            "AAAAA-BBBBB-CCCCC-DDDDD-EEEEE",
            "beta",
        ],
        ["admin", "channel", "--key", key.as_str(), "nightly"],
    ] {
        let out = testkit::process::run(
            Path::new(env!("CARGO_BIN_EXE_licence-server")),
            &args,
            &[("DATABASE_URL", app.db.url()), ("RUST_LOG", "warn")],
        );
        assert!(!out.status.success(), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?}: a message on stderr");
    }
    // A key typed in lower case is the same key.
    admin_channel(&app, &key.to_lowercase(), "beta");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_input_on_the_feeds_is_a_4xx_with_the_error_body() {
    let f = feeds().await;
    let app = &f.app;
    let (_, token) = licensed(app).await;
    let long = "9".repeat(5000);
    let odd = [
        "%00",
        "%FF%FE",
        "%E2%80%AE",
        "..",
        "%2E%2E",
        "1.0.0%0Aversion:9",
        "%3Cscript%3E",
        long.as_str(),
    ];
    let mut paths = Vec::new();
    for o in odd {
        paths.push(format!("/api/updates/tauri/{o}/x86_64/1.0.0"));
        paths.push(format!("/api/updates/tauri/linux/{o}/1.0.0"));
        paths.push(format!("/api/updates/tauri/linux/x86_64/{o}"));
        paths.push(format!("/api/updates/tauri/linux/x86_64/1.0.0?bundle={o}"));
        paths.push(format!("/api/updates/electron/{o}"));
        paths.push(format!("/api/updates/electron/{o}.yml"));
        paths.push(format!("/api/updates/sparkle/{o}"));
        paths.push(format!("/api/updates/sparkle/{o}.xml"));
        paths.push(format!("/api/download.blockmap?file={o}&expires=1&sig={o}"));
        paths.push(format!(
            "/api/download.blockmap?file={o}&expires={o}&sig=00"
        ));
    }
    for path in &paths {
        let resp = get(app, path, Some(&token), &[]).await;
        let status = resp.status().as_u16();
        let (_, body) = crate::helpers::answer(resp).await;
        assert!((400..500).contains(&status), "{path}: {status} {body}");
        assert!(
            body["code"].as_str().is_some_and(|c| !c.is_empty()),
            "{path}: {body}"
        );
        assert!(body["message"].is_string(), "{path}: {body}");
    }
}

async fn get(
    app: &TestApp,
    path: &str,
    token: Option<&str>,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    let mut req = app.client.get(format!("{}{path}", app.base));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.expect("GET")
}

async fn download(app: &TestApp, url: &str) -> Vec<u8> {
    let resp = get(app, &local_path(url), None, &[]).await;
    assert_eq!(resp.status(), 200, "{url}");
    resp.bytes().await.expect("body").to_vec()
}

/// Tauri's check: the answer as the plugin reads it, or `None` for 204.
async fn tauri_check(
    app: &TestApp,
    path: &str,
    token: &str,
) -> Option<tauri_plugin::RemoteRelease> {
    let resp = get(app, path, Some(token), &[]).await;
    match resp.status().as_u16() {
        204 => None,
        200 => {
            let text = resp.text().await.expect("body");
            Some(serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}")))
        }
        other => panic!("{path}: {other} {}", resp.text().await.unwrap_or_default()),
    }
}

/// The release the Tauri feed at `path` offers to `token`, which must be `version`.
async fn tauri_offer(
    app: &TestApp,
    path: &str,
    token: &str,
    version: &str,
) -> tauri_plugin::RemoteRelease {
    let release = tauri_check(app, path, token).await.expect("an update");
    assert_eq!(release.version.to_string(), version, "{path}");
    release
}

fn dynamic(release: &tauri_plugin::RemoteRelease) -> &tauri_plugin::ReleaseManifestPlatform {
    match &release.data {
        tauri_plugin::RemoteReleaseInner::Dynamic(p) => p,
        tauri_plugin::RemoteReleaseInner::Static { .. } => panic!("a dynamic answer"),
    }
}

fn file_of(url: &url::Url) -> String {
    url.query_pairs()
        .find(|(k, _)| k == "file")
        .map(|(_, v)| v.into_owned())
        .expect("file parameter")
}

/// Downloads the 2.0.0 build a Tauri `platform` entry offers, which must be `file`, and checks
/// that Tauri accepts its signature; the bytes.
async fn download_accepted(
    f: &Feeds,
    platform: &tauri_plugin::ReleaseManifestPlatform,
    file: &str,
) -> Vec<u8> {
    assert_eq!(file_of(&platform.url), file);
    let bytes = download(&f.app, platform.url.as_str()).await;
    tauri_plugin::verify_signature(&bytes, &platform.signature, &f.tauri_pubkey, "2.0.0", true)
        .expect("Tauri accepts the signature");
    bytes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tauri_installs_what_the_feed_offers_and_its_signature_holds() {
    let f = feeds().await;
    let (_, token) = licensed(&f.app).await;

    let appimage = "/api/updates/tauri/linux/x86_64/1.0.0?bundle=appimage";
    let release = tauri_offer(&f.app, appimage, &token, "2.0.0").await;
    assert_eq!(
        release.notes.as_deref(),
        Some("New editor: \"fast\" & <safe>.\nSecond line: ok")
    );
    assert_eq!(
        release.pub_date.map(|d| d.unix_timestamp()),
        Some(
            "2026-11-20T10:00:00Z"
                .parse::<DateTime<Utc>>()
                .expect("t")
                .timestamp()
        )
    );
    let platform = dynamic(&release);
    let bytes = download_accepted(&f, platform, APPIMAGE_2).await;
    assert_eq!(bytes, bytes_of(&f.app, APPIMAGE_2));
    // The same signature does not pass for other bytes.
    assert!(
        tauri_plugin::verify_signature(
            &bytes[1..],
            &platform.signature,
            &f.tauri_pubkey,
            "2.0.0",
            true
        )
        .is_err()
    );

    // Without a bundle only plain `<os>-<arch>` files count: 2.0.0 has none for Linux.
    tauri_offer(
        &f.app,
        "/api/updates/tauri/linux/x86_64/1.0.0",
        &token,
        "1.9.0",
    )
    .await;
    // A bundle the release lacks falls back to the plain file.
    let app_bundle = "/api/updates/tauri/darwin/aarch64/v1.9.0?bundle=app";
    let mac = tauri_offer(&f.app, app_bundle, &token, "2.0.0").await;
    download_accepted(&f, dynamic(&mac), MAC_ZIP_2).await;

    // Nothing newer: 204, never 404. A platform without builds is "nothing newer" too.
    for path in [
        "/api/updates/tauri/linux/x86_64/2.0.0?bundle=appimage",
        "/api/updates/tauri/linux/x86_64/3.0.0",
        "/api/updates/tauri/windows/aarch64/1.0.0",
    ] {
        assert!(tauri_check(&f.app, path, &token).await.is_none(), "{path}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tauri_refuses_tokens_and_input_as_validate_does() {
    let f = feeds().await;
    let (key, token) = licensed(&f.app).await;
    let path = "/api/updates/tauri/linux/x86_64/1.0.0";

    let resp = get(&f.app, path, None, &[]).await;
    let (s, b) = crate::helpers::answer(resp).await;
    assert_error(s, &b, 401, "INVALID_TOKEN");
    let resp = get(&f.app, path, Some("not.a.token"), &[]).await;
    let (s, b) = crate::helpers::answer(resp).await;
    assert_error(s, &b, 401, "INVALID_TOKEN");

    for bad in [
        "/api/updates/tauri/solaris/x86_64/1.0.0",
        "/api/updates/tauri/linux/x64/1.0.0",
        "/api/updates/tauri/linux/x86_64/latest",
        "/api/updates/tauri/linux/x86_64/1.0",
        "/api/updates/tauri/linux/x86_64/..%2F..%2Fetc%2Fpasswd",
        "/api/updates/tauri/linux/x86_64/1.0.0?bundle=..%2Fx",
        "/api/updates/tauri/linux/x86_64/1.0.0?bundle=appimage&bundle=deb",
        "/api/updates/tauri/linux/x86_64/1.0.0?channel=beta",
    ] {
        let (s, b) = f.app.get(bad, Some(&token)).await;
        assert_error(s, &b, 400, "VALIDATION_ERROR");
    }
    let (s, b) = f
        .app
        .get("/api/updates/tauri/linux/x86_64", Some(&token))
        .await;
    assert_error(s, &b, 404, "NOT_FOUND");

    // A refunded or switched-off licence is offered nothing: 403 with validate's body.
    set_licence(&f.app, &key, "refunded", None, true);
    let (s, b) = f.app.get(path, Some(&token)).await;
    assert_error(s, &b, 403, "LICENSE_INACTIVE");
    assert_eq!(b["valid"], false);
    set_licence(&f.app, &key, "active", None, true);
    let (s, b) = f.app.get(path, Some(&token)).await;
    assert_error(s, &b, 403, "LICENSE_INACTIVE");
    // An installation that lost its seat.
    set_licence(&f.app, &key, "active", None, false);
    let (s, _) = f.app.deactivate(&key, "desk-1").await;
    assert_eq!(s, 200);
    let (s, b) = f.app.get(path, Some(&token)).await;
    assert_error(s, &b, 403, "INSTANCE_NOT_ACTIVE");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn channels_and_lapsed_licences_get_what_they_are_offered_on_every_feed() {
    let f = feeds().await;
    let app = &f.app;
    let (key, token) = licensed(app).await;
    let tauri = "/api/updates/tauri/linux/x86_64/1.0.0?bundle=appimage";
    let version = async |path: &str| {
        tauri_check(app, path, &token)
            .await
            .map(|r| r.version.to_string())
    };
    let electron_offers = async |file: &str| electron_version(app, file, &token).await;
    let feed = sparkle_feed(app, &token).await;

    // Stable: the newest stable release everywhere, no beta item in the appcast.
    assert_eq!(version(tauri).await.as_deref(), Some("2.0.0"));
    assert_eq!(electron_offers("latest-linux.yml").await, "2.0.0");
    assert_eq!(electron_offers("beta-linux.yml").await, "2.0.0");
    assert_eq!(appcast_versions(app, &feed).await, ["2.0.0", "1.9.0"]);

    // Beta sees beta and stable.
    admin_channel(app, &key, "beta");
    assert_eq!(version(tauri).await.as_deref(), Some("2.1.0-beta.1"));
    assert_eq!(electron_offers("beta-linux.yml").await, "2.1.0-beta.1");
    assert_eq!(electron_offers("latest-linux.yml").await, "2.1.0-beta.1");
    assert_eq!(
        appcast_versions(app, &feed).await,
        ["2.1.0-beta.1", "2.0.0", "1.9.0"]
    );

    // Access ended on 22 November: what was published before, the beta of the 25th not.
    set_licence(app, &key, "expired", Some("2026-11-22T00:00:00Z"), false);
    assert_eq!(version(tauri).await.as_deref(), Some("2.0.0"));
    assert_eq!(electron_offers("beta-mac.yml").await, "2.0.0");
    assert_eq!(appcast_versions(app, &feed).await, ["2.0.0", "1.9.0"]);

    // Ended on 1 November, back on stable: only 1.9.0.
    admin_channel(app, &key, "stable");
    set_licence(app, &key, "cancelled", Some("2026-11-01T00:00:00Z"), false);
    assert_eq!(version(tauri).await.as_deref(), Some("1.9.0"));
    assert_eq!(
        version("/api/updates/tauri/linux/x86_64/1.9.0?bundle=appimage").await,
        None
    );
    assert_eq!(electron_offers("latest-linux.yml").await, "1.9.0");
    assert_eq!(appcast_versions(app, &feed).await, ["1.9.0"]);

    let linux_yml = "/api/updates/electron/latest-linux.yml";
    // Ended before any release: nothing on any feed.
    set_licence(app, &key, "expired", Some("2026-09-01T00:00:00Z"), false);
    assert_eq!(version(tauri).await, None);
    let (s, b) = app.get(linux_yml, Some(&token)).await;
    assert_error(s, &b, 404, "NOT_FOUND");
    assert!(appcast_versions(app, &feed).await.is_empty());

    // Refunded: refused everywhere.
    set_licence(app, &key, "refunded", Some("2026-11-22T00:00:00Z"), true);
    let (s, b) = app.get(tauri, Some(&token)).await;
    assert_error(s, &b, 403, "LICENSE_INACTIVE");
    let (s, b) = app.get(linux_yml, Some(&token)).await;
    assert_error(s, &b, 403, "LICENSE_INACTIVE");
    let (s, b) = app.get(&local_path(&feed), None).await;
    assert_error(s, &b, 403, "LICENSE_INACTIVE");
}

/// What electron-updater's own code (`parseUpdateInfo`, `resolveFiles`, `getBlockMapFiles`, run
/// by Node from `tests/node`) makes of a channel file; and the raw YAML.
/// The version the Electron channel file `file` offers to `token`.
async fn electron_version(app: &TestApp, file: &str, token: &str) -> Value {
    electron(app, file, token).await.0["info"]["version"].clone()
}

async fn electron(app: &TestApp, file: &str, token: &str) -> (Value, String) {
    let resp = get(
        app,
        &format!("/api/updates/electron/{file}"),
        Some(token),
        &[],
    )
    .await;
    assert_eq!(resp.status(), 200, "{file}");
    let content_type = testkit::http::header(&resp, "content-type").unwrap_or_default();
    assert!(content_type.starts_with("text/yaml"), "{content_type}");
    let yaml = resp.text().await.expect("YAML");
    (electron_reads(&yaml, file).await, yaml)
}

fn node_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/node")
}

async fn electron_reads(yaml: &str, file: &str) -> Value {
    use tokio::io::AsyncWriteExt;
    let dir = node_dir();
    assert!(
        dir.join("node_modules/electron-updater").is_dir(),
        "tests/node has no electron-updater: run `npm ci` there (scripts/test does)"
    );
    let mut child = tokio::process::Command::new("node")
        .arg("electron-update-info.cjs")
        .args(["http://127.0.0.1:8083/api/updates/electron", "1.9.0", file])
        .current_dir(&dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("node");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(yaml.as_bytes()).await.expect("write YAML");
    drop(stdin);
    let out = child.wait_with_output().await.expect("node runs");
    assert!(
        out.status.success(),
        "electron-updater refused:\n{yaml}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON from node")
}

fn sha512_b64(bytes: &[u8]) -> String {
    STANDARD.encode(sha2::Sha512::digest(bytes))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn electron_updater_reads_the_channel_files_and_finds_the_blockmap() {
    let f = feeds().await;
    let app = &f.app;
    let (_, token) = licensed(app).await;

    let (linux, yaml) = electron(app, "latest-linux.yml", &token).await;
    let info = &linux["info"];
    assert_eq!(info["version"], "2.0.0", "{yaml}");
    assert_eq!(linux["versionType"], "string");
    assert_eq!(linux["releaseDateType"], "string", "{yaml}");
    assert_eq!(info["releaseDate"], "2026-11-20T10:00:00.000Z");
    assert_eq!(
        info["releaseNotes"],
        "New editor: \"fast\" & <safe>.\nSecond line: ok"
    );
    let files = linux["files"].as_array().expect("resolved files");
    assert_eq!(files.len(), 2, "{yaml}");
    // The AppImage is what electron-updater installs on Linux: first, and named by path.
    let first = &files[0];
    let url = first["url"].as_str().expect("url");
    assert_eq!(file_of(&url::Url::parse(url).expect("url")), APPIMAGE_2);
    assert_eq!(info["path"], first["info"]["url"]);
    let appimage = bytes_of(app, APPIMAGE_2);
    assert_eq!(first["info"]["sha512"], sha512_b64(&appimage));
    assert_eq!(info["sha512"], sha512_b64(&appimage));
    assert_eq!(first["info"]["size"], appimage.len());
    assert_eq!(download(app, url).await, appimage);
    let deb = files[1]["url"].as_str().expect("url");
    assert_eq!(
        file_of(&url::Url::parse(deb).expect("url")),
        "app_2.0.0_amd64.deb"
    );
    assert_eq!(
        files[1]["info"]["sha512"],
        sha512_b64(&bytes_of(app, "app_2.0.0_amd64.deb"))
    );

    // The blockmap at the address electron-updater derives from the file's.
    let blockmaps = linux["blockmaps"].as_array().expect("blockmaps");
    for b in blockmaps {
        let b = b.as_str().expect("address");
        assert!(b.contains("/api/download.blockmap?"), "{b}");
        let resp = get(app, &local_path(b), None, &[]).await;
        assert_eq!(resp.status(), 200, "{b}");
        assert_eq!(
            resp.bytes().await.expect("blockmap").to_vec(),
            blockmap_bytes()
        );
    }

    // macOS installs the zip; Windows the installer.
    let (mac, yaml) = electron(app, "latest-mac.yml", &token).await;
    let names: Vec<String> = mac["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| file_of(&url::Url::parse(f["url"].as_str().expect("url")).expect("url")))
        .collect();
    assert_eq!(names, [MAC_ZIP_2, "App-2.0.0-arm64.dmg"], "{yaml}");
    assert_eq!(mac["info"]["sha512"], sha512_b64(&bytes_of(app, MAC_ZIP_2)));
    // The zip has no blockmap: 404 with the contract's body.
    let zip_blockmap = mac["blockmaps"][1].as_str().expect("address");
    let (s, b) = app.get(&local_path(zip_blockmap), None).await;
    assert_error(s, &b, 404, "NOT_FOUND");
    let (win, _) = electron(app, "latest.yml", &token).await;
    assert_eq!(
        file_of(&url::Url::parse(win["files"][0]["url"].as_str().expect("url")).expect("url")),
        "App Setup 2.0.0.exe"
    );

    // Unknown channel files, traversal, no token.
    for bad in [
        "latest-win.yml",
        "alpha.yml",
        "latest-linux.json",
        "..%2Flatest.yml",
        "..%2F..%2Freleases.json",
    ] {
        let (s, b) = app
            .get(&format!("/api/updates/electron/{bad}"), Some(&token))
            .await;
        assert_error(s, &b, 404, "NOT_FOUND");
    }
    app.assert_get_needs_token("/api/updates/electron/latest.yml")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn electron_updaters_differential_download_reassembles_the_new_build() {
    let f = feeds().await;
    let app = &f.app;
    let (_, token) = licensed(app).await;
    let (linux, _) = electron(app, "latest-linux.yml", &token).await;
    let url = format!(
        "{}{}",
        app.base,
        local_path(linux["files"][0]["url"].as_str().expect("url"))
    );
    let new = bytes_of(app, APPIMAGE_2);

    // The installed build differs from the new one in a few 64 KiB blocks, some adjacent, the
    // last one short: electron-updater downloads those, several ranges per request, and copies
    // the rest from the installed file.
    const BLOCK: usize = 64 * 1024;
    let changed = [1usize, 5, 6, 12, new.len() / BLOCK];
    let mut old = new.clone();
    let (mut sizes, mut new_sums, mut old_sums) = (Vec::new(), Vec::new(), Vec::new());
    for (i, block) in new.chunks(BLOCK).enumerate() {
        sizes.push(block.len());
        new_sums.push(format!("block-{i}"));
        if changed.contains(&i) {
            for b in &mut old[i * BLOCK..i * BLOCK + block.len()] {
                *b ^= 0x5a;
            }
            old_sums.push(format!("old-block-{i}"));
        } else {
            old_sums.push(format!("block-{i}"));
        }
    }
    let map = |sums: &[String]| json!({"version": "2", "files": [{"name": "file", "offset": 0, "checksums": sums, "sizes": sizes}]});
    let dir = testkit::stack::ScratchDir::new("differential");
    let (old_path, new_path, plan_path) = (
        dir.path().join("installed.AppImage"),
        dir.path().join("update.AppImage"),
        dir.path().join("plan.json"),
    );
    std::fs::write(&old_path, &old).expect("write the installed build");
    let plan = json!({"size": new.len(), "sha512": sha512_b64(&new),
        "oldBlockMap": map(&old_sums), "newBlockMap": map(&new_sums)});
    std::fs::write(&plan_path, plan.to_string()).expect("write plan");
    let out = tokio::process::Command::new("node")
        .arg("electron-differential.cjs")
        .arg(&url)
        .arg(&old_path)
        .arg(&new_path)
        .arg(&plan_path)
        .current_dir(node_dir())
        .output()
        .await
        .expect("node runs");
    assert!(
        out.status.success(),
        "electron-updater's differential download failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        std::fs::read(&new_path).expect("the new build") == new,
        "the reassembled build is the new one"
    );
}

/// A signed download address of `file`, as the feeds make it.
fn signed(app: &TestApp, path: &str, file: &str) -> String {
    use licence_server::clock::Clock;
    let expires = (app.clock.now() + chrono::Duration::minutes(15)).timestamp();
    let sig = licence_server::signing::sign_download(DOWNLOAD_KEY.as_bytes(), file, expires);
    let mut u = url::Url::parse(&format!("http://x{path}")).expect("url");
    u.query_pairs_mut()
        .append_pair("file", file)
        .append_pair("expires", &expires.to_string())
        .append_pair("sig", &sig);
    format!("{}?{}", u.path(), u.query().unwrap_or(""))
}

/// The parts of a `multipart/byteranges` body: each part's `Content-Range` and bytes, read by
/// the lengths its `Content-Range` declares.
fn multipart(body: &[u8], boundary: &str) -> Vec<(String, Vec<u8>)> {
    let delimiter = format!("--{boundary}");
    let mut rest = body;
    let mut parts = Vec::new();
    loop {
        rest = rest.strip_prefix(delimiter.as_bytes()).unwrap_or_else(|| {
            panic!(
                "a delimiter, found {:?}",
                String::from_utf8_lossy(&rest[..rest.len().min(80)])
            )
        });
        if let Some(after) = rest.strip_prefix(b"--") {
            assert_eq!(after, b"\r\n", "the body ends with the closing delimiter");
            return parts;
        }
        rest = rest
            .strip_prefix(b"\r\n")
            .expect("CRLF after the delimiter");
        let end = rest
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("end of the part headers");
        let head = String::from_utf8(rest[..end].to_vec()).expect("ASCII headers");
        rest = &rest[end + 4..];
        let range = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Range: bytes "))
            .expect("Content-Range")
            .to_owned();
        assert!(
            head.contains("Content-Type: application/octet-stream"),
            "{head}"
        );
        let (span, _) = range.split_once('/').expect("size");
        let (a, b) = span.split_once('-').expect("span");
        let len = b.parse::<usize>().expect("end") - a.parse::<usize>().expect("start") + 1;
        parts.push((range.clone(), rest[..len].to_vec()));
        rest = rest[len..]
            .strip_prefix(b"\r\n")
            .expect("CRLF after the part");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_ranges_come_back_as_multipart_byteranges_byte_for_byte() {
    let f = feeds().await;
    let app = &f.app;
    let file = bytes_of(app, APPIMAGE_2);
    let size = file.len();
    let path = signed(app, "/api/download", APPIMAGE_2);

    // As electron-updater's differential download asks: several ranges, crossing the
    // service's read chunks, in its own order.
    let asked = [
        (600_000usize, 1_100_000usize),
        (0, 99),
        (524_280, 524_300),
        (size - 50, size - 1),
    ];
    let header = asked
        .iter()
        .map(|(a, b)| format!("{a}-{b}"))
        .collect::<Vec<_>>()
        .join(", ");
    let resp = get(app, &path, None, &[("range", &format!("bytes={header}"))]).await;
    assert_eq!(resp.status(), 206);
    let content_type = testkit::http::header(&resp, "content-type").expect("content type");
    let boundary = content_type
        .strip_prefix("multipart/byteranges; boundary=")
        .unwrap_or_else(|| panic!("{content_type}"))
        .to_owned();
    let declared: usize = resp
        .headers()
        .get("content-length")
        .and_then(|v| v.to_str().ok()?.parse().ok())
        .expect("content length");
    let body = resp.bytes().await.expect("body");
    assert_eq!(body.len(), declared);
    let parts = multipart(&body, &boundary);
    assert_eq!(parts.len(), asked.len());
    for ((range, bytes), (a, b)) in parts.iter().zip(asked) {
        assert_eq!(range, &format!("{a}-{b}/{size}"));
        assert!(bytes == &file[a..=b], "the bytes of {range}");
    }

    // Suffix ranges; a range outside the file is dropped; one left is a plain 206.
    let resp = get(app, &path, None, &[("range", "bytes=-10,5000000-5000001")]).await;
    assert_eq!(resp.status(), 206);
    assert_eq!(
        resp.headers()
            .get("content-range")
            .and_then(|v| v.to_str().ok()),
        Some(format!("bytes {}-{}/{size}", size - 10, size - 1).as_str())
    );
    assert_eq!(
        resp.bytes().await.expect("body").to_vec(),
        file[size - 10..].to_vec()
    );
    let (s, b) = crate::helpers::answer(
        get(
            app,
            &path,
            None,
            &[("range", "bytes=5000000-,6000000-6000001")],
        )
        .await,
    )
    .await;
    assert_error(s, &b, 416, "RANGE_NOT_SATISFIABLE");
    // A stale If-Range, or more ranges than any updater asks for: the whole file.
    let resp = get(
        app,
        &path,
        None,
        &[("range", "bytes=0-1,4-5"), ("if-range", "\"old\"")],
    )
    .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.bytes().await.expect("body").len(), size);
    let many = (0..1001)
        .map(|i| format!("{}-{}", i * 10, i * 10 + 1))
        .collect::<Vec<_>>()
        .join(",");
    let resp = get(app, &path, None, &[("range", &format!("bytes={many}"))]).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.bytes().await.expect("body").len(), size);
    // A single range still works as before.
    let resp = get(app, &path, None, &[("range", "bytes=10-19")]).await;
    assert_eq!(resp.status(), 206);
    assert_eq!(
        resp.bytes().await.expect("body").to_vec(),
        file[10..20].to_vec()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blockmaps_are_served_only_for_signed_listed_files() {
    let f = feeds().await;
    let app = &f.app;
    let resp = get(
        app,
        &signed(app, "/api/download.blockmap", APPIMAGE_2),
        None,
        &[],
    )
    .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.bytes().await.expect("body").to_vec(), blockmap_bytes());

    // Listed without a blockmap; a blockmap next to an unlisted file; traversal.
    std::fs::write(app.builds.path().join("unlisted.bin"), b"x").expect("write");
    std::fs::write(app.builds.path().join("unlisted.bin.blockmap"), b"x").expect("write");
    for file in [MAC_ZIP_2, "unlisted.bin", "../outside", "releases.json"] {
        let (s, b) = app
            .get(&signed(app, "/api/download.blockmap", file), None)
            .await;
        assert_error(s, &b, 404, "NOT_FOUND");
    }
    // The file's signature, not the blockmap's name, opens it; a forged one does not.
    let forged = signed(app, "/api/download.blockmap", APPIMAGE_2).replace("sig=", "sig=00");
    let (s, b) = app.get(&forged, None).await;
    assert_error(s, &b, 403, "INVALID_SIGNATURE");
    let (s, b) = app
        .get(
            &signed(app, "/api/download", &format!("{APPIMAGE_2}.blockmap")),
            None,
        )
        .await;
    assert_error(s, &b, 404, "NOT_FOUND");
}

/// The licence's Sparkle feed as `GET /api/license/activations` shows it.
async fn sparkle_feed(app: &TestApp, token: &str) -> String {
    let (s, b) = app.get("/api/license/activations", Some(token)).await;
    assert_eq!(s, 200, "{b}");
    let feed = b["sparkleFeed"].as_str().expect("sparkleFeed").to_owned();
    assert!(
        feed.starts_with("http://127.0.0.1:8083/api/updates/sparkle/"),
        "{feed}"
    );
    assert!(feed.ends_with(".xml"), "{feed}");
    feed
}

const SPARKLE_NS: &str = "http://www.andymatuschak.org/xml-namespaces/sparkle";

async fn appcast(app: &TestApp, feed: &str) -> String {
    let resp = get(app, &local_path(feed), None, &[]).await;
    assert_eq!(resp.status(), 200, "{feed}");
    let content_type = testkit::http::header(&resp, "content-type").unwrap_or_default();
    assert!(content_type.contains("xml"), "{content_type}");
    resp.text().await.expect("appcast")
}

async fn appcast_versions(app: &TestApp, feed: &str) -> Vec<String> {
    let xml = appcast(app, feed).await;
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    doc.descendants()
        .filter(|n| n.has_tag_name((SPARKLE_NS, "version")))
        .filter_map(|n| n.text().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sparkle_appcast_has_the_documented_elements_and_signatures_that_verify() {
    let f = feeds().await;
    let app = &f.app;
    let (key, token) = licensed(app).await;
    admin_channel(app, &key, "beta");
    let feed = sparkle_feed(app, &token).await;
    let xml = appcast(app, &feed).await;
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let rss = doc.root_element();
    assert_eq!(rss.tag_name().name(), "rss");
    assert_eq!(rss.attribute("version"), Some("2.0"));
    let channel = rss
        .children()
        .find(|n| n.has_tag_name("channel"))
        .expect("channel");
    let items: Vec<_> = channel
        .children()
        .filter(|n| n.has_tag_name("item"))
        .collect();
    assert_eq!(items.len(), 3, "{xml}");
    // `("", name)` is an element of no namespace, as RSS's own are.
    let child_text = |item: roxmltree::Node<'_, '_>, (ns, name): (&str, &str)| {
        item.children()
            .find(|n| n.tag_name().name() == name && n.tag_name().namespace().unwrap_or("") == ns)
            .and_then(|n| n.text())
            .map(str::to_owned)
    };
    let expected = [
        (
            "2.1.0-beta.1",
            Some("beta"),
            "App-2.1.0-beta.1-arm64-mac.zip",
            "2026-11-25T10:00:00Z",
        ),
        ("2.0.0", None, MAC_ZIP_2, "2026-11-20T10:00:00Z"),
        (
            "1.9.0",
            None,
            "App-1.9.0-arm64-mac.zip",
            "2026-10-01T09:00:00Z",
        ),
    ];
    for (item, (version, channel_name, file, date)) in items.iter().zip(expected) {
        let item = *item;
        assert_eq!(
            child_text(item, (SPARKLE_NS, "version")).as_deref(),
            Some(version)
        );
        assert_eq!(
            child_text(item, (SPARKLE_NS, "shortVersionString")).as_deref(),
            Some(version)
        );
        // Stable items carry no channel, or apps on the default channel never see them.
        assert_eq!(
            child_text(item, (SPARKLE_NS, "channel")).as_deref(),
            channel_name
        );
        let pub_date = child_text(item, ("", "pubDate")).expect("pubDate");
        assert_eq!(
            DateTime::parse_from_rfc2822(&pub_date).expect("RFC 2822 pubDate"),
            date.parse::<DateTime<Utc>>().expect("date")
        );
        let enclosure = item
            .children()
            .find(|n| n.has_tag_name("enclosure"))
            .expect("enclosure");
        let url = enclosure.attribute("url").expect("url");
        assert_eq!(file_of(&url::Url::parse(url).expect("url")), file);
        assert_eq!(
            enclosure.attribute("type"),
            Some("application/octet-stream")
        );
        let bytes = download(app, url).await;
        assert_eq!(bytes, bytes_of(app, file));
        assert_eq!(
            enclosure
                .attribute("length")
                .and_then(|l| l.parse::<usize>().ok()),
            Some(bytes.len())
        );
        let sig = enclosure
            .attribute((SPARKLE_NS, "edSignature"))
            .expect("sparkle:edSignature");
        let sig = ed25519_dalek::Signature::from_slice(&STANDARD.decode(sig).expect("base64"))
            .expect("a signature");
        f.sparkle_key
            .verify(&bytes, &sig)
            .expect("the Ed25519 signature verifies against the file");
    }
    assert_eq!(
        channel
            .children()
            .find(|n| n.has_tag_name("link"))
            .and_then(|n| n.text()),
        Some("http://127.0.0.1:8083/")
    );
    let description = items[1]
        .children()
        .find(|n| n.has_tag_name("description"))
        .expect("description");
    assert_eq!(
        description.attribute((SPARKLE_NS, "format")),
        Some("plain-text")
    );
    let notes = child_text(items[1], ("", "description")).expect("description");
    assert_eq!(notes, "New editor: \"fast\" & <safe>.\nSecond line: ok");

    // Unknown, malformed and traversing feeds are 404.
    let other =
        licence_server::signing::sparkle_feed_token(DOWNLOAD_KEY.as_bytes(), "no-such-licence");
    for bad in [
        format!("/api/updates/sparkle/{other}.xml"),
        format!("/api/updates/sparkle/{}.xml", "A".repeat(43)),
        "/api/updates/sparkle/short.xml".to_owned(),
        "/api/updates/sparkle/..%2F..%2Freleases.json".to_owned(),
        local_path(&feed).replace(".xml", ".json"),
        local_path(&feed).replace(".xml", "A.xml"),
    ] {
        let (s, b) = app.get(&bad, None).await;
        assert_error(s, &b, 404, "NOT_FOUND");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_licence_email_carries_a_sparkle_feed_that_answers() {
    let f = feeds().await;
    let app = &f.app;
    let (s, b) = app
        .webhook(&order_created(9101, VARIANT_PRO, "mac@example.com"))
        .await;
    assert_eq!(s, 200, "{b}");
    use licence_server::schema::email_outbox;
    let bodies: Vec<String> = email_outbox::table
        .filter(email_outbox::to_address.eq("mac@example.com"))
        .select(email_outbox::text_body)
        .load(&mut app.conn())
        .expect("mail");
    let body = bodies.first().expect("the licence e-mail");
    let feed = body
        .split_whitespace()
        .find(|w| w.contains("/api/updates/sparkle/"))
        .unwrap_or_else(|| panic!("no feed in {body}"));
    assert_eq!(appcast_versions(app, feed).await, ["2.0.0", "1.9.0"]);
    // The same address as the app's list of activations shows.
    let key = app.key_of_order("9101").expect("licence");
    let token = app.token(&key, "mac-1").await;
    assert_eq!(sparkle_feed(app, &token).await, feed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_releases_json_latest_json_is_the_one_stable_release() {
    let app = spawn_app_at(now()).await;
    let (_, token) = licensed(&app).await;
    // The test manifest lists a Windows installer: electron-updater is offered it.
    let (win, yaml) = electron(&app, "latest.yml", &token).await;
    assert_eq!(win["info"]["version"], "1.8.0", "{yaml}");
    assert_eq!(
        win["files"][0]["info"]["sha512"],
        sha512_b64(&bytes_of(&app, crate::helpers::WIN_BUILD))
    );
    // latest.json carries no Tauri signatures: nothing Tauri could install.
    let resp = get(
        &app,
        "/api/updates/tauri/windows/x86_64/1.0.0",
        Some(&token),
        &[],
    )
    .await;
    assert_eq!(resp.status(), 204);
    // GET /api/latest is unchanged by a releases.json.
    write_releases(
        &app,
        &json!({"releases": [{"version": "9.0.0", "pubDate": "2026-11-27T00:00:00Z",
        "channel": "stable", "notes": null, "files": [{"platform": "windows-x86_64", "name": crate::helpers::WIN_BUILD}]}]}),
    );
    let (s, b) = app.get("/api/latest", None).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["version"], "1.8.0");
    assert_eq!(
        electron(&app, "latest.yml", &token).await.0["info"]["version"],
        "9.0.0"
    );

    // An unusable releases.json is the operator's to fix: 503, never 500.
    for broken in [
        json!({"releases": [{"version": "nine", "pubDate": "2026-11-27T00:00:00Z", "channel": "stable", "files": []}]}),
        json!({"releases": [{"version": "9.0.0", "pubDate": "2026-11-27T00:00:00Z", "channel": "nightly", "files": []}]}),
        json!({"releases": [{"version": "9.0.0", "pubDate": "2026-11-27T00:00:00Z", "channel": "stable",
            "files": [{"platform": "linux-x86_64", "name": "../etc/passwd"}]}]}),
    ] {
        write_releases(&app, &broken);
        let (s, b) = app
            .get("/api/updates/electron/latest.yml", Some(&token))
            .await;
        assert_error(s, &b, 503, "RELEASES_UNAVAILABLE");
    }
}
