//! `licence-client` binds every answer to its request (contract section 12): a local fake server
//! replaying answers the real licence-server signed for other requests unlocks nothing and
//! removes nothing, an answer dated far from the client's clock is refused, the state file is
//! its user's alone and its last-seen time cannot be edited.

use std::sync::{Arc, Mutex};

use licence_client::{Error, LicenceClient, PublicKey};
use licence_server::clock::Clock;
use serde_json::{Value, json};
use testkit::stack::ScratchDir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helpers::{ClientSetup, TestApp, client, client_at, spawn_app, trusted_keys};

/// The state file as JSON, `None` when there is none.
fn stored(dir: &ScratchDir) -> Option<Value> {
    let bytes = std::fs::read(dir.path().join("licence.json")).ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn write_stored(dir: &ScratchDir, state: &Value) {
    std::fs::write(dir.path().join("licence.json"), state.to_string()).expect("write state");
}

/// An answer of the real server as a local proxy would have recorded it.
#[derive(Debug, Clone)]
struct Captured {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

async fn capture(
    app: &TestApp,
    method: &str,
    path: &str,
    bearer: Option<&str>,
    body: Option<Value>,
    nonce: Option<&str>,
) -> Captured {
    let resp = app.send(method, path, bearer, body.as_ref(), nonce).await;
    let status = resp.status().as_u16();
    let headers: Vec<(String, String)> = resp
        .headers()
        .iter()
        .filter(|(name, _)| {
            !matches!(
                name.as_str(),
                "content-length" | "connection" | "transfer-encoding"
            )
        })
        .filter_map(|(name, v)| Some((name.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect();
    let body = resp.bytes().await.expect("body").to_vec();
    assert!(
        headers.iter().any(|(n, _)| n == "licence-signature"),
        "{method} {path}: the real answer is signed"
    );
    Captured {
        status,
        headers,
        body,
    }
}

/// A local HTTP server on 127.0.0.1 that answers every request with one captured answer, byte
/// for byte, and records the `Licence-Nonce` each request carried.
struct FakeServer {
    base: String,
    nonces: Arc<Mutex<Vec<Option<String>>>>,
}

impl FakeServer {
    async fn replaying(answer: Captured) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        let nonces = Arc::new(Mutex::new(Vec::new()));
        let seen = nonces.clone();
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                tokio::spawn(serve_one(conn, answer.clone(), seen.clone()));
            }
        });
        Self { base, nonces }
    }

    fn nonces(&self) -> Vec<Option<String>> {
        self.nonces.lock().expect("nonces").clone()
    }
}

async fn serve_one(
    mut conn: tokio::net::TcpStream,
    answer: Captured,
    seen: Arc<Mutex<Vec<Option<String>>>>,
) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match conn.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let header = |name: &str| {
        head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    };
    let length: usize = header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        match conn.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    seen.lock().expect("nonces").push(header("licence-nonce"));
    let mut out = format!("HTTP/1.1 {} Replayed\r\n", answer.status);
    for (name, value) in &answer.headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n",
        answer.body.len()
    ));
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(&answer.body);
    let _ = conn.write_all(&bytes).await;
    let _ = conn.shutdown().await;
}

