use base64::Engine;
use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};
use push::{EndpointError, KeyError, VapidKeyPair, check_endpoint, check_keys};

fn point() -> String {
    VapidKeyPair::generate().public_key
}

const AUTH: &str = "BTBZMqHH6r4Tts7J_aSIgg";

#[test]
fn keys_as_browsers_send_them_pass() {
    assert_eq!(check_keys(&point(), AUTH), Ok(()));
}

#[test]
fn key_padding_is_tolerated() {
    let bytes = URL_SAFE_NO_PAD.decode(point()).expect("b64");
    let padded = URL_SAFE.encode(&bytes);
    assert!(padded.ends_with('='));
    assert_eq!(check_keys(&padded, "BTBZMqHH6r4Tts7J_aSIgg=="), Ok(()));
}

#[test]
fn p256dh_must_be_base64url() {
    let standard_alphabet = point().replace('-', "+").replace('_', "/") + "+/";
    assert_eq!(
        check_keys(&standard_alphabet, AUTH),
        Err(KeyError::P256dhEncoding)
    );
    assert_eq!(
        check_keys("not base64!", AUTH),
        Err(KeyError::P256dhEncoding)
    );
}

#[test]
fn p256dh_must_be_65_bytes() {
    let short = URL_SAFE_NO_PAD.encode([4u8; 33]);
    assert_eq!(check_keys(&short, AUTH), Err(KeyError::P256dhLength(33)));
    assert_eq!(check_keys("", AUTH), Err(KeyError::P256dhLength(0)));
}

#[test]
fn p256dh_must_be_uncompressed() {
    let mut bytes = URL_SAFE_NO_PAD.decode(point()).expect("b64");
    bytes[0] = 0x02;
    assert_eq!(
        check_keys(&URL_SAFE_NO_PAD.encode(&bytes), AUTH),
        Err(KeyError::P256dhNotUncompressed)
    );
}

#[test]
fn p256dh_must_lie_on_the_curve() {
    let mut bytes = URL_SAFE_NO_PAD.decode(point()).expect("b64");
    bytes[64] ^= 1;
    assert_eq!(
        check_keys(&URL_SAFE_NO_PAD.encode(&bytes), AUTH),
        Err(KeyError::P256dhNotOnCurve)
    );
    assert_eq!(
        check_keys(&URL_SAFE_NO_PAD.encode([4u8; 65]), AUTH),
        Err(KeyError::P256dhNotOnCurve)
    );
}

#[test]
fn auth_must_be_16_base64url_bytes() {
    let p = point();
    assert_eq!(check_keys(&p, "!!"), Err(KeyError::AuthEncoding));
    assert_eq!(
        check_keys(&p, &URL_SAFE_NO_PAD.encode([1u8; 15])),
        Err(KeyError::AuthLength(15))
    );
    assert_eq!(
        check_keys(&p, &URL_SAFE_NO_PAD.encode([1u8; 32])),
        Err(KeyError::AuthLength(32))
    );
}

#[test]
fn key_errors_read_as_reasons() {
    assert_eq!(
        KeyError::AuthLength(15).to_string(),
        "keys.auth must be a 16-byte secret, got 15 bytes"
    );
}

/// `endpoint` is refused with `error`, yet passes with the flag that lets tests use a push
/// service on this machine.
fn refused_unless_local_allowed(endpoint: &str, error: EndpointError) {
    assert_eq!(check_endpoint(endpoint, false), Err(error), "{endpoint}");
    assert!(
        check_endpoint(endpoint, true).is_ok(),
        "{endpoint} with the flag"
    );
}

/// `endpoint` is refused with `error` whatever the flag.
fn refused_even_locally(endpoint: &str, error: EndpointError) {
    assert_eq!(
        check_endpoint(endpoint, false),
        Err(error.clone()),
        "{endpoint}"
    );
    assert_eq!(check_endpoint(endpoint, true), Err(error), "{endpoint}");
}

fn accepted(endpoint: &str) {
    assert!(check_endpoint(endpoint, false).is_ok(), "{endpoint}");
}

const FCM: &str = "https://fcm.googleapis.com/fcm/send/eKClHsXFm9E:APA91bH2x3gNOMv4";

#[test]
fn public_https_endpoints_pass() {
    for endpoint in [
        FCM,
        "https://updates.push.services.mozilla.com/wpush/v2/gAAAAABk",
        "https://web.push.apple.com/QGuQyavXutnMH",
        "https://wns2-par02p.notify.windows.com/w/?token=BQYAAA",
        "https://8.8.8.8/push",
        "https://[2606:4700:4700::1111]/push",
        "https://push.example.com:8443/x",
    ] {
        let url = check_endpoint(endpoint, false).unwrap_or_else(|e| panic!("{endpoint}: {e}"));
        assert_eq!(url.scheme(), "https");
    }
}

