//! Notification settings, device registration and the test push, delivered to the test kit's
//! push service, which verifies VAPID and decrypts every message.

use push::VapidKeyPair;
use reqwest::Method;
use serde_json::json;
use testkit::push_service::{Answer, FakePushService};

use crate::helpers::{TestApp, User, spawn_app, spawn_with};

fn vapid_env(allow_http: bool) -> (VapidKeyPair, Vec<(String, String)>) {
    let pair = VapidKeyPair::generate();
    let env = vec![
        ("VAPID_PUBLIC_KEY".into(), pair.public_key.clone()),
        (
            "VAPID_PRIVATE_KEY".into(),
            pair.private_key.expose().to_owned(),
        ),
        ("VAPID_SUBJECT".into(), "mailto:ops@example.com".into()),
        ("PUSH_ALLOW_HTTP_ENDPOINTS".into(), allow_http.to_string()),
    ];
    (pair, env)
}

async fn register(
    app: &TestApp,
    u: &User,
    endpoint: &str,
    p256dh: &str,
    auth: &str,
) -> crate::helpers::Resp {
    app.post(
        "/me/device-tokens",
        u,
        json!({ "platform": "web", "endpoint": endpoint, "keys": { "p256dh": p256dh, "auth": auth } }),
    )
    .await
}

fn devices(app: &TestApp, u: &User) -> i64 {
    app.count(&format!(
        "SELECT count(*) AS n FROM nutrition.device_token WHERE user_id = '{}'",
        u.id
    ))
}

#[tokio::test]
async fn config_and_settings() {
    let off = spawn_app().await;
    let u = off.user("cfg@example.com");
    assert_eq!(
        off.get("/me/notifications/config", &u).await.body,
        json!({ "pushEnabled": false, "vapidPublicKey": null })
    );
    let (pair, env) = vapid_env(true);
    let on = spawn_with(&env).await;
    let v = on.user("cfg2@example.com");
    assert_eq!(
        on.get("/me/notifications/config", &v).await.body,
        json!({ "pushEnabled": true, "vapidPublicKey": pair.public_key })
    );

    assert_eq!(
        on.get("/me/notifications/settings", &v).await.body,
        json!({ "mealReminders": false, "weeklyWeighIn": true })
    );
    let r = on
        .patch(
            "/me/notifications/settings",
            &v,
            json!({ "mealReminders": true }),
        )
        .await;
    assert_eq!(
        r.body,
        json!({ "mealReminders": true, "weeklyWeighIn": true })
    );
    let r = on
        .patch(
            "/me/notifications/settings",
            &v,
            json!({ "weeklyWeighIn": false }),
        )
        .await;
    assert_eq!(
        r.body,
        json!({ "mealReminders": true, "weeklyWeighIn": false })
    );
    for bad in [
        json!({ "mealReminders": "on" }),
        json!({ "dailyDigest": true }),
        json!([]),
    ] {
        let r = on
            .patch("/me/notifications/settings", &v, bad.clone())
            .await;
        r.assert_code(400, "VALIDATION_ERROR");
    }
    assert_eq!(
        on.get("/me/notifications/settings", &v).await.body,
        json!({ "mealReminders": true, "weeklyWeighIn": false })
    );
}

#[tokio::test]
async fn registering_twice_is_one_device() {
    let (_, env) = vapid_env(true);
    let app = spawn_with(&env).await;
    let push = FakePushService::start().await;
    let sub = push.subscribe();
    let u = app.user("dev@example.com");
    let first = register(&app, &u, &sub.endpoint, &sub.p256dh, &sub.auth).await;
    assert_eq!(first.status, 201, "{}", first.text);
    for field in [
        "id",
        "platform",
        "endpoint",
        "token",
        "userAgent",
        "createdAt",
        "lastSeenAt",
    ] {
        assert!(first.body.get(field).is_some(), "{field}: {}", first.text);
    }
    assert!(first.body.get("keys").is_none(), "keys are not echoed");
    let again = app
        .post(
            "/me/device-tokens",
            &u,
            json!({ "platform": "android", "endpoint": sub.endpoint, "keys": { "p256dh": sub.p256dh, "auth": sub.auth }, "token": "fcm-1" }),
        )
        .await;
    assert_eq!(again.status, 201);
    assert_eq!(
        again.body["id"], first.body["id"],
        "the same device, updated"
    );
    assert_eq!(again.body["platform"], "android");
    assert_eq!(again.body["token"], "fcm-1");
    assert!(again.body["lastSeenAt"].as_str() >= first.body["lastSeenAt"].as_str());
    assert_eq!(devices(&app, &u), 1);

    // Another user signing in on the same browser takes the subscription over.
    let v = app.user("dev2@example.com");
    assert_eq!(
        register(&app, &v, &sub.endpoint, &sub.p256dh, &sub.auth)
            .await
            .status,
        201
    );
    assert_eq!((devices(&app, &u), devices(&app, &v)), (0, 1));

    let del = app
        .call(
            Method::DELETE,
            "/me/device-tokens",
            Some(&v),
            Some(json!({ "endpoint": sub.endpoint })),
        )
        .await;
    assert_eq!(del.status, 204);
    assert_eq!(devices(&app, &v), 0);
    let again = app
        .call(
            Method::DELETE,
            "/me/device-tokens",
            Some(&v),
            Some(json!({ "endpoint": sub.endpoint })),
        )
        .await;
    assert_eq!(again.status, 204, "already gone is fine");
}

