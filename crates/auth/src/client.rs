//! Who is asking: the client address (believing `X-Forwarded-For` only from trusted proxies)
//! and the user agent, recorded on sessions and used as a rate-limit key.

use std::net::IpAddr;

use actix_web::HttpRequest;
use ipnet::IpNet;

/// The client's address, believing `X-Forwarded-For` only from trusted proxies, as every
/// service reads it.
pub fn ip(req: &HttpRequest, trusted: &[IpNet]) -> Option<IpAddr> {
    service_kit::http::client_ip(req, trusted)
}

/// The address as a rate-limit subject (an IPv6 address as its /64), as every service counts it.
pub use service_kit::http::client_network as network;

/// The user agent, as every service keeps it.
pub use service_kit::http::user_agent;

/// Where a new session comes from.
pub fn origin(req: &HttpRequest, trusted: &[IpNet]) -> session::store::Origin {
    session::store::Origin {
        ip_address: ip(req, trusted).map(|ip| ip.to_string()),
        user_agent: user_agent(req),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test::TestRequest;

    fn req(peer: &str, xff: Option<&str>) -> HttpRequest {
        let mut r =
            TestRequest::default().peer_addr(format!("{peer}:40000").parse().expect("addr"));
        if let Some(v) = xff {
            r = r.insert_header(("x-forwarded-for", v));
        }
        r.to_http_request()
    }

    #[test]
    fn ipv6_counts_as_its_64() {
        let net = |s: &str| network(s.parse().expect("ip"));
        assert_eq!(net("203.0.113.9"), "203.0.113.9");
        assert_eq!(net("::ffff:203.0.113.9"), "203.0.113.9");
        assert_eq!(net("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
        assert_eq!(net("2001:db8:1:2:ffff:ffff:ffff:ffff"), "2001:db8:1:2::/64");
        assert_ne!(net("2001:db8:1:3::1"), net("2001:db8:1:2::1"));
    }

    #[test]
    fn forwarded_for_only_from_trusted_proxies() {
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().expect("net")];
        let ip_of = |peer, xff| ip(&req(peer, xff), &trusted).map(|i| i.to_string());
        assert_eq!(
            ip_of("203.0.113.9", Some("1.2.3.4")),
            Some("203.0.113.9".into()),
            "untrusted peer"
        );
        assert_eq!(ip_of("10.0.0.2", Some("1.2.3.4")), Some("1.2.3.4".into()));
        assert_eq!(
            ip_of("10.0.0.2", Some("6.6.6.6, 1.2.3.4, 10.0.0.7")),
            Some("1.2.3.4".into()),
            "spoofed left part ignored"
        );
        assert_eq!(ip_of("10.0.0.2", None), Some("10.0.0.2".into()));
        assert_eq!(ip_of("10.0.0.2", Some("garbage")), Some("10.0.0.2".into()));
        assert_eq!(
            ip_of("10.0.0.2", Some("1.2.3.4, garbage")),
            Some("10.0.0.2".into())
        );
    }
}