#[test]
fn only_https_unless_the_test_flag_is_set() {
    let http = "http://push.example.com/x";
    refused_unless_local_allowed(http, EndpointError::NotHttps);
    for other in [
        "ftp://push.example.com/x",
        "file:///etc/passwd",
        "javascript:alert(1)",
    ] {
        assert_eq!(
            check_endpoint(other, false),
            Err(EndpointError::NotHttps),
            "{other}"
        );
        assert_eq!(
            check_endpoint(other, true),
            Err(EndpointError::NotHttp),
            "{other}"
        );
    }
}

#[test]
fn must_be_an_absolute_url() {
    for bad in ["", "push.example.com/x", "/push/x", "https://"] {
        assert!(check_endpoint(bad, false).is_err(), "{bad}");
    }
    assert_eq!(
        check_endpoint("/push/x", false),
        Err(EndpointError::NotAUrl)
    );
}

#[test]
fn no_user_info() {
    for bad in [
        "https://user@push.example.com/x",
        "https://user:pw@push.example.com/x",
        "https://:pw@push.example.com/x",
    ] {
        refused_even_locally(bad, EndpointError::Userinfo);
    }
}

#[test]
fn at_most_2048_characters() {
    let base = "https://push.example.com/";
    let fits = format!("{base}{}", "a".repeat(2048 - base.len()));
    assert!(check_endpoint(&fits, false).is_ok());
    let over = format!("{fits}a");
    refused_even_locally(&over, EndpointError::TooLong);
}

#[test]
fn no_private_loopback_link_local_or_special_ipv4() {
    for ip in [
        "127.0.0.1",
        "127.1.2.3",
        "10.0.0.1",
        "172.16.0.1",
        "172.31.255.255",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "224.0.0.1",
        "255.255.255.255",
        "240.0.0.1",
        "192.0.2.1",
        "198.51.100.1",
        "203.0.113.1",
        "198.18.0.1",
        "192.0.0.8",
    ] {
        refused_unless_local_allowed(
            &format!("https://{ip}/push"),
            EndpointError::NonPublicAddress,
        );
    }
    for ip in ["172.15.0.1", "172.32.0.1", "100.128.0.1", "192.169.0.1"] {
        accepted(&format!("https://{ip}/push"));
    }
}

#[test]
fn ipv4_in_unusual_notations_is_still_caught() {
    for host in ["2130706433", "0x7f.1", "0177.0.0.1", "127.1"] {
        let endpoint = format!("https://{host}/push");
        assert_eq!(
            check_endpoint(&endpoint, false),
            Err(EndpointError::NonPublicAddress),
            "{host}"
        );
    }
}

#[test]
fn no_private_loopback_link_local_or_special_ipv6() {
    for ip in [
        "::1",
        "::",
        "fe80::1",
        "fc00::1",
        "fd12:3456::1",
        "fec0::1",
        "ff02::1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "::ffff:169.254.169.254",
        "::127.0.0.1",
        "64:ff9b::a00:1",
        "2002:c0a8:101::1",
        "2001:db8::1",
        "2001::1",
        "100::1",
    ] {
        refused_unless_local_allowed(
            &format!("https://[{ip}]/push"),
            EndpointError::NonPublicAddress,
        );
    }
    for ip in ["2a00:1450:4001::200e", "::ffff:8.8.8.8", "64:ff9b::808:808"] {
        accepted(&format!("https://[{ip}]/push"));
    }
}

#[test]
fn no_local_or_internal_names() {
    for host in [
        "localhost",
        "LOCALHOST",
        "localhost.",
        "api.localhost",
        "printer.local",
        "metadata.google.internal",
        "db.internal.",
        "router.home.arpa",
        "nas.lan",
        "host.localdomain",
        "postgres",
    ] {
        refused_unless_local_allowed(&format!("https://{host}/push"), EndpointError::LocalName);
    }
    for host in [
        "notlocalhost.com",
        "local.example.com",
        "internal.example.org",
    ] {
        accepted(&format!("https://{host}/push"));
    }
}

#[test]
fn endpoint_errors_read_as_reasons() {
    assert_eq!(
        EndpointError::NotHttps.to_string(),
        "endpoint must be an https:// URL"
    );
}
