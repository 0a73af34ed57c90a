use std::time::Duration;

use push::sender::{DEFAULT_BACKOFF, DEFAULT_RATE_LIMIT_BACKOFF};
use push::{Outcome, Sender};
use testkit::push_service::Answer;

use crate::helpers::{TTL, sender, service, vapid};

/// Sends one message answered with `answer` and returns its outcome.
async fn outcome_of(answer: Answer) -> Outcome {
    let service = service().await;
    let sub = service.subscribe();
    service.respond(&sub, answer);
    let outcome = sender().send(&sub, b"{\"kind\":\"test\"}", TTL).await;
    assert_eq!(service.requests(), 1, "{answer:?}");
    assert!(service.rejected().is_empty(), "{answer:?}");
    outcome
}

#[tokio::test]
async fn created_is_delivered() {
    assert_eq!(outcome_of(Answer::Created).await, Outcome::Delivered);
    assert_eq!(outcome_of(Answer::Status(200)).await, Outcome::Delivered);
    assert_eq!(outcome_of(Answer::Status(202)).await, Outcome::Delivered);
}

#[tokio::test]
async fn not_found_and_gone_are_gone() {
    assert_eq!(outcome_of(Answer::Gone404).await, Outcome::Gone);
    assert_eq!(outcome_of(Answer::Gone410).await, Outcome::Gone);
}

#[tokio::test]
async fn too_many_requests_waits_as_told() {
    assert_eq!(
        outcome_of(Answer::TooMany {
            retry_after: Some(17)
        })
        .await,
        Outcome::RetryAfter(Duration::from_secs(17))
    );
}

#[tokio::test]
async fn too_many_requests_without_retry_after_waits_the_default() {
    assert_eq!(
        outcome_of(Answer::TooMany { retry_after: None }).await,
        Outcome::RetryAfter(DEFAULT_RATE_LIMIT_BACKOFF)
    );
}

#[tokio::test]
async fn server_errors_are_retried() {
    assert_eq!(
        outcome_of(Answer::Unavailable503).await,
        Outcome::RetryAfter(DEFAULT_BACKOFF)
    );
    assert_eq!(
        outcome_of(Answer::Status(500)).await,
        Outcome::RetryAfter(DEFAULT_BACKOFF)
    );
}

#[tokio::test]
async fn client_errors_fail_with_their_status() {
    for code in [400, 401, 403, 413, 402, 415] {
        let outcome = outcome_of(Answer::Status(code)).await;
        assert!(
            matches!(outcome, Outcome::Failed { status: Some(c), .. } if c == code),
            "{code}: {outcome:?}"
        );
    }
}

#[tokio::test]
async fn a_rejected_vapid_key_fails_with_403() {
    let service = service().await;
    let sender = sender();
    // Subscribed with another application server key than the one this sender signs with.
    let sub = service.subscribe_restricted(&vapid().public_key);
    let outcome = sender.send(&sub, b"x", TTL).await;
    assert!(
        matches!(
            outcome,
            Outcome::Failed {
                status: Some(403),
                ..
            }
        ),
        "{outcome:?}"
    );
    assert_eq!(service.rejected()[0].status, 403);
    // The right key goes through.
    let sub = service.subscribe_restricted(sender.vapid_public_key());
    assert_eq!(sender.send(&sub, b"x", TTL).await, Outcome::Delivered);
}

#[tokio::test]
async fn time_out_is_retried() {
    let service = service().await;
    let sub = service.subscribe();
    service.respond(&sub, Answer::Hang);
    let sender = Sender::with_timeout(vapid(), true, Duration::from_millis(500)).expect("sender");
    let started = std::time::Instant::now();
    let outcome = sender.send(&sub, b"x", TTL).await;
    assert_eq!(outcome, Outcome::RetryAfter(DEFAULT_BACKOFF));
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn refused_connection_is_retried() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let service = service().await;
    let mut sub = service.subscribe();
    sub.endpoint = format!("http://127.0.0.1:{port}/push/nobody");
    assert_eq!(
        sender().send(&sub, b"x", TTL).await,
        Outcome::RetryAfter(DEFAULT_BACKOFF)
    );
}

#[tokio::test]
async fn queued_answers_come_first() {
    let service = service().await;
    let sub = service.subscribe();
    service.respond_sequence(&sub, [Answer::Unavailable503, Answer::Gone410]);
    let sender = sender();
    assert_eq!(
        sender.send(&sub, b"1", TTL).await,
        Outcome::RetryAfter(DEFAULT_BACKOFF)
    );
    assert_eq!(sender.send(&sub, b"2", TTL).await, Outcome::Gone);
    assert_eq!(sender.send(&sub, b"3", TTL).await, Outcome::Delivered);
    let received = service.received(&sub);
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].plaintext, b"3");
}
