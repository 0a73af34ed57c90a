//! Which hosts push endpoints may be on: the known Web Push services by default,
//! `PUSH_ENDPOINT_HOSTS` instead, any host for tests.

use push::{EndpointError, EndpointPolicy, KNOWN_PUSH_HOSTS, Outcome, Sender, SenderOptions};
use service_kit::Env;

use crate::helpers::{TTL, service, vapid};

fn from_env(pairs: &[(&str, &str)]) -> Result<EndpointPolicy, String> {
    EndpointPolicy::from_env(&Env::from_pairs(pairs.iter().copied())).map_err(|e| e.var)
}

#[test]
fn the_known_push_services_are_the_default() {
    let policy = from_env(&[]).expect("valid");
    assert_eq!(policy, EndpointPolicy::known_push_services());
    assert_eq!(policy, EndpointPolicy::default());
    for endpoint in [
        "https://fcm.googleapis.com/fcm/send/abc",
        "https://updates.push.services.mozilla.com/wpush/v2/x",
        "https://push.services.mozilla.com/wpush/v1/x",
        "https://web.push.apple.com/QGx9",
        "https://api.push.apple.com/3/device/x",
        "https://db5p.notify.windows.com/w/?token=x",
        "https://FCM.GoogleApis.com/fcm/send/upper",
        "https://fcm.googleapis.com./fcm/send/dotted",
        "https://fcm.googleapis.com:443/fcm/send/port",
    ] {
        assert!(policy.check(endpoint).is_ok(), "{endpoint}");
    }
    for endpoint in [
        "https://push.example.com/x",
        "https://googleapis.com/x",
        "https://notfcm.googleapis.com/x",
        "https://fcm.googleapis.com.example.org/x",
        "https://push.apple.com/x",
        "https://notify.windows.com/x",
        "https://8.8.8.8/x",
        "https://[2001:4860:4860::8888]/x",
    ] {
        assert_eq!(
            policy.check(endpoint),
            Err(EndpointError::UnknownPushService),
            "{endpoint}"
        );
    }
    // The other rules still come first.
    assert_eq!(
        policy.check("http://fcm.googleapis.com/x"),
        Err(EndpointError::NotHttps)
    );
    assert_eq!(KNOWN_PUSH_HOSTS.len(), 6);
}

#[test]
fn push_endpoint_hosts_replaces_the_list() {
    let policy =
        from_env(&[("PUSH_ENDPOINT_HOSTS", " push.example.com ,*.corp.example.")]).expect("valid");
    for endpoint in [
        "https://push.example.com/x",
        "https://a.b.push.example.com/x",
        "https://eu.corp.example/x",
    ] {
        assert!(policy.check(endpoint).is_ok(), "{endpoint}");
    }
    for endpoint in [
        "https://corp.example/x",
        "https://xpush.example.com/x",
        "https://fcm.googleapis.com/x",
    ] {
        assert!(policy.check(endpoint).is_err(), "{endpoint}");
    }
}

#[test]
fn a_star_allows_any_public_host_and_nothing_else() {
    let policy = from_env(&[("PUSH_ENDPOINT_HOSTS", "*")]).expect("valid");
    assert_eq!(policy, EndpointPolicy::any_public_host());
    assert!(policy.check("https://push.example.com/x").is_ok());
    assert!(policy.check("https://8.8.8.8/x").is_ok());
    assert_eq!(
        policy.check("https://localhost/x"),
        Err(EndpointError::LocalName)
    );
    assert_eq!(
        policy.check("https://10.0.0.1/x"),
        Err(EndpointError::NonPublicAddress)
    );
}

#[test]
fn the_test_flag_allows_any_host() {
    for hosts in [None, Some("fcm.googleapis.com")] {
        let mut pairs = vec![("PUSH_ALLOW_HTTP_ENDPOINTS", "true")];
        if let Some(h) = hosts {
            pairs.push(("PUSH_ENDPOINT_HOSTS", h));
        }
        let policy = from_env(&pairs).expect("valid");
        assert!(policy.allows_http());
        assert!(policy.check("http://127.0.0.1:9/push/x").is_ok());
        assert!(policy.check("http://t1.tarpit.localhost:9/x").is_ok());
    }
}

#[test]
fn bad_lists_are_configuration_errors() {
    for list in [
        ",",
        "com",
        "*, fcm.googleapis.com",
        "fcm.googleapis.com/x",
        "https://fcm.googleapis.com",
        "fcm..googleapis.com",
        "*.*.example.com",
        "-a.example.com",
    ] {
        assert_eq!(
            from_env(&[("PUSH_ENDPOINT_HOSTS", list)]),
            Err("PUSH_ENDPOINT_HOSTS".to_owned()),
            "{list:?}"
        );
    }
}

#[tokio::test]
async fn a_sender_refuses_hosts_outside_its_policy_before_any_request() {
    let service = service().await;
    let sub = service.subscribe();
    let sender = Sender::with_options(
        vapid(),
        SenderOptions {
            policy: EndpointPolicy::known_push_services(),
            ..SenderOptions::default()
        },
    )
    .expect("sender");
    let outcome = sender
        .send(
            &push::Subscription {
                endpoint: "https://push.example.com/x".into(),
                ..sub.clone()
            },
            b"x",
            TTL,
        )
        .await;
    assert!(
        matches!(outcome, Outcome::Failed { status: None, .. }),
        "{outcome:?}"
    );
    assert_eq!(service.requests(), 0);
}

#[tokio::test]
async fn a_test_sender_can_resolve_names_to_a_local_address() {
    let service = service().await;
    let sub = service.subscribe();
    let addr: std::net::SocketAddr = service
        .origin()
        .trim_start_matches("http://")
        .parse()
        .expect("address");
    let sender = Sender::with_options(
        vapid(),
        SenderOptions {
            policy: EndpointPolicy::allow_http(),
            resolve: vec![("a.push.test".into(), addr)],
            ..SenderOptions::default()
        },
    )
    .expect("sender");
    let renamed = push::Subscription {
        endpoint: sub.endpoint.replace("127.0.0.1", "a.push.test"),
        ..sub.clone()
    };
    let outcome = sender.send(&renamed, b"x", TTL).await;
    // The fake service checks the token's audience against its own origin, so the request
    // arrived (and was refused for the name, not lost).
    assert!(service.requests() >= 1, "{outcome:?}");
}
