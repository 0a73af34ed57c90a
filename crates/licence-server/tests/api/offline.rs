//! Contract section 7 against real MariaDB: public keys, leases, signed answers, the list of
//! activations, deactivating another installation, stale seats, the deactivation limit across
//! two replicas, and idempotent consumes. Signatures are checked here with ed25519-dalek on the
//! raw bytes, not through the service's or the client library's own verification code.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{Signature, SigningKey, Verifier, VerifyingKey};
use futures_util::future::join_all;
use licence_server::clock::Clock;
use serde_json::{Value, json};
use sha2::Digest;

use crate::helpers::{SIGNING_SEED, TestApp, answer, assert_error, spawn_app};

fn expected_key() -> VerifyingKey {
    let seed: [u8; 32] = base64::engine::general_purpose::STANDARD
        .decode(SIGNING_SEED)
        .expect("seed")
        .try_into()
        .expect("32 bytes");
    SigningKey::from_bytes(&seed).verifying_key()
}

fn signature(b64: &str) -> Signature {
    Signature::from_slice(&URL_SAFE_NO_PAD.decode(b64).expect("base64url")).expect("64 bytes")
}

/// Whether `sig` (base64url) is the expected key's signature of `message`.
fn verifies(message: &str, sig: &str) -> bool {
    expected_key()
        .verify(message.as_bytes(), &signature(sig))
        .is_ok()
}

/// The `sig` of an answer's `Licence-Signature`, whose parameters must start as `prefix`, and
/// the answer's `Date`.
fn signature_and_date<'h>(
    method: &str,
    path: &str,
    headers: &'h reqwest::header::HeaderMap,
    prefix: &str,
) -> (&'h str, &'h str) {
    let value = headers
        .get("licence-signature")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_else(|| panic!("{method} {path} carries no Licence-Signature"));
    assert!(value.starts_with(prefix), "{value}");
    let sig = value
        .rsplit("sig=\"")
        .next()
        .expect("sig")
        .trim_end_matches('"');
    let date = headers
        .get("date")
        .and_then(|v| v.to_str().ok())
        .expect("a Date header");
    (sig, date)
}

/// Checks `Licence-Signature` of an answer to `method path` with the expected public key.
fn assert_signed(method: &str, path: &str, headers: &reqwest::header::HeaderMap, body: &[u8]) {
    let (sig, date) = signature_and_date(
        method,
        path,
        headers,
        "kid=\"ed1\", alg=\"ed25519\", sig=\"",
    );
    let digest = URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(body));
    assert!(
        verifies(&format!("{method} {path}\n{date}\n{digest}"), sig),
        "{method} {path}: signature does not verify"
    );
    let tampered = format!(
        "{method} {path}\n{date}\n{}",
        URL_SAFE_NO_PAD.encode([0u8; 32])
    );
    assert!(!verifies(&tampered, sig));
}

/// The status, headers and bytes of an answer.
async fn read_raw(resp: reqwest::Response) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    (status, headers, resp.bytes().await.expect("body").to_vec())
}

async fn raw(
    app: &TestApp,
    method: &str,
    path: &str,
    bearer: Option<&str>,
    body: Option<Value>,
) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
    read_raw(app.send(method, path, bearer, body.as_ref(), None).await).await
}

