use std::collections::HashSet;

use push::Outcome;

use crate::helpers::{TTL, sender, service};

#[tokio::test]
async fn one_token_serves_many_messages_to_one_push_service() {
    let service = service().await;
    let subs: Vec<_> = (0..10).map(|_| service.subscribe()).collect();
    let sender = sender();
    for round in 0..5 {
        for sub in &subs {
            let payload = format!("round {round}");
            assert_eq!(
                sender.send(sub, payload.as_bytes(), TTL).await,
                Outcome::Delivered
            );
        }
    }
    assert_eq!(service.all_received().len(), 50);
    assert_eq!(sender.jwt_signings(), 1);
}

#[tokio::test]
async fn each_push_service_gets_its_own_token() {
    let first = service().await;
    let second = service().await;
    let a = first.subscribe();
    let b = second.subscribe();
    let sender = sender();
    for _ in 0..3 {
        assert_eq!(sender.send(&a, b"a", TTL).await, Outcome::Delivered);
        assert_eq!(sender.send(&b, b"b", TTL).await, Outcome::Delivered);
    }
    assert_eq!(sender.jwt_signings(), 2);
    // Both services checked aud against their own origin, so each saw a token made for it.
    assert_eq!(first.received(&a).len(), 3);
    assert_eq!(second.received(&b).len(), 3);
    assert!(first.rejected().is_empty() && second.rejected().is_empty());
}

#[tokio::test]
async fn concurrent_first_sends_sign_once() {
    let service = service().await;
    let sender = sender();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..32 {
        let sub = service.subscribe();
        let sender = sender.clone();
        tasks.spawn(async move { sender.send(&sub, format!("{i}").as_bytes(), TTL).await });
    }
    while let Some(outcome) = tasks.join_next().await {
        assert_eq!(outcome.expect("task"), Outcome::Delivered);
    }
    assert_eq!(sender.jwt_signings(), 1);
    let payloads: HashSet<Vec<u8>> = service
        .all_received()
        .into_iter()
        .map(|d| d.plaintext)
        .collect();
    assert_eq!(payloads.len(), 32);
}
