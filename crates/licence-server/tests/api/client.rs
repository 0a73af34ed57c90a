//! The desktop app's library, `licence-client`, against a real licence-server.

use licence_client::{Error, LicenceClient};
use licence_server::clock::Clock;
use testkit::stack::ScratchDir;

use crate::helpers::{OTHER_SEED, client, spawn_app, trusted_keys};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn works_offline_until_the_lease_expires() {
    let app = spawn_app().await;
    let dir = ScratchDir::new("licence-client");
    let keys = trusted_keys(&app).await;
    let online = client(&app.base, keys.clone(), &dir, &app.clock);
    let key = app.licence("pro", "active");
    assert!(matches!(online.check(), Err(Error::NotActivated)));
    let status = online
        .activate(&key, Some("Laptop"))
        .await
        .expect("activate");
    assert_eq!(status.plan, "pro");
    assert_eq!(status.daily_quota, 30);
    assert_eq!(
        status.lease_expires_at.timestamp(),
        (app.clock.now() + chrono::Duration::days(7)).timestamp()
    );
    // The state file holds the lease; no temporary file is left.
    let files: Vec<_> = std::fs::read_dir(dir.path()).expect("dir").collect();
    assert_eq!(files.len(), 1);

    // The server out of reach: a port nobody listens on.
    let offline = client("http://127.0.0.1:9", keys, &dir, &app.clock);
    app.clock.advance(chrono::Duration::days(3));
    let s = offline.check().expect("valid offline");
    assert!(s.revalidation_due);
    let s = offline
        .refresh()
        .await
        .expect("an unreachable server keeps the offline decision");
    assert_eq!(s.plan, "pro");
    app.clock
        .advance(chrono::Duration::days(4) - chrono::Duration::seconds(1));
    assert!(offline.check().is_ok());
    app.clock.advance(chrono::Duration::seconds(1));
    match offline.check() {
        Err(Error::LeaseExpired { expired_at }) => {
            assert_eq!(expired_at.timestamp(), app.clock.now().timestamp());
        }
        other => panic!("expected LeaseExpired, got {other:?}"),
    }
    // Back online, validation renews it.
    let s = online.refresh().await.expect("renewed");
    assert_eq!(
        s.lease_expires_at.timestamp(),
        (app.clock.now() + chrono::Duration::days(7)).timestamp()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revalidation_renews_and_a_clock_set_back_is_detected() {
    let app = spawn_app().await;
    let dir = ScratchDir::new("licence-client");
    let c = client(&app.base, trusted_keys(&app).await, &dir, &app.clock);
    let key = app.licence("premium", "active");
    let first = c.activate(&key, None).await.expect("activate");
    assert!(!first.revalidation_due);
    app.clock.advance(chrono::Duration::hours(25));
    let renewed = c.refresh().await.expect("refresh");
    assert_eq!(
        renewed.lease_expires_at,
        first.lease_expires_at + chrono::Duration::hours(25)
    );
    assert!(!renewed.revalidation_due);

    app.clock.advance(chrono::Duration::hours(-2));
    assert!(matches!(c.check(), Err(Error::ClockSetBack { .. })));
    app.clock.advance(chrono::Duration::hours(2));
    assert!(c.check().is_ok());

    // A fresh installation whose clock is two days behind the server's is caught as well: the
    // answer's Date is too far from its clock to be taken, and nothing is stored.
    let dir2 = ScratchDir::new("licence-client");
    let server_now = app.clock.now();
    let behind = LicenceClient::with_keys(
        &app.base,
        trusted_keys(&app).await,
        dir2.path().join("licence.json"),
        "desk-2".into(),
    )
    .expect("client")
    .with_clock(move || server_now - chrono::Duration::days(2));
    match behind.activate(&key, None).await {
        Err(Error::ClockSkew { server_date }) => {
            assert_eq!(server_date.timestamp(), server_now.timestamp());
        }
        other => panic!("expected ClockSkew, got {other:?}"),
    }
    assert!(matches!(behind.check(), Err(Error::NotActivated)));
    // A clock set a day ahead and then put right is forgiven once the server vouches again.
    app.clock.advance(chrono::Duration::days(1));
    assert!(c.check().is_ok());
    app.clock.advance(chrono::Duration::days(-1));
    assert!(matches!(c.check(), Err(Error::ClockSetBack { .. })));
    c.validate().await.expect("validate");
    assert!(c.check().is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_signing_with_another_key_is_refused() {
    let app = spawn_app().await;
    let trusted = trusted_keys(&app).await;
    let impostor = app
        .start_instance_with(&[("LICENCE_SIGNING_KEYS", &format!("ed1:{OTHER_SEED}"))])
        .await;
    let dir = ScratchDir::new("licence-client");
    let c = client(&impostor, trusted, &dir, &app.clock);
    let key = app.licence("pro", "active");
    assert!(matches!(
        c.activate(&key, None).await,
        Err(Error::BadSignature)
    ));
    assert!(matches!(c.check(), Err(Error::NotActivated)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quota_exhausted_is_typed_and_installations_can_be_managed() {
    let app = spawn_app().await;
    let keys = trusted_keys(&app).await;
    let key = app.licence("basic", "active");
    let dir = ScratchDir::new("licence-client");
    let c = client(&app.base, keys.clone(), &dir, &app.clock);
    c.activate(&key, Some("Desk")).await.expect("activate");
    for i in 1..=10 {
        let u = c.consume().await.expect("consume");
        assert_eq!((u.used, u.remaining), (i, 10 - i));
    }
    // Past the token's 24 hours the library renews it and still takes the unit once.
    app.clock.advance(chrono::Duration::hours(25));
    let u = c.consume().await.expect("consume with an expired token");
    assert_eq!((u.used, u.remaining), (1, 9), "a new Rome day, one unit");
    for _ in 0..9 {
        c.consume().await.expect("consume");
    }
    match c.consume().await {
        Err(Error::QuotaExhausted { plan, resets_at }) => {
            assert_eq!(plan, "basic");
            assert!(resets_at > app.clock.now());
        }
        other => panic!("expected QuotaExhausted, got {other:?}"),
    }

    let other_dir = ScratchDir::new("licence-client");
    let clock = app.clock.clone();
    let laptop = LicenceClient::with_keys(
        &app.base,
        keys,
        other_dir.path().join("l.json"),
        "laptop".into(),
    )
    .expect("client")
    .with_clock(move || clock.now());
    laptop
        .activate(&key, Some("Laptop"))
        .await
        .expect("activate");
    let list = c.activations().await.expect("list");
    assert_eq!(list.len(), 2);
    assert!(list.iter().any(|a| a.instance_id == "desk-1" && a.current));
    c.deactivate(Some("laptop"))
        .await
        .expect("deactivate the laptop");
    assert!(matches!(
        laptop.validate().await,
        Err(Error::InstanceNotActive)
    ));
    assert!(matches!(laptop.check(), Err(Error::NotActivated)));
    c.deactivate(None).await.expect("deactivate itself");
    assert!(matches!(c.check(), Err(Error::NotActivated)));
}
