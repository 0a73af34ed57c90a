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
//! On top of that, [`EndpointPolicy`] accepts only the hosts of the known push services unless
//! `PUSH_ENDPOINT_HOSTS` says otherwise: a public host that accepts connections and never answers
//! costs a send's whole time-out per message.
//!
//! `allow_http` (the `PUSH_ALLOW_HTTP_ENDPOINTS` flag) lifts all of this for tests, whose fake push
//! service listens on `http://127.0.0.1`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use service_kit::{ConfigError, Env};
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
    #[error("endpoint must be on the host of a known Web Push service")]
    UnknownPushService,
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

/// The variable naming the hosts push endpoints may be on.
pub const PUSH_ENDPOINT_HOSTS: &str = "PUSH_ENDPOINT_HOSTS";

/// The hosts of the Web Push services browsers subscribe with: FCM (Chrome, Edge on Android and
/// most Chromium browsers), Mozilla autopush (Firefox), Apple (Safari) and WNS (Edge on Windows).
/// A name matches itself and its subdomains; `*.` matches subdomains only.
pub const KNOWN_PUSH_HOSTS: [&str; 6] = [
    "fcm.googleapis.com",
    "updates.push.services.mozilla.com",
    "push.services.mozilla.com",
    "web.push.apple.com",
    "*.push.apple.com",
    "*.notify.windows.com",
];

/// Which push endpoints a service accepts: the checks of [`check_endpoint`] and, unless any
/// public host is allowed, a list of host suffixes.
///
/// Anyone can register a device, so without a list any public host can be made a push endpoint,
/// among them servers that accept connections and never answer: every message to them holds a
/// send until the time-out. The real push services are a handful of hosts, so by default only
/// they are accepted. Registration and delivery use the same policy: a device registered under a
/// wider one is refused when a message is due for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointPolicy {
    allow_http: bool,
    /// `None`: any public host.
    hosts: Option<Vec<HostSuffix>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct HostSuffix {
    /// Lower case, without a trailing dot.
    name: String,
    subdomains_only: bool,
}

impl HostSuffix {
    fn parse(raw: &str) -> Result<Self, String> {
        let raw = raw.trim().trim_end_matches('.').to_ascii_lowercase();
        let (name, subdomains_only) = match raw.strip_prefix("*.") {
            Some(rest) => (rest.to_owned(), true),
            None => (raw, false),
        };
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        };
        // A single label (`com`) would open a whole top-level domain.
        if !name.contains('.') || !name.split('.').all(label_ok) {
            return Err(format!(
                "{name:?} is not a host name with a dot (entries are host suffixes such as fcm.googleapis.com or *.notify.windows.com, or * alone)"
            ));
        }
        Ok(Self {
            name,
            subdomains_only,
        })
    }

    fn matches(&self, host: &str) -> bool {
        match host.strip_suffix(self.name.as_str()) {
            Some("") => !self.subdomains_only,
            Some(rest) => rest.ends_with('.'),
            None => false,
        }
    }
}

impl Default for EndpointPolicy {
    fn default() -> Self {
        Self::known_push_services()
    }
}

impl EndpointPolicy {
    /// `https` endpoints on [`KNOWN_PUSH_HOSTS`] only.
    pub fn known_push_services() -> Self {
        let hosts = KNOWN_PUSH_HOSTS
            .iter()
            .map(|entry| match entry.strip_prefix("*.") {
                Some(name) => HostSuffix {
                    name: (*name).to_owned(),
                    subdomains_only: true,
                },
                None => HostSuffix {
                    name: (*entry).to_owned(),
                    subdomains_only: false,
                },
            })
            .collect();
        Self {
            allow_http: false,
            hosts: Some(hosts),
        }
    }

    /// `https` endpoints on any public host (the rules of [`check_endpoint`]).
    pub fn any_public_host() -> Self {
        Self {
            allow_http: false,
            hosts: None,
        }
    }

    /// Tests only: `http` too, and any host, loopback included.
    pub fn allow_http() -> Self {
        Self {
            allow_http: true,
            hosts: None,
        }
    }

