use std::time::Duration;

use push::{MAX_PAYLOAD, Outcome, SendSetupError, Sender, Subscription, Urgency};
use rand::Rng;
use service_kit::Secret;

use crate::helpers::{TTL, sender, service, vapid};

#[tokio::test]
async fn message_decrypts_to_the_exact_payload() {
    let service = service().await;
    let sub = service.subscribe();
    let sender = sender();
    let payload = serde_json::json!({
        "title": "Pranzo",
        "body": "È ora di pranzo: più verdure, meno fretta.",
        "url": "/plan",
        "tag": "meal_lunch",
        "kind": "meal_lunch",
    })
    .to_string();

    let outcome = sender.send(&sub, payload.as_bytes(), TTL).await;

    assert_eq!(outcome, Outcome::Delivered);
    let received = service.received(&sub);
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].plaintext, payload.as_bytes());
    assert_eq!(received[0].json()["url"], "/plan");
    assert_eq!(received[0].ttl, 3600);
    assert_eq!(received[0].urgency, None);
    assert_eq!(received[0].vapid_key, sender.vapid_public_key());
    assert_eq!(received[0].vapid_subject, "mailto:ops@example.com");
    assert!(service.rejected().is_empty());
}

#[tokio::test]
async fn binary_payloads_of_every_size_up_to_the_limit_arrive_intact() {
    let service = service().await;
    let sub = service.subscribe();
    let sender = sender();
    let mut rng = rand::rng();
    // Around the 128-byte padding blocks and at the limit itself.
    for len in [1, 127, 128, 129, 1000, MAX_PAYLOAD - 1, MAX_PAYLOAD] {
        let payload: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        assert_eq!(
            sender.send(&sub, &payload, TTL).await,
            Outcome::Delivered,
            "{len} bytes"
        );
        let last = service.received(&sub).pop().expect("received");
        assert_eq!(last.plaintext, payload, "{len} bytes");
    }
}

#[tokio::test]
async fn payload_over_the_limit_is_refused_without_a_request() {
    let service = service().await;
    let sub = service.subscribe();
    let sender = sender();

    let outcome = sender.send(&sub, &vec![b'x'; MAX_PAYLOAD + 1], TTL).await;

    let Outcome::Failed {
        status: None,
        reason,
    } = outcome
    else {
        panic!("expected a refusal, got {outcome:?}");
    };
    assert!(reason.contains("exceeds"), "{reason}");
    assert_eq!(service.requests(), 0);
}

#[tokio::test]
async fn empty_payload_is_refused_without_a_request() {
    let service = service().await;
    let sub = service.subscribe();
    let outcome = sender().send(&sub, b"", TTL).await;
    assert!(
        matches!(outcome, Outcome::Failed { status: None, .. }),
        "{outcome:?}"
    );
    assert_eq!(service.requests(), 0);
}

#[tokio::test]
async fn ttl_and_urgency_are_sent() {
    let service = service().await;
    let sub = service.subscribe();
    let outcome = sender()
        .send_with_urgency(&sub, b"{}", Duration::from_secs(90), Some(Urgency::High))
        .await;
    assert_eq!(outcome, Outcome::Delivered);
    let received = service.received(&sub);
    assert_eq!(received[0].ttl, 90);
    assert_eq!(received[0].urgency.as_deref(), Some("high"));
}

#[tokio::test]
async fn keys_with_padding_are_accepted() {
    let service = service().await;
    let mut sub = service.subscribe();
    let plain = sub.clone();
    sub.p256dh.push('=');
    sub.auth.push_str("==");
    assert_eq!(
        sender().send(&sub, b"padded", TTL).await,
        Outcome::Delivered
    );
    assert_eq!(service.received(&plain)[0].plaintext, b"padded");
}

#[tokio::test]
async fn bad_keys_are_refused_without_a_request() {
    let service = service().await;
    let good = service.subscribe();
    let sender = sender();
    let broken = [
        Subscription {
            p256dh: "AAAA".to_owned(),
            ..good.clone()
        },
        Subscription {
            auth: "c2hvcnQ".to_owned(),
            ..good.clone()
        },
    ];
    for sub in &broken {
        let outcome = sender.send(sub, b"x", TTL).await;
        assert!(
            matches!(outcome, Outcome::Failed { status: None, .. }),
            "{outcome:?}"
        );
    }
    assert_eq!(service.requests(), 0);
}

#[tokio::test]
async fn message_for_another_subscriber_key_does_not_decrypt() {
    let service = service().await;
    let sub = service.subscribe();
    let other = service.subscribe();
    // Right endpoint, wrong keys: the service cannot decrypt it and says so.
    let mixed = Subscription {
        p256dh: other.p256dh.clone(),
        auth: other.auth.clone(),
        ..sub.clone()
    };
    let outcome = sender().send(&mixed, b"secret", TTL).await;
    assert!(
        matches!(
            outcome,
            Outcome::Failed {
                status: Some(400),
                ..
            }
        ),
        "{outcome:?}"
    );
    assert!(service.received(&sub).is_empty());
    assert!(service.rejected()[0].reason.contains("decryption failed"));
}

#[tokio::test]
async fn without_the_test_flag_local_endpoints_are_refused_before_any_request() {
    let service = service().await;
    let sub = service.subscribe();
    let strict = Sender::new(vapid(), false).expect("sender");
    let port = service.origin().rsplit(':').next().expect("port");
    let id = sub.endpoint.rsplit('/').next().expect("id");
    for endpoint in [
        sub.endpoint.clone(),
        format!("https://127.0.0.1:{port}/push/{id}"),
        format!("https://[::ffff:127.0.0.1]:{port}/push/{id}"),
        format!("https://localhost:{port}/push/{id}"),
    ] {
        let target = Subscription {
            endpoint: endpoint.clone(),
            ..sub.clone()
        };
        let outcome = strict.send(&target, b"x", TTL).await;
        assert!(
            matches!(outcome, Outcome::Failed { status: None, .. }),
            "{endpoint}: {outcome:?}"
        );
    }
    assert_eq!(service.requests(), 0);
}

#[test]
fn sender_refuses_a_public_key_of_another_pair() {
    let mut config = vapid();
    config.public_key = vapid().public_key;
    assert!(matches!(
        Sender::new(config, false),
        Err(SendSetupError::KeyMismatch)
    ));
    let mut config = vapid();
    config.private_key = Secret::new("bm90IGEga2V5");
    assert!(matches!(
        Sender::new(config, false),
        Err(SendSetupError::PrivateKey)
    ));
}