/// Requests whose answers are signed, successes and refusals alike: method, path, bearer and
/// the status expected with the installation's `token`.
fn signed_routes(token: &str) -> [(&'static str, &'static str, Option<&str>, u16); 7] {
    [
        ("GET", "/api/latest", None, 200),
        ("GET", "/api/usage/status", Some(token), 200),
        ("POST", "/api/usage/consume", Some(token), 200),
        ("GET", "/api/license/activations", Some(token), 200),
        ("GET", "/api/license/public-keys", None, 200),
        ("GET", "/api/usage/status", None, 401),
        ("GET", "/api/license/nope", None, 404),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn public_keys_lease_and_signed_answers_verify_independently() {
    let app = spawn_app().await;
    let (s, body) = app.get("/api/license/public-keys", None).await;
    assert_eq!(s, 200, "{body}");
    let key = &body["keys"][0];
    assert_eq!(
        (&key["kid"], &key["alg"], &key["crv"]),
        (&json!("ed1"), &json!("EdDSA"), &json!("Ed25519"))
    );
    assert_eq!(
        key["x"].as_str().expect("x"),
        URL_SAFE_NO_PAD.encode(expected_key().as_bytes())
    );

    let licence = app.licence("basic", "active");
    let (s, headers, bytes) = raw(
        &app,
        "POST",
        "/api/license/activate",
        None,
        Some(json!({"licenseKey": licence, "instanceId": "mac-1"})),
    )
    .await;
    assert_eq!(s, 200);
    assert_signed("POST", "/api/license/activate", &headers, &bytes);
    let expected_date = httpdate::fmt_http_date(app.clock.now().into());
    assert_eq!(headers["date"], expected_date.as_str());
    let body: Value = serde_json::from_slice(&bytes).expect("json");
    let lease = body["lease"].as_str().expect("lease");
    let parts: Vec<&str> = lease.split('.').collect();
    assert_eq!(parts.len(), 3);
    let header: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).expect("b64")).expect("json");
    assert_eq!(
        (&header["alg"], &header["kid"]),
        (&json!("EdDSA"), &json!("ed1"))
    );
    expected_key()
        .verify(
            format!("{}.{}", parts[0], parts[1]).as_bytes(),
            &signature(parts[2]),
        )
        .expect("the lease verifies with the published key");
    let claims: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).expect("b64")).expect("json");
    let now = app.clock.now().timestamp();
    assert_eq!(claims["iid"], "mac-1");
    assert_eq!(claims["plan"], "basic");
    assert_eq!(claims["features"], json!(["audio"]));
    assert_eq!(claims["dailyQuota"], 10);
    assert_eq!(claims["iat"], now);
    assert_eq!(claims["exp"], now + 7 * 86_400);
    assert!(claims["sub"].as_str().is_some_and(|s| s.len() == 36));

    // Validate renews the lease; errors, the release and the usage routes are signed too.
    let token = body["token"].as_str().expect("token").to_owned();
    app.clock.advance(chrono::Duration::hours(1));
    let (s, headers, bytes) = raw(&app, "POST", "/api/license/validate", Some(&token), None).await;
    assert_eq!(s, 200);
    assert_signed("POST", "/api/license/validate", &headers, &bytes);
    let renewed: Value = serde_json::from_slice(&bytes).expect("json");
    assert_ne!(renewed["lease"], body["lease"]);
    for (method, path, bearer, status) in signed_routes(&token) {
        let (s, headers, bytes) = raw(&app, method, path, bearer, None).await;
        assert_eq!(s, status, "{method} {path}");
        assert_signed(method, path, &headers, &bytes);
    }
    let (s, headers, bytes) = raw(
        &app,
        "POST",
        "/api/license/activate",
        None,
        Some(json!({"licenseKey": "NOPE", "instanceId": "x"})),
    )
    .await;
    assert_eq!(s, 404);
    assert_signed("POST", "/api/license/activate", &headers, &bytes);
}

/// Sends `method path` with `Licence-Nonce: nonce`; the answer.
async fn raw_with_nonce(
    app: &TestApp,
    method: &str,
    path: &str,
    bearer: Option<&str>,
    nonce: &str,
) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
    read_raw(app.send(method, path, bearer, None, Some(nonce)).await).await
}