    /// `https` endpoints whose host matches one of `list` (comma-separated host suffixes: a name
    /// matches itself and its subdomains, `*.name` only its subdomains), or any public host for
    /// `*`.
    pub fn hosts(list: &str) -> Result<Self, String> {
        let entries: Vec<&str> = list
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .collect();
        if entries.is_empty() {
            return Err("must name at least one host suffix, or * for any public host".into());
        }
        if entries.contains(&"*") {
            if entries.len() > 1 {
                return Err("* (any public host) cannot be combined with host suffixes".into());
            }
            return Ok(Self::any_public_host());
        }
        let hosts = entries
            .into_iter()
            .map(HostSuffix::parse)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            allow_http: false,
            hosts: Some(hosts),
        })
    }

    /// `PUSH_ALLOW_HTTP_ENDPOINTS` (tests: any host, `http` too) and `PUSH_ENDPOINT_HOSTS` (default
    /// [`KNOWN_PUSH_HOSTS`]).
    pub fn from_env(env: &Env) -> Result<Self, ConfigError> {
        let hosts = match env.get(PUSH_ENDPOINT_HOSTS)? {
            None => Self::known_push_services(),
            Some(list) => {
                Self::hosts(list).map_err(|rule| ConfigError::new(PUSH_ENDPOINT_HOSTS, rule))?
            }
        };
        if crate::vapid::allow_http_endpoints(env)? {
            return Ok(Self::allow_http());
        }
        Ok(hosts)
    }

    /// Whether `http` and local endpoints are accepted (tests).
    pub fn allows_http(&self) -> bool {
        self.allow_http
    }

    /// Checks an endpoint against [`check_endpoint`] and the host list; returns it parsed.
    pub fn check(&self, endpoint: &str) -> Result<Url, EndpointError> {
        let url = check_endpoint(endpoint, self.allow_http)?;
        let Some(hosts) = &self.hosts else {
            return Ok(url);
        };
        let host = match url.host() {
            Some(Host::Domain(name)) => name.trim_end_matches('.').to_ascii_lowercase(),
            _ => return Err(EndpointError::UnknownPushService),
        };
        if hosts.iter().any(|suffix| suffix.matches(&host)) {
            Ok(url)
        } else {
            Err(EndpointError::UnknownPushService)
        }
    }
}

/// The party that controls an endpoint's host: its registrable domain (the public suffix and one
/// label more, e.g. `example.com` for `t1.push.example.com`, `a.github.io` for itself), or the
/// address of an IP literal. Every subdomain of one registrable domain can be pointed at the same
/// server by whoever holds it, so a host that misbehaves is judged by this, not by its name. A
/// name under a suffix the list does not know counts its last label as the suffix.
pub fn registrable_domain(endpoint: &Url) -> Option<String> {
    match endpoint.host()? {
        Host::Ipv4(ip) => Some(ip.to_string()),
        Host::Ipv6(ip) => Some(ip.to_string()),
        Host::Domain(name) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            Some(psl::domain_str(&name).unwrap_or(&name).to_owned())
        }
    }
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
    fn registrable_domains_group_subdomains() {
        let of = |u: &str| registrable_domain(&Url::parse(u).expect("url"));
        // googleapis.com is on the list's private part: each of its subdomains is a party.
        assert_eq!(
            of("https://fcm.googleapis.com/x").as_deref(),
            Some("fcm.googleapis.com")
        );
        assert_eq!(
            of("https://t1.tarpit.example.co.uk/x").as_deref(),
            Some("example.co.uk")
        );
        assert_eq!(
            of("https://T2.Tarpit.Example.co.uk./x").as_deref(),
            Some("example.co.uk")
        );
        assert_eq!(of("https://a.github.io/x").as_deref(), Some("a.github.io"));
        assert_eq!(
            of("http://t7.tarpit.localhost:8080/x").as_deref(),
            Some("tarpit.localhost")
        );
        assert_eq!(of("http://127.0.0.1:9/x").as_deref(), Some("127.0.0.1"));
        assert_eq!(of("http://[::1]:9/x").as_deref(), Some("::1"));
        assert_eq!(of("http://localhost/x").as_deref(), Some("localhost"));
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
