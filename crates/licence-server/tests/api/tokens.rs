//! The token key ring: rotation, and every kind of forged token refused with 401.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use licence_server::clock::Clock;
use licence_server::tokens::Claims;
use serde_json::json;

use crate::helpers::{KEY, TestApp, assert_error, spawn_app};

const NEW_KEY: &str = "rotated-signing-key-abcdefghijklmnop-4567";

fn kid_of(token: &str) -> Option<String> {
    jsonwebtoken::decode_header(token).ok().and_then(|h| h.kid)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retired_key_verifies_while_in_the_ring_and_fails_once_removed() {
    let app = spawn_app().await;
    let key = app.licence("pro", "active");
    let old_token = app.token(&key, "pc").await;
    assert_eq!(kid_of(&old_token).as_deref(), Some("k1"));

    // Rotation: the new key signs, the old one still verifies.
    let rotated = app.start_instance(&format!("k2:{NEW_KEY},k1:{KEY}")).await;
    let (s, b) = app.validate_at(&rotated, &old_token).await;
    assert_eq!(s, 200, "{b}");
    let new_token = b["token"].as_str().expect("token").to_owned();
    assert_eq!(kid_of(&new_token).as_deref(), Some("k2"));

    // The old key retired.
    let retired = app.start_instance(&format!("k2:{NEW_KEY}")).await;
    let (s, b) = app.validate_at(&retired, &old_token).await;
    assert_error(s, &b, 401, "INVALID_TOKEN");
    let (s, b) = app.validate_at(&retired, &new_token).await;
    assert_eq!(s, 200, "{b}");
}

fn claims(app: &TestApp, licence_id: &str) -> Claims {
    let now = app.clock.now().timestamp();
    Claims {
        sub: licence_id.into(),
        iid: "pc".to_owned(),
        plan: "pro".to_owned(),
        iat: now,
        exp: now + 3600,
    }
}

fn sign(alg: Algorithm, kid: Option<&str>, secret: &[u8], claims: &Claims) -> String {
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(&header, claims, &EncodingKey::from_secret(secret)).expect("sign")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_and_expired_tokens_are_401() {
    let app = spawn_app().await;
    let key = app.licence("pro", "active");
    let genuine = app.token(&key, "pc").await;
    let licence_id = jsonwebtoken::dangerous::insecure_decode::<Claims>(&genuine)
        .expect("decode")
        .claims
        .sub;
    let c = claims(&app, licence_id.as_str());

    // The same claims signed properly are accepted: the forgeries below differ in one way only.
    let proper = sign(Algorithm::HS256, Some("k1"), KEY.as_bytes(), &c);
    assert_eq!(app.validate_at(&app.base, &proper).await.0, 200);

    let body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&c).expect("claims"));
    let none_header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT","kid":"k1"}"#);
    let forgeries = [
        ("alg none", format!("{none_header}.{body}.")),
        (
            "HS512",
            sign(Algorithm::HS512, Some("k1"), KEY.as_bytes(), &c),
        ),
        (
            "HS384",
            sign(Algorithm::HS384, Some("k1"), KEY.as_bytes(), &c),
        ),
        (
            "unknown kid",
            sign(Algorithm::HS256, Some("k9"), KEY.as_bytes(), &c),
        ),
        ("no kid", sign(Algorithm::HS256, None, KEY.as_bytes(), &c)),
        (
            "bad signature",
            sign(
                Algorithm::HS256,
                Some("k1"),
                b"another-secret-0123456789abcdef-xyz",
                &c,
            ),
        ),
        ("tampered claims", {
            let mut parts: Vec<String> = genuine.split('.').map(str::to_owned).collect();
            let mut other = c.clone();
            other.plan = "premium".to_owned();
            parts[1] = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&other).expect("claims"));
            parts.join(".")
        }),
        ("garbage", "a.b.c".to_owned()),
        ("empty parts", "..".to_owned()),
    ];
    for (what, token) in &forgeries {
        for (method, path) in [
            ("POST", "/api/license/validate"),
            ("POST", "/api/usage/consume"),
            ("GET", "/api/usage/status"),
            ("POST", "/api/license/deactivate"),
        ] {
            let req = if method == "GET" {
                app.client.get(format!("{}{path}", app.base))
            } else {
                app.client.post(format!("{}{path}", app.base))
            };
            let resp = req.bearer_auth(token).send().await.expect("send");
            let (s, b) = crate::helpers::answer(resp).await;
            assert_error(s, &b, 401, "INVALID_TOKEN");
            assert!(!b.to_string().contains(&key), "{what} {path}");
        }
        // /api/latest does not refuse, it just does not sign.
        let (s, b) = app.get("/api/latest", Some(token)).await;
        assert_eq!((s, &b["licensed"]), (200, &json!(false)), "{what}");
    }

    // Expiry by the service's clock.
    app.clock.advance(chrono::Duration::hours(24));
    let (s, b) = app.validate_at(&app.base, &genuine).await;
    assert_error(s, &b, 401, "INVALID_TOKEN");
    // Re-validating with key and instance gives a token again.
    let (s, b) = app.validate(&key, "pc").await;
    assert_eq!(s, 200, "{b}");
}