/// Checks that the `Licence-Signature` of an answer to `method path` names `nonce` and covers it
/// in `<method> <path>\n<Date>\n<nonce>\n<digest>`, and nothing else verifies.
fn assert_signed_with_nonce(
    method: &str,
    path: &str,
    nonce: &str,
    headers: &reqwest::header::HeaderMap,
    body: &[u8],
) {
    let prefix = format!("kid=\"ed1\", alg=\"ed25519\", nonce=\"{nonce}\", sig=\"");
    let (sig, date) = signature_and_date(method, path, headers, &prefix);
    let digest = URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(body));
    assert!(
        verifies(&format!("{method} {path}\n{date}\n{nonce}\n{digest}"), sig),
        "{method} {path}: signature does not cover the nonce"
    );
    // The old form no longer verifies: an answer bound to one request is useless for another.
    assert!(!verifies(
        &format!("{method} {path}\n{date}\n{digest}"),
        sig
    ));
    let other = format!("{method} {path}\n{date}\nAAAAAAAAAAAAAAAAAAAAAA\n{digest}");
    assert!(!verifies(&other, sig));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_licence_nonce_is_covered_and_named_by_the_answer_signature() {
    let app = spawn_app().await;
    let licence = app.licence("basic", "active");
    let token = app.token(&licence, "mac-1").await;
    let nonce = "n0nce-of_the-request-0123456789AB";
    let validate = ("POST", "/api/license/validate", Some(token.as_str()), 200);
    for (method, path, bearer, status) in std::iter::once(validate).chain(signed_routes(&token)) {
        let (s, headers, bytes) = raw_with_nonce(&app, method, path, bearer, nonce).await;
        assert_eq!(s, status, "{method} {path}");
        assert_signed_with_nonce(method, path, nonce, &headers, &bytes);
        // Useless to any other request, so no cache between app and server may keep it.
        assert_eq!(
            headers.get("cache-control").map(|v| v.as_bytes()),
            Some(&b"no-store"[..]),
            "{method} {path}"
        );
    }
    // The shortest and the longest nonce are taken as they are.
    for nonce in ["A".repeat(16), "_".repeat(64)] {
        let (s, headers, bytes) = raw_with_nonce(&app, "GET", "/api/latest", None, &nonce).await;
        assert_eq!(s, 200);
        assert_signed_with_nonce("GET", "/api/latest", &nonce, &headers, &bytes);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_licence_nonce_is_a_validation_error_and_consumes_nothing() {
    let app = spawn_app().await;
    let licence = app.licence("basic", "active");
    let token = app.token(&licence, "mac-1").await;
    for nonce in [
        "",
        "short",
        &"A".repeat(15),
        &"A".repeat(65),
        "has spaces in the middle!!",
        "padded+base64/standard=====",
        "quote\"inside-the-nonce-value",
    ] {
        let (s, headers, bytes) =
            raw_with_nonce(&app, "POST", "/api/usage/consume", Some(&token), nonce).await;
        let body: Value = serde_json::from_slice(&bytes).expect("json");
        assert_error(s, &body, 400, "VALIDATION_ERROR");
        assert!(
            body["message"]
                .as_str()
                .is_some_and(|m| m.contains("Licence-Nonce")),
            "{body}"
        );
        // Still signed, in the form that names no nonce.
        assert_signed("POST", "/api/usage/consume", &headers, &bytes);
    }
    // Two nonces are as ambiguous as a malformed one.
    let resp = app
        .client
        .get(format!("{}/api/latest", app.base))
        .header("licence-nonce", "A".repeat(20))
        .header("licence-nonce", "B".repeat(20))
        .send()
        .await
        .expect("request");
    let (s, body) = answer(resp).await;
    assert_error(s, &body, 400, "VALIDATION_ERROR");
    // None of the refused requests took a unit.
    let (s, body) = app.get("/api/usage/status", Some(&token)).await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["used"], 0, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn activations_list_and_deactivating_another_installation() {
    let app = spawn_app().await;
    let key = app.licence("pro", "active");
    let mac = app.token(&key, "mac").await;
    app.clock.advance(chrono::Duration::minutes(1));
    let pc = app.token(&key, "pc").await;
    let (s, body) = app.get("/api/license/activations", Some(&pc)).await;
    assert_eq!(s, 200, "{body}");
    let list = body["activations"].as_array().expect("list");
    assert_eq!(list.len(), 2);
    assert_eq!(
        (&list[0]["instanceId"], &list[0]["current"]),
        (&json!("mac"), &json!(false))
    );
    assert_eq!(
        (&list[1]["instanceId"], &list[1]["current"]),
        (&json!("pc"), &json!(true))
    );
    assert_eq!(list[0]["name"], "Test Mac");
    assert!(
        list[0]["createdAt"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
    assert!(list[0]["lastValidatedAt"].as_str().is_some());

    // The pc frees the mac's seat with its own token.
    let (s, body) = app.deactivate_by_token(&pc, Some("mac")).await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["license"]["activationUsage"], 1);
    let (s, b) = app.validate_by_token(&mac).await;
    assert_error(s, &b, 403, "INSTANCE_NOT_ACTIVE");
    // The mac, no longer active, cannot free the pc in return.
    let (s, b) = app.deactivate_by_token(&mac, Some("pc")).await;
    assert_error(s, &b, 403, "INSTANCE_NOT_ACTIVE");
    // An installation of another licence is reported as missing.
    let other = app.licence("pro", "active");
    app.token(&other, "foreign").await;
    let (s, b) = app.deactivate_by_token(&pc, Some("foreign")).await;
    assert_error(s, &b, 404, "INSTANCE_NOT_FOUND");
    app.assert_get_needs_token("/api/license/activations").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_installation_gives_its_seat_to_a_new_one() {
    let app = spawn_app().await;
    let key = app.licence("pro", "active");
    for i in ["old", "b", "c"] {
        app.token(&key, i).await;
    }
    let (s, b) = app.activate(&key, "new").await;
    assert_error(s, &b, 409, "ACTIVATION_LIMIT_REACHED");

    app.clock.advance(chrono::Duration::days(29));
    for i in ["b", "c"] {
        let (s, b) = app.validate(&key, i).await;
        assert_eq!(s, 200, "{b}");
    }
    // 29 days without validating is not stale yet.
    assert_eq!(app.activate(&key, "new").await.0, 409);
    app.clock.advance(chrono::Duration::days(1));
    let (s, b) = app.activate(&key, "new").await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["license"]["activationUsage"], 3);
    let (s, b) = app.validate(&key, "old").await;
    assert_error(s, &b, 403, "INSTANCE_NOT_ACTIVE");
    assert_eq!(b["valid"], false);
    assert_eq!(
        app.seats_seen_by_validate(&key, "new").await,
        3,
        "the stale seat went to the new one"
    );
}

async fn deactivate(
    base: &str,
    client: &reqwest::Client,
    key: &str,
    instance: &str,
) -> (u16, Value, Option<String>) {
    let resp = client
        .post(format!("{base}/api/license/deactivate"))
        .json(&json!({"licenseKey": key, "instanceId": instance}))
        .send()
        .await
        .expect("POST");
    let retry = testkit::http::header(&resp, "retry-after");
    let (s, b) = answer(resp).await;
    (s, b, retry)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_deactivations_per_30_days_also_across_two_replicas() {
    let app = spawn_app().await;
    let second = app.start_instance_with(&[]).await;
    let key = app.licence("pro", "active");
    for i in ["a", "b", "c"] {
        app.token(&key, i).await;
    }
    assert_eq!(deactivate(&app.base, &app.client, &key, "a").await.0, 200);
    app.token(&key, "d").await;
    // Three seats (b, c, d) freed at once through two replicas: two fit in the limit.
    let bases = [&app.base, &second, &app.base];
    let results = join_all(
        ["b", "c", "d"]
            .iter()
            .zip(bases)
            .map(|(i, base)| deactivate(base, &app.client, &key, i)),
    )
    .await;
    let ok = results.iter().filter(|r| r.0 == 200).count();
    let limited: Vec<_> = results.iter().filter(|r| r.0 == 429).collect();
    assert_eq!((ok, limited.len()), (2, 1), "{results:?}");
    assert_error(429, &limited[0].1, 429, "DEACTIVATION_LIMIT_REACHED");
    let retry: i64 = limited[0]
        .2
        .as_deref()
        .expect("Retry-After")
        .parse()
        .expect("seconds");
    assert_eq!(
        retry,
        30 * 86_400,
        "the first deactivation leaves the window in 30 days"
    );

    // Thirty days after the first, one more fits.
    app.clock.advance(chrono::Duration::days(30));
    let left: Vec<&str> = ["b", "c", "d"]
        .into_iter()
        .zip(&results)
        .filter(|(_, r)| r.0 == 429)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(deactivate(&second, &app.client, &key, left[0]).await.0, 200);
    assert_eq!(app.count("licence_deactivation"), 4);
}

async fn consume_with(app: &TestApp, token: &str, key: &str) -> (u16, Value) {
    consume_at(app, &app.base, token, key).await
}

/// A consume with `Idempotency-Key: key` at the replica `base`; the answer.
async fn consume_at(app: &TestApp, base: &str, token: &str, key: &str) -> (u16, Value) {
    let resp = app
        .client
        .post(format!("{base}/api/usage/consume"))
        .bearer_auth(token)
        .header("idempotency-key", key)
        .send()
        .await
        .expect("POST");
    answer(resp).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_parallel_consumes_with_one_idempotency_key_take_one_unit() {
    let app = spawn_app().await;
    let second = app.start_instance_with(&[]).await;
    let key = app.licence("basic", "active");
    let token = app.token(&key, "pc").await;
    let results = join_all((0..20).map(|i| {
        let app = &app;
        let token = token.clone();
        let second = second.clone();
        async move {
            if i % 2 == 0 {
                consume_with(app, &token, "job-42").await
            } else {
                consume_at(app, &second, &token, "job-42").await
            }
        }
    }))
    .await;
    for (s, b) in &results {
        assert_eq!(*s, 200, "{b}");
        assert_eq!((&b["used"], &b["remaining"]), (&json!(1), &json!(9)), "{b}");
    }
    let (s, b) = consume_with(&app, &token, "job-43").await;
    assert_eq!((s, &b["used"]), (200, &json!(2)), "{b}");
    let (_, status) = app.get("/api/usage/status", Some(&token)).await;
    assert_eq!(status["used"], 2);

    // A key used up the quota's last unit answers that again; a refused one stays refused.
    for i in 0..8 {
        assert_eq!(
            consume_with(&app, &token, &format!("fill-{i}")).await.0,
            200
        );
    }
    let (s, b) = consume_with(&app, &token, "late").await;
    assert_error(s, &b, 429, "DAILY_QUOTA_EXCEEDED");
    let (s, _) = consume_with(&app, &token, "late").await;
    assert_eq!(s, 429);
    let (s, b) = consume_with(&app, &token, "fill-7").await;
    assert_eq!((s, &b["used"]), (200, &json!(10)), "{b}");

    let (s, b) = consume_with(&app, &token, &"k".repeat(65)).await;
    assert_error(s, &b, 400, "VALIDATION_ERROR");
    assert!(
        b["message"]
            .as_str()
            .is_some_and(|m| m.contains("Idempotency-Key"))
    );
}