fn assert_fresh_nonces(seen: &[Option<String>], calls: usize) {
    assert_eq!(seen.len(), calls, "{seen:?}");
    let nonces: Vec<&str> = seen
        .iter()
        .map(|n| n.as_deref().expect("every request carries Licence-Nonce"))
        .collect();
    for n in &nonces {
        assert!(
            (16..=64).contains(&n.len())
                && n.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "{n}"
        );
    }
    let mut distinct = nonces.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), nonces.len(), "a nonce was sent twice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fake_server_replaying_a_captured_consume_ok_is_refused() {
    let setup = ClientSetup::start().await;
    let app = &setup.app;
    let (real, _) = setup.activated("basic").await;
    let token = stored(&setup.dir).expect("state")["token"]
        .as_str()
        .expect("token")
        .to_owned();
    // Real "consume OK" answers for this very licence and installation: one an older client got
    // (no nonce), one made for another request's nonce.
    for nonce in [None, Some("bm9uY2Utb2YtYW5vdGhlci1yZXF1ZXN0")] {
        let captured = capture(app, "POST", "/api/usage/consume", Some(&token), None, nonce).await;
        assert_eq!(captured.status, 200);
        let fake = FakeServer::replaying(captured).await;
        let c = setup.client_of(&fake.base);
        for _ in 0..3 {
            match c.consume().await {
                Err(Error::BadSignature) => {}
                other => panic!("a replayed consume must be refused, got {other:?}"),
            }
        }
        assert_fresh_nonces(&fake.nonces(), 3);
    }
    // The licence itself is untouched and the real server still answers the client.
    assert!(real.check().is_ok());
    let usage = real.consume().await.expect("consume at the real server");
    assert_eq!(usage.used, 3, "two captured units and this one");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_signed_404_does_not_remove_the_stored_licence() {
    let setup = ClientSetup::start().await;
    let (app, dir) = (&setup.app, &setup.dir);
    let (real, key) = setup.activated("pro").await;
    let kept = stored(dir).expect("state");

    // Signed refusals and a signed deactivation the real server gave to other requests.
    let nonce = Some("YW5vdGhlci1yZXF1ZXN0cy1ub25jZQ");
    let unknown = json!({"licenseKey": "NOPE-NOPE-NOPE", "instanceId": "elsewhere"});
    let other = app.token(&key, "other").await;
    let mut replays = Vec::new();
    for n in [None, nonce] {
        replays.push((
            "validate",
            capture(
                app,
                "POST",
                "/api/license/validate",
                None,
                Some(unknown.clone()),
                n,
            )
            .await,
        ));
    }
    let deactivated = capture(
        app,
        "POST",
        "/api/license/deactivate",
        Some(&other),
        Some(json!({})),
        None,
    )
    .await;
    assert_eq!(deactivated.status, 200);
    for n in [None, nonce] {
        let refused = capture(app, "POST", "/api/license/validate", Some(&other), None, n).await;
        assert_eq!(refused.status, 403, "the other installation lost its seat");
        replays.push(("validate", refused));
    }
    replays.push(("deactivate", deactivated));
    assert_eq!(replays[0].1.status, 404);

    for (action, captured) in replays {
        let status = captured.status;
        let fake = FakeServer::replaying(captured).await;
        let c = setup.client_of(&fake.base);
        let result = match action {
            "validate" => c.validate().await.map(|_| ()),
            _ => c.deactivate(None).await,
        };
        assert!(
            matches!(result, Err(Error::BadSignature)),
            "{action} with a replayed {status}: {result:?}"
        );
        let now = stored(dir).expect("the stored licence is still there");
        for field in ["lease", "token", "licenceKey"] {
            assert_eq!(now[field], kept[field], "{action} {status}: {field}");
        }
        assert!(c.check().is_ok(), "{action} {status}");
        assert_eq!(fake.nonces().len(), 1);
    }
    // A revalidation that meets the fake server keeps the offline decision, as if it were
    // unreachable, and stores nothing it said.
    app.clock.advance(chrono::Duration::hours(25));
    let unbound = capture(
        app,
        "POST",
        "/api/license/validate",
        None,
        Some(unknown),
        None,
    )
    .await;
    let fake = FakeServer::replaying(unbound).await;
    let c = setup.client_of(&fake.base);
    let status = c.refresh().await.expect("the lease still runs");
    assert!(status.revalidation_due);
    assert_eq!(stored(dir).expect("state")["lease"], kept["lease"]);
    real.validate()
        .await
        .expect("the real server still vouches");
}

