//! Which push endpoints may be called at all.
//!
//! The endpoint is a URL chosen by whoever registers a device, and the server then POSTs to it:
//! without these rules any user could make the service call its own database, a cloud metadata
//! address or anything else on the private network (server-side request forgery). Real push
//! services (FCM, Mozilla autopush, Apple, Windows) are public HTTPS hosts, so everything else is
//! refused. The rules apply twice: to the URL when a device registers and before every send, and
//! to every address a host name resolves to at connection time ([`PublicOnlyResolver`]), because
//! a public-looking name can point at a private address, or be changed to later.
//!
//! `allow_http` (the `PUSH_ALLOW_HTTP_ENDPOINTS` flag) lifts all of this for tests, whose fake push
//! service listens on `http://127.0.0.1`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use url::{Host, Url};

/// Longest endpoint accepted; real ones are a few hundred characters.
pub const MAX_ENDPOINT_LEN: usize = 2048;

/// Why an endpoint was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    #[error("endpoint must be at most {MAX_ENDPOINT_LEN} characters")]
    TooLong,
    #[error("endpoint must be an absolute URL")]
    NotAUrl,
    #[error("endpoint must be an https:// URL")]
    NotHttps,
    #[error("endpoint must be an http:// or https:// URL")]
    NotHttp,
    #[error("endpoint must not contain a user name or password")]
    Userinfo,
    #[error("endpoint must name a host")]
    NoHost,
    #[error(
        "endpoint must not point to a private, loopback, link-local or otherwise non-public address"
    )]
    NonPublicAddress,
    #[error("endpoint must name a public host, not a local or internal one")]
    LocalName,
}

/// Checks an endpoint and returns it parsed.
///
/// Without `allow_http`: `https` only; no user info; at most [`MAX_ENDPOINT_LEN`] characters; an IP
/// literal must be public ([`is_public_ip`]); a host name must have a dot and must not be
/// `localhost` or end in `.localhost`, `.local`, `.internal`, `.localdomain`, `.lan` or
/// `.home.arpa`. With `allow_http`, `http` is accepted too and any host is.
pub fn check_endpoint(endpoint: &str, allow_http: bool) -> Result<Url, EndpointError> {
    if endpoint.len() > MAX_ENDPOINT_LEN {
        return Err(EndpointError::TooLong);
    }
    let url = Url::parse(endpoint).map_err(|_| EndpointError::NotAUrl)?;
    match (url.scheme(), allow_http) {
        ("https", _) | ("http", true) => {}
        (_, false) => return Err(EndpointError::NotHttps),
        (_, true) => return Err(EndpointError::NotHttp),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(EndpointError::Userinfo);
    }
    let host = url.host().ok_or(EndpointError::NoHost)?;
    if allow_http {
        return Ok(url);
    }
    match host {
        Host::Ipv4(ip) => {
            if !is_public_ip(IpAddr::V4(ip)) {
                return Err(EndpointError::NonPublicAddress);
            }
        }
        Host::Ipv6(ip) => {
            if !is_public_ip(IpAddr::V6(ip)) {
                return Err(EndpointError::NonPublicAddress);
            }
        }
        Host::Domain(name) => {
            if is_local_name(name) {
                return Err(EndpointError::LocalName);
            }
        }
    }
    Ok(url)
}

/// Names that only mean something inside a network. A name without a dot is resolved through the
/// local search domains (`db`, `redis`, a container's neighbours), so it is local too.
fn is_local_name(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    if name.is_empty() || !name.contains('.') {
        return true;
    }
    const LOCAL_SUFFIXES: [&str; 6] = [
        "localhost",
        "local",
        "internal",
        "localdomain",
        "lan",
        "home.arpa",
    ];
    LOCAL_SUFFIXES.iter().any(|suffix| {
        name == *suffix
            || name
                .strip_suffix(suffix)
                .is_some_and(|rest| rest.ends_with('.'))
    })
}