#[tokio::test]
async fn endpoints_and_keys_are_checked() {
    let (_, env) = vapid_env(false);
    let app = spawn_with(&env).await;
    let push = FakePushService::start().await;
    let sub = push.subscribe();
    let u = app.user("chk@example.com");
    let good_https = "https://fcm.googleapis.com/fcm/send/abc123";
    for endpoint in [
        sub.endpoint.as_str(),
        "http://push.example.com/x",
        "https://127.0.0.1/x",
        "https://10.1.2.3/x",
        "https://192.168.0.5/x",
        "https://169.254.169.254/latest",
        "https://[::1]/x",
        "https://localhost/x",
        "ftp://push.example.com/x",
        "not a url",
    ] {
        let r = register(&app, &u, endpoint, &sub.p256dh, &sub.auth).await;
        r.assert_error(400, "VALIDATION_ERROR", "endpoint");
    }
    let short_auth = "AAAAAAAAAAAAAAAAAAAA";
    for (p256dh, auth) in [
        ("BAAA", sub.auth.as_str()),
        // Not an uncompressed point (first byte no longer 0x04).
        (&*format!("A{}", &sub.p256dh[1..]), sub.auth.as_str()),
        // A 65-byte value that is not on the curve.
        (
            &*format!("B{}", "A".repeat(sub.p256dh.len() - 1)),
            sub.auth.as_str(),
        ),
        (sub.p256dh.as_str(), short_auth),
        (sub.p256dh.as_str(), "!!!"),
    ] {
        let r = register(&app, &u, good_https, p256dh, auth).await;
        assert_eq!(r.status, 400, "{p256dh} {auth}: {}", r.text);
    }
    assert_eq!(devices(&app, &u), 0, "nothing stored");
    for body in [
        json!({ "platform": "web", "endpoint": good_https }),
        json!({ "platform": "", "endpoint": good_https, "keys": { "p256dh": sub.p256dh, "auth": sub.auth } }),
    ] {
        assert_eq!(app.post("/me/device-tokens", &u, body).await.status, 400);
    }
    let ok = register(&app, &u, good_https, &sub.p256dh, &sub.auth).await;
    assert_eq!(ok.status, 201, "a public https endpoint: {}", ok.text);
}

#[tokio::test]
async fn test_push_is_delivered_decrypted_and_gone_devices_are_removed() {
    let (pair, env) = vapid_env(true);
    let app = spawn_with(&env).await;
    let push = FakePushService::start().await;
    let u = app.user("tp@example.com");
    let (ok, gone, gone404, busy) = (
        push.subscribe(),
        push.subscribe(),
        push.subscribe(),
        push.subscribe(),
    );
    push.respond(&gone, Answer::Gone410);
    push.respond(&gone404, Answer::Gone404);
    push.respond(&busy, Answer::Unavailable503);
    for s in [&ok, &gone, &gone404, &busy] {
        assert_eq!(
            register(&app, &u, &s.endpoint, &s.p256dh, &s.auth)
                .await
                .status,
            201
        );
    }
    let r = app
        .call(Method::POST, "/me/notifications/test", Some(&u), None)
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body, json!({ "sent": 1, "removed": 2, "failed": 1 }));
    let received = push.received(&ok);
    assert_eq!(received.len(), 1);
    let payload: serde_json::Value =
        serde_json::from_slice(&received[0].plaintext).expect("JSON payload");
    assert_eq!(payload["kind"], "test");
    for field in ["title", "body", "url", "tag"] {
        assert!(payload[field].is_string(), "{field}: {payload}");
    }
    let topic = received[0].topic.as_deref().unwrap_or_default();
    assert!(
        (1..=32).contains(&topic.len())
            && topic
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
        "a Topic of at most 32 base64url characters (RFC 8030): {topic:?}"
    );
    assert_eq!(
        received[0].vapid_key, pair.public_key,
        "signed with the configured VAPID key"
    );
    assert!(push.rejected().is_empty(), "every VAPID header verified");
    assert_eq!(
        devices(&app, &u),
        2,
        "the 404 and 410 devices are gone, the busy one stays"
    );

    let other = app.user("tp2@example.com");
    let r = app
        .call(Method::POST, "/me/notifications/test", Some(&other), None)
        .await;
    assert_eq!(r.body, json!({ "sent": 0, "removed": 0, "failed": 0 }));
}

