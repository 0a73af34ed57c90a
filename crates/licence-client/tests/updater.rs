//! The updater helper against a small local server that answers as licence-server's Tauri feed
//! does (contract section 12): a build signed with minisign, as Tauri's signer signs it, is
//! downloaded and verified with the pinned key; a tampered build, one signed by another key and
//! a feed that offers an older version are refused and leave nothing behind.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chrono::Utc;
use licence_client::{Error, LicenceClient, State, Update, UpdateKey};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const TOKEN: &str = "licence-token-of-the-test";

/// One answer of the fake server: status, content type, body.
type Answer = (u16, &'static str, Vec<u8>);

/// A server that answers each path (without the query) from a table, checks the feed's Bearer
/// token, and records the paths asked.
struct FakeServer {
    base: String,
    seen: Arc<Mutex<Vec<String>>>,
}

impl FakeServer {
    async fn start(routes: HashMap<String, Answer>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let routes = Arc::new(routes);
        tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let routes = routes.clone();
                let log = log.clone();
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match socket.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&head).into_owned();
                    let target = head.split(' ').nth(1).unwrap_or("/").to_owned();
                    let path = target.split('?').next().unwrap_or("/").to_owned();
                    log.lock().expect("log").push(target.clone());
                    let authorised = head
                        .lines()
                        .any(|l| l.eq_ignore_ascii_case(&format!("authorization: Bearer {TOKEN}")));
                    let (status, kind, body) = if path.starts_with("/api/updates/") && !authorised {
                        (
                            401,
                            "application/json",
                            br#"{"code":"INVALID_TOKEN","message":"no"}"#.to_vec(),
                        )
                    } else {
                        routes.get(&path).cloned().unwrap_or((
                            404,
                            "application/json",
                            br#"{"code":"NOT_FOUND","message":"no"}"#.to_vec(),
                        ))
                    };
                    let reply = format!(
                        "HTTP/1.1 {status} X\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = socket.write_all(reply.as_bytes()).await;
                    let _ = socket.write_all(&body).await;
                    let _ = socket.shutdown().await;
                });
            }
        });
        Self { base, seen }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().expect("log").clone()
    }
}

/// A scratch directory removed at the end of the test.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("licence-updater-{:016x}", rand_u64()));
        std::fs::create_dir_all(&dir).expect("scratch");
        Self(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    h.finish()
}

/// A client of `base` with a stored licence whose token is [`TOKEN`].
fn client_of(base: &str, dir: &Path) -> LicenceClient {
    let state_path = dir.join("licence.json");
    let now = Utc::now();
    State {
        licence_key: None,
        token: TOKEN.into(),
        lease: "not.checked.here".into(),
        last_seen: now,
        last_validated_at: now,
        mac: String::new(),
    }
    .save(&state_path)
    .expect("state");
    LicenceClient::with_keys(base, Vec::new(), state_path, "desk-1".into()).expect("client")
}

/// The signature of `data` by `pair`, as Tauri's signer writes it: the `.sig` file in base64.
fn tauri_signature(pair: &minisign::KeyPair, data: &[u8]) -> String {
    let sig = minisign::sign(
        Some(&pair.pk),
        &pair.sk,
        std::io::Cursor::new(data),
        Some("timestamp:1800000000\tfile:app.AppImage"),
        None,
    )
    .expect("sign");
    STANDARD.encode(sig.to_string())
}

fn feed(version: &str, url: &str, signature: &str) -> Answer {
    let body = serde_json::json!({
        "version": version,
        "notes": "Faster exports.",
        "pub_date": "2026-11-20T10:00:00Z",
        "url": url,
        "signature": signature,
    });
    (200, "application/json", body.to_string().into_bytes())
}

fn build() -> Vec<u8> {
    (0..300_000u32).map(|i| (i % 251) as u8).collect()
}

const FEED: &str = "/api/updates/tauri/linux/x86_64/1.0.0";

/// A feed that offers `version` at the signed address of a second server, which serves
/// `served`; the feed's signature is `signer`'s of `signed`.
async fn server_offering(
    signer: &minisign::KeyPair,
    signed: &[u8],
    served: Vec<u8>,
    version: &str,
) -> Pair {
    let files = FakeServer::start(HashMap::from([(
        "/api/download".to_owned(),
        (200, "application/octet-stream", served),
    )]))
    .await;
    let url = format!(
        "{}/api/download?file=app.AppImage&expires=1800000000&sig=00",
        files.base
    );
    let feed = FakeServer::start(HashMap::from([
        (
            FEED.to_owned(),
            feed(version, &url, &tauri_signature(signer, signed)),
        ),
        (
            "/api/updates/tauri/linux/x86_64/1.1.0".to_owned(),
            (204, "application/json", Vec::new()),
        ),
        (
            "/api/updates/tauri/linux/x86_64/0.9.0".to_owned(),
            (
                403,
                "application/json",
                br#"{"code":"LICENSE_INACTIVE","message":"no","valid":false}"#.to_vec(),
            ),
        ),
    ]))
    .await;
    Pair { feed, files }
}