/// Whether an address is globally reachable unicast, judged from the IANA special-purpose
/// registries: private, shared (CGNAT), loopback, link-local, unspecified, multicast, broadcast,
/// documentation, benchmarking and reserved ranges are not. IPv6 addresses that embed an IPv4
/// address (mapped, NAT64, 6to4) are judged by that address.
pub fn is_public_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    match ip.octets() {
        [0, ..] => false,             // "this network"
        [10, ..] => false,            // private
        [100, 64..=127, ..] => false, // shared address space (CGNAT)
        [127, ..] => false,           // loopback
        [169, 254, ..] => false,      // link-local, cloud metadata
        [172, 16..=31, ..] => false,  // private
        [192, 0, 0, _] => false,      // IETF protocol assignments
        [192, 0, 2, _] => false,      // documentation
        [192, 88, 99, _] => false,    // 6to4 relay anycast
        [192, 168, ..] => false,      // private
        [198, 18..=19, ..] => false,  // benchmarking
        [198, 51, 100, _] => false,   // documentation
        [203, 0, 113, _] => false,    // documentation
        [224..=255, ..] => false,     // multicast, reserved, broadcast
        _ => true,
    }
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    match ip.segments() {
        // Mapped (::ffff:a.b.c.d) and NAT64 (64:ff9b::a.b.c.d) addresses carry an IPv4 address
        // in their last 32 bits, 6to4 (2002:a.b.c.d::/48) in the 32 after the prefix; a
        // connection to them reaches that IPv4 address.
        [0, 0, 0, 0, 0, 0xffff, high, low] | [0x64, 0xff9b, 0, 0, 0, 0, high, low] => {
            is_public_v4(embedded_v4(high, low))
        }
        [0x2002, high, low, ..] => is_public_v4(embedded_v4(high, low)),
        // Only global unicast (2000::/3) is public at all; that excludes ::, ::1, the deprecated
        // IPv4-compatible ::/96, discard-only 100::/64, unique local fc00::/7, link-local
        // fe80::/10, site-local fec0::/10 and multicast ff00::/8.
        [first, ..] if first & 0xe000 != 0x2000 => false,
        [0x2001, 0..=0x01ff, ..] => false, // IETF protocol assignments, Teredo
        [0x2001, 0x0db8, ..] => false,     // documentation
        [0x3fff, 0..=0x0fff, ..] => false, // documentation (RFC 9637)
        _ => true,
    }
}

fn embedded_v4(high: u16, low: u16) -> Ipv4Addr {
    let [a, b] = high.to_be_bytes();
    let [c, d] = low.to_be_bytes();
    Ipv4Addr::new(a, b, c, d)
}

/// A host name that resolved to no public address.
#[derive(Debug, thiserror::Error)]
#[error("push endpoint host resolves to no public address")]
pub(crate) struct NonPublicHost;

/// The DNS resolver of the push client: the system resolver, keeping only public addresses.
///
/// Dropping the non-public answers rather than failing on the first one keeps a name that
/// resolves to both (DNS rebinding) from ever reaching the private one.
#[derive(Debug, Clone, Copy, Default)]
pub struct PublicOnlyResolver;

impl Resolve for PublicOnlyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let resolved: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .filter(|addr| is_public_ip(addr.ip()))
                .collect();
            if resolved.is_empty() {
                return Err(Box::new(NonPublicHost) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(resolved.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    #[tokio::test]
    async fn resolver_refuses_names_of_loopback_addresses() {
        let name = Name::from_str("localhost").expect("name");
        let err = match PublicOnlyResolver.resolve(name).await {
            Ok(addrs) => panic!("resolved to {:?}", addrs.collect::<Vec<_>>()),
            Err(err) => err,
        };
        assert!(err.downcast_ref::<NonPublicHost>().is_some(), "{err}");
    }

    #[test]
    fn embedded_ipv4_is_judged_by_itself() {
        let mapped: Ipv6Addr = "::ffff:10.0.0.1".parse().expect("ip");
        assert!(!is_public_v6(mapped));
        let mapped: Ipv6Addr = "::ffff:8.8.8.8".parse().expect("ip");
        assert!(is_public_v6(mapped));
        let nat64: Ipv6Addr = "64:ff9b::7f00:1".parse().expect("ip");
        assert!(!is_public_v6(nat64));
        let six_to_four: Ipv6Addr = "2002:c0a8:0101::1".parse().expect("ip");
        assert!(!is_public_v6(six_to_four));
        let six_to_four: Ipv6Addr = "2002:0808:0808::1".parse().expect("ip");
        assert!(is_public_v6(six_to_four));
    }
}