/// A client of `app` keeping its state in `dir`, whose clock is `minutes` off the service's.
fn client_off_by(
    app: &TestApp,
    keys: &[PublicKey],
    dir: &ScratchDir,
    minutes: i64,
) -> LicenceClient {
    let offset = chrono::Duration::minutes(minutes);
    client_at(&app.base, keys.to_vec(), dir, &app.clock, offset)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_dated_ten_minutes_off_is_refused() {
    let app = spawn_app().await;
    let keys = trusted_keys(&app).await;
    let key = app.licence("pro", "active");
    for minutes in [10, -10] {
        let dir = ScratchDir::new("licence-client");
        let c = client_off_by(&app, &keys, &dir, minutes);
        let result = c.activate(&key, None).await;
        assert!(
            matches!(result, Err(Error::ClockSkew { .. })),
            "{minutes} min: {result:?}"
        );
        assert!(stored(&dir).is_none(), "{minutes} min: nothing is stored");
    }
    // Within five minutes the answer is taken.
    let dir = ScratchDir::new("licence-client");
    let c = client_off_by(&app, &keys, &dir, 4);
    c.activate(&key, None).await.expect("four minutes off");
    // The same client once its clock drifted ten minutes: a consume answer is refused too.
    let drifted = client_off_by(&app, &keys, &dir, 10);
    let result = drifted.consume().await;
    assert!(matches!(result, Err(Error::ClockSkew { .. })), "{result:?}");
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_state_file_is_readable_by_its_user_only() {
    use std::os::unix::fs::PermissionsExt;
    let app = spawn_app().await;
    let dir = ScratchDir::new("licence-client");
    let path = dir.path().join("licence.json");
    // A state file an older version left readable by everyone is replaced by a private one.
    std::fs::write(&path, b"{}").expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let c = client(&app.base, trusted_keys(&app).await, &dir, &app.clock);
    let key = app.licence("pro", "active");
    c.activate(&key, None).await.expect("activate");
    let mode = |p: &std::path::Path| std::fs::metadata(p).expect("metadata").permissions().mode();
    assert_eq!(mode(&path) & 0o777, 0o600);
    // Rewritten by an offline check, it stays private.
    app.clock.advance(chrono::Duration::minutes(5));
    c.check().expect("check");
    assert_eq!(mode(&path) & 0o777, 0o600);
    // A directory the client creates for it is private too.
    let nested = ScratchDir::new("licence-client");
    let deep = nested.path().join("config").join("licence.json");
    let c = LicenceClient::with_keys(
        &app.base,
        trusted_keys(&app).await,
        deep.clone(),
        "desk-2".into(),
    )
    .expect("client")
    .with_clock({
        let clock = app.clock.clone();
        move || clock.now()
    });
    c.activate(&key, None).await.expect("activate");
    assert_eq!(mode(&deep) & 0o777, 0o600);
    assert_eq!(mode(&nested.path().join("config")) & 0o777, 0o700);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_last_seen_is_detected() {
    let setup = ClientSetup::start().await;
    let (app, dir) = (&setup.app, &setup.dir);
    let (c, _) = setup.activated("pro").await;
    app.clock.advance(chrono::Duration::days(2));
    c.check().expect("valid offline");

    // The clock set back a day, and lastSeen edited to match, so that the lease would last longer.
    app.clock.advance(chrono::Duration::days(-1));
    let mut state = stored(dir).expect("state");
    let edited = (app.clock.now() - chrono::Duration::hours(1)).to_rfc3339();
    state["lastSeen"] = json!(edited);
    write_stored(dir, &state);
    assert!(
        matches!(c.check(), Err(Error::StateTampered)),
        "an edited lastSeen must not pass"
    );
    // Offline the app cannot get past it.
    let offline = setup.client_of("http://127.0.0.1:9");
    assert!(matches!(offline.check(), Err(Error::StateTampered)));
    assert!(matches!(offline.refresh().await, Err(Error::Network(_))));
    // Online, the server vouches again and the state is whole.
    c.refresh().await.expect("revalidated online");
    c.check().expect("valid again");

    // lastValidatedAt is covered as well (pushed ahead, revalidation would never fall due), and a
    // state without its seal is not taken either.
    let mut state = stored(dir).expect("state");
    state["lastValidatedAt"] = json!((app.clock.now() + chrono::Duration::days(30)).to_rfc3339());
    write_stored(dir, &state);
    assert!(matches!(c.check(), Err(Error::StateTampered)));
    c.validate().await.expect("validate");
    let mut state = stored(dir).expect("state");
    assert!(
        state
            .as_object_mut()
            .expect("object")
            .remove("mac")
            .is_some()
    );
    write_stored(dir, &state);
    assert!(matches!(c.check(), Err(Error::StateTampered)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_answer_is_refused_before_it_is_read_whole() {
    let setup = ClientSetup::start().await;
    setup.activated("pro").await;
    let flood = Captured {
        status: 200,
        headers: vec![("content-type".into(), "application/json".into())],
        body: vec![b' '; 8 << 20],
    };
    let fake = FakeServer::replaying(flood).await;
    let c = setup.client_of(&fake.base);
    match c.consume().await {
        Err(Error::Server { code, .. }) => assert_eq!(code, "ANSWER_TOO_LARGE"),
        other => panic!("expected ANSWER_TOO_LARGE, got {other:?}"),
    }
    assert!(c.check().is_ok());
}