/// The feed server, keeping the server of its downloads alive beside it.
struct Pair {
    feed: FakeServer,
    files: FakeServer,
}

/// The update the feed offers an installation of 1.0.0 on Linux x86_64.
async fn offered_update(client: &LicenceClient) -> Update {
    client
        .check_update_for("linux", "x86_64", "1.0.0", None)
        .await
        .expect("feed")
        .expect("an update")
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n != "licence.json")
        .collect()
}

#[tokio::test]
async fn an_offered_update_is_downloaded_and_verified_with_the_pinned_key() {
    let pair = minisign::KeyPair::generate_unencrypted_keypair().expect("keys");
    let servers = server_offering(&pair, &build(), build(), "1.1.0").await;
    let dir = Scratch::new();
    let client = client_of(&servers.feed.base, &dir.0);

    let update = offered_update(&client).await;
    assert_eq!(update.version, "1.1.0");
    assert_eq!(update.notes.as_deref(), Some("Faster exports."));
    assert!(
        servers.feed.seen().iter().any(|p| p == FEED),
        "{:?}",
        servers.feed.seen()
    );

    // The key as minisign prints it, and as Tauri's configuration holds it.
    let key = UpdateKey::parse(&pair.pk.to_base64()).expect("key");
    let boxed = pair.pk.to_box().expect("box").to_string();
    assert!(UpdateKey::parse(&STANDARD.encode(&boxed)).is_ok());
    assert!(UpdateKey::parse(&boxed).is_ok());

    let dest = dir.0.join("App-1.1.0.AppImage");
    let path = client
        .download_update(&update, &key, &dest)
        .await
        .expect("verified");
    assert_eq!(path, dest);
    assert_eq!(std::fs::read(&dest).expect("file"), build());
    assert!(
        servers
            .files
            .seen()
            .iter()
            .any(|p| p.starts_with("/api/download?file=app.AppImage")),
        "downloaded by the signed address"
    );

    // Nothing newer than the new version.
    assert_eq!(
        client
            .check_update_for("linux", "x86_64", "1.1.0", None)
            .await
            .expect("feed"),
        None
    );
}

#[tokio::test]
async fn a_tampered_build_or_another_key_is_refused_and_leaves_nothing() {
    let pair = minisign::KeyPair::generate_unencrypted_keypair().expect("keys");
    let other = minisign::KeyPair::generate_unencrypted_keypair().expect("keys");
    let key = UpdateKey::parse(&pair.pk.to_base64()).expect("key");
    let dir = Scratch::new();

    let mut tampered = build();
    tampered[1000] ^= 1;
    let servers = server_offering(&pair, &build(), tampered, "1.1.0").await;
    let client = client_of(&servers.feed.base, &dir.0);
    let update = offered_update(&client).await;
    let dest = dir.0.join("App.AppImage");
    let refused = client.download_update(&update, &key, &dest).await;
    assert!(
        matches!(refused, Err(Error::UpdateRefused(_))),
        "{refused:?}"
    );
    assert!(leftovers(&dir.0).is_empty(), "{:?}", leftovers(&dir.0));

    let servers = server_offering(&other, &build(), build(), "1.1.0").await;
    let client = client_of(&servers.feed.base, &dir.0);
    let update = offered_update(&client).await;
    let refused = client.download_update(&update, &key, &dest).await;
    assert!(
        matches!(refused, Err(Error::UpdateRefused(_))),
        "{refused:?}"
    );
    assert!(leftovers(&dir.0).is_empty(), "{:?}", leftovers(&dir.0));

    // A signature that is no signature at all.
    let mut garbled = update.clone();
    garbled.signature = "bm90IGEgc2lnbmF0dXJl".into();
    let refused = client.download_update(&garbled, &key, &dest).await;
    assert!(
        matches!(refused, Err(Error::UpdateRefused(_))),
        "{refused:?}"
    );
}

#[tokio::test]
async fn a_feed_offering_an_older_version_or_refusing_the_licence_is_an_error() {
    let pair = minisign::KeyPair::generate_unencrypted_keypair().expect("keys");
    let dir = Scratch::new();
    let servers = server_offering(&pair, &build(), build(), "0.9.0").await;
    let client = client_of(&servers.feed.base, &dir.0);
    let older = client
        .check_update_for("linux", "x86_64", "1.0.0", None)
        .await;
    assert!(matches!(older, Err(Error::UpdateRefused(_))), "{older:?}");

    let refused = client
        .check_update_for("linux", "x86_64", "0.9.0", None)
        .await;
    assert!(
        matches!(refused, Err(Error::LicenceInactive)),
        "{refused:?}"
    );

    for (target, arch, version) in [
        ("linux/../..", "x86_64", "1.0.0"),
        ("linux", "x86 64", "1.0.0"),
        ("linux", "x86_64", "one"),
    ] {
        let bad = client.check_update_for(target, arch, version, None).await;
        assert!(matches!(bad, Err(Error::UpdateRefused(_))), "{bad:?}");
    }
    assert!(
        servers.feed.seen().len() == 2,
        "refused names never reach the server: {:?}",
        servers.feed.seen()
    );
}