#[tokio::test]
async fn push_off_answers_503() {
    let app = spawn_app().await;
    let u = app.user("off@example.com");
    let r = app
        .call(Method::POST, "/me/notifications/test", Some(&u), None)
        .await;
    r.assert_code(503, "PUSH_DISABLED");
}

const KNOWN_SERVICES: [&str; 6] = [
    "https://fcm.googleapis.com/fcm/send/abc123",
    "https://updates.push.services.mozilla.com/wpush/v2/gAAAA",
    "https://web.push.apple.com/QGx9",
    "https://api.push.apple.com/3/device/abc",
    "https://wns2-par02p.notify.windows.com/w/?token=AwYAAAB",
    "https://FCM.googleapis.com./fcm/send/dotted",
];

/// Public https hosts that are not push services: a server that accepts connections and never
/// answers would hold every send to it until the time-out.
const OTHER_HOSTS: [&str; 6] = [
    "https://push.example.com/x",
    "https://t1.tarpit.example.net/x",
    "https://fcm.googleapis.com.evil.example/x",
    "https://notfcm.googleapis.com/x",
    "https://push.apple.com.example.org/x",
    "https://8.8.8.8/x",
];

#[tokio::test]
async fn only_known_push_services_are_accepted_by_default() {
    let (_, env) = vapid_env(false);
    let app = spawn_with(&env).await;
    let push = FakePushService::start().await;
    let sub = push.subscribe();
    let u = app.user("hosts@example.com");
    for endpoint in OTHER_HOSTS {
        let r = register(&app, &u, endpoint, &sub.p256dh, &sub.auth).await;
        r.assert_error(400, "VALIDATION_ERROR", "endpoint");
    }
    assert_eq!(devices(&app, &u), 0, "nothing stored");
    for endpoint in KNOWN_SERVICES {
        let r = register(&app, &u, endpoint, &sub.p256dh, &sub.auth).await;
        assert_eq!(r.status, 201, "{endpoint}: {}", r.text);
    }
    assert_eq!(devices(&app, &u), 6);
}

#[tokio::test]
async fn push_endpoint_hosts_overrides_the_known_services() {
    let (_, mut env) = vapid_env(false);
    env.push((
        "PUSH_ENDPOINT_HOSTS".into(),
        "push.example.com, *.corp.example".into(),
    ));
    let app = spawn_with(&env).await;
    let push = FakePushService::start().await;
    let sub = push.subscribe();
    let u = app.user("hosts2@example.com");
    for endpoint in [
        "https://push.example.com/x",
        "https://eu.push.example.com/x",
        "https://a.corp.example/x",
    ] {
        let r = register(&app, &u, endpoint, &sub.p256dh, &sub.auth).await;
        assert_eq!(r.status, 201, "{endpoint}: {}", r.text);
    }
    for endpoint in [
        "https://fcm.googleapis.com/fcm/send/abc123",
        "https://corp.example/x",
        "https://xpush.example.com/x",
        "https://127.0.0.1/x",
    ] {
        let r = register(&app, &u, endpoint, &sub.p256dh, &sub.auth).await;
        assert_eq!(r.status, 400, "{endpoint}: {}", r.text);
    }

    let (_, mut env) = vapid_env(false);
    env.push(("PUSH_ENDPOINT_HOSTS".into(), "*".into()));
    let any = spawn_with(&env).await;
    let v = any.user("hosts3@example.com");
    let r = register(
        &any,
        &v,
        "https://push.example.com/x",
        &sub.p256dh,
        &sub.auth,
    )
    .await;
    assert_eq!(r.status, 201, "any public host with '*': {}", r.text);
    for endpoint in ["https://localhost/x", "https://10.0.0.1/x", &sub.endpoint] {
        let r = register(&any, &v, endpoint, &sub.p256dh, &sub.auth).await;
        assert_eq!(r.status, 400, "still public hosts only: {endpoint}");
    }
}

#[tokio::test]
async fn a_device_on_another_host_gets_no_test_push_and_is_removed() {
    let (_, env) = vapid_env(false);
    let app = spawn_with(&env).await;
    let u = app.user("legacy@example.com");
    let push = FakePushService::start().await;
    let sub = push.subscribe();
    // Registered before the rule existed.
    app.count(&format!(
        "WITH d AS (INSERT INTO nutrition.device_token (id, user_id, platform, endpoint, p256dh, auth)
                    VALUES ('legacy-device', '{}', 'web', 'https://push.example.com/x', '{}', '{}')
                    RETURNING 1) SELECT count(*) AS n FROM d",
        u.id, sub.p256dh, sub.auth
    ));
    assert_eq!(devices(&app, &u), 1);
    let r = app
        .call(Method::POST, "/me/notifications/test", Some(&u), None)
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body, json!({ "sent": 0, "removed": 1, "failed": 0 }));
    assert_eq!(devices(&app, &u), 0);
}
