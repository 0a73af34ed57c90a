//! Delivering one message to one subscription, and telling the caller what happened.
//!
//! The message is built by the `web-push` crate (`WebPushMessageBuilder`: aes128gcm encryption of
//! RFC 8291, the `TTL`, `Urgency` and `Topic` headers, and the `Authorization` header from a VAPID
//! signature cached per push service, see `jwt`). Its request is copied onto one shared `reqwest`
//! client instead of the crate's own clients: connection reuse to the few big push services
//! matters more than anything else for fan-out, and the endpoint policy, the time-outs and the
//! classification of answers are this crate's.
//!
//! Callers never see status codes: every answer and every transport failure becomes an
//! [`Outcome`] that says what to do next.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::header::{AUTHORIZATION, CONTENT_LENGTH, HeaderMap, HeaderName, HeaderValue};
use sha2::{Digest, Sha256};
use web_push::{
    ContentEncoding, SubscriptionInfo, VapidSignature, WebPushMessage, WebPushMessageBuilder,
};

use crate::endpoint::{EndpointPolicy, NonPublicHost, PublicOnlyResolver};
use crate::jwt::VapidSigner;
use crate::subscription::{Subscription, check_keys, unpadded};
use crate::vapid::VapidConfig;

/// Largest plaintext that `send` accepts.
///
/// With the 4096-byte record size and the 128-byte padding blocks used for aes128gcm, up to 3967
/// bytes would fit one record, but the `web-push` crate refuses anything over 3052 bytes (a margin
/// for push services that cap bodies below 4096, as the other Web Push libraries keep), so that
/// is the real limit.
pub const MAX_PAYLOAD: usize = 3052;

/// How long one request may take, connecting included.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Wait suggested after a 429 without a usable `Retry-After`.
pub const DEFAULT_RATE_LIMIT_BACKOFF: Duration = Duration::from_secs(60);
/// Wait suggested after a 5xx, a time-out or a connection failure without `Retry-After`: none of
/// its own, so that the caller's backoff (which knows how often it already tried) decides.
pub const DEFAULT_BACKOFF: Duration = Duration::ZERO;
/// A `Retry-After` longer than this is taken as this: a push service asking for days is broken.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(24 * 3600);
/// Bytes of an error answer kept for the failure reason.
const MAX_REASON_BODY: usize = 512;

/// What became of one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The push service accepted it (2xx).
    Delivered,
    /// The subscription no longer exists (404, 410): delete the device.
    Gone,
    /// Try again after this long: rate limited (429), push service trouble (5xx), time-out or
    /// connection failure.
    RetryAfter(Duration),
    /// Sending this message this way will not work: refused before sending (`status: None`:
    /// payload too large, bad endpoint or keys) or rejected by the push service (400, 401, 403,
    /// 413, other 4xx).
    Failed { status: Option<u16>, reason: String },
}

/// Whether a push service answered a message, whatever the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reached {
    /// An HTTP answer came back.
    Answered,
    /// Time-out, connection refused or reset, TLS failure: nothing came back.
    NoAnswer,
    /// Refused before any request (payload, endpoint, keys, a host with no public address).
    NotSent,
}

/// How soon the push service should deliver (RFC 8030 `Urgency`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Urgency {
    VeryLow,
    Low,
    Normal,
    High,
}

impl Urgency {
    /// The header value (RFC 8030 section 5.3).
    pub fn as_str(self) -> &'static str {
        match self {
            Urgency::VeryLow => "very-low",
            Urgency::Low => "low",
            Urgency::Normal => "normal",
            Urgency::High => "high",
        }
    }
}

impl From<Urgency> for web_push::Urgency {
    fn from(u: Urgency) -> Self {
        match u {
            Urgency::VeryLow => web_push::Urgency::VeryLow,
            Urgency::Low => web_push::Urgency::Low,
            Urgency::Normal => web_push::Urgency::Normal,
            Urgency::High => web_push::Urgency::High,
        }
    }
}

/// How one message is to be sent: RFC 8030's `TTL`, `Urgency` and `Topic` headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// How long the push service keeps the message for an offline device.
    pub ttl: Duration,
    pub urgency: Option<Urgency>,
    /// A message stored by the push service for an offline device is replaced by a newer one with
    /// the same topic, so a message sent twice (a sender that died before recording the first
    /// delivery) reaches the device once.
    pub topic: Option<Topic>,
}

impl Options {
    /// Only a time to live.
    pub fn ttl(ttl: Duration) -> Self {
        Self {
            ttl,
            urgency: None,
            topic: None,
        }
    }
}

/// A `Topic` header value: at most 32 base64url characters (RFC 8030 section 5.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topic(String);

impl Topic {
    /// The topic of the message identified by `key` (any text: a job, its slot and the kind of
    /// message): the first 24 bytes of its SHA-256, base64url, 32 characters. The same key always
    /// gives the same topic, different keys practically never do, and nothing of the key can be
    /// read from it.
    pub fn derive(key: &str) -> Self {
        let digest = Sha256::digest(key.as_bytes());
        Self(URL_SAFE_NO_PAD.encode(&digest[..24]))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Topic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a [`Sender`] could not be built.
#[derive(Debug, thiserror::Error)]
pub enum SendSetupError {
    #[error("the VAPID private key is not a base64url P-256 private key")]
    PrivateKey,
    #[error("the VAPID public key does not belong to the private key")]
    KeyMismatch,
    #[error("the HTTP client could not be built: {0}")]
    Client(#[source] reqwest::Error),
}

/// Sends Web Push messages. Cheap to clone; clones share the HTTP connections and the VAPID
/// tokens.
#[derive(Clone)]
pub struct Sender {
    inner: Arc<Inner>,
}

struct Inner {
    client: reqwest::Client,
    vapid: VapidSigner,
    policy: EndpointPolicy,
    timeout: Duration,
}

/// How a [`Sender`] is built; [`Sender::with_options`].
#[derive(Debug, Clone)]
pub struct SenderOptions {
    /// The endpoints it sends to; others are refused before any request.
    pub policy: EndpointPolicy,
    /// How long one request may take, connecting included.
    pub timeout: Duration,
    /// Host names resolved to these addresses instead of asking DNS (the port of the endpoint is
    /// kept). Only with a policy that allows `http` (tests and benchmarks): a fixed address would
    /// bypass the public-address check of the resolver.
    pub resolve: Vec<(String, std::net::SocketAddr)>,
}

impl Default for SenderOptions {
    fn default() -> Self {
        Self {
            policy: EndpointPolicy::any_public_host(),
            timeout: DEFAULT_TIMEOUT,
            resolve: Vec::new(),
        }
    }
}

impl std::fmt::Debug for Sender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sender")
            .field("vapid_public_key", &self.inner.vapid.public_key())
            .field("policy", &self.inner.policy)
            .finish_non_exhaustive()
    }
}

impl Sender {
    /// A sender with the default request time-out ([`DEFAULT_TIMEOUT`]).
    ///
    /// `allow_http_endpoints` (tests only) accepts `http://` endpoints and private addresses.
    pub fn new(vapid: VapidConfig, allow_http_endpoints: bool) -> Result<Self, SendSetupError> {
        Self::with_timeout(vapid, allow_http_endpoints, DEFAULT_TIMEOUT)
    }

    /// A sender whose requests give up after `timeout`; any public `https` host, or with
    /// `allow_http_endpoints` any host at all.
    pub fn with_timeout(
        vapid: VapidConfig,
        allow_http_endpoints: bool,
        timeout: Duration,
    ) -> Result<Self, SendSetupError> {
        let policy = if allow_http_endpoints {
            EndpointPolicy::allow_http()
        } else {
            EndpointPolicy::any_public_host()
        };
        Self::with_options(
            vapid,
            SenderOptions {
                policy,
                timeout,
                resolve: Vec::new(),
            },
        )
    }

    /// A sender for endpoints of `options.policy`.
    pub fn with_options(
        vapid: VapidConfig,
        options: SenderOptions,
    ) -> Result<Self, SendSetupError> {
        let SenderOptions {
            policy,
            timeout,
            resolve,
        } = options;
        let signer = VapidSigner::new(vapid.private_key.expose(), vapid.subject)
            .ok_or(SendSetupError::PrivateKey)?;
        if signer.public_key() != unpadded(&vapid.public_key) {
            return Err(SendSetupError::KeyMismatch);
        }
        let mut builder = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .redirect(reqwest::redirect::Policy::none())
            // A proxy would resolve the host itself, around the resolver below.
            .no_proxy()
            .pool_idle_timeout(Duration::from_secs(90))
            .user_agent(concat!("push/", env!("CARGO_PKG_VERSION")));
        if policy.allows_http() {
            for (host, addr) in &resolve {
                builder = builder.resolve(host, *addr);
            }
        } else {
            builder = builder.dns_resolver(PublicOnlyResolver).https_only(true);
        }
        let client = builder.build().map_err(SendSetupError::Client)?;
        Ok(Self {
            inner: Arc::new(Inner {
                client,
                vapid: signer,
                policy,
                timeout,
            }),
        })
    }

    /// Encrypts `payload` for `sub` and posts it with the given time to live.
    pub async fn send(&self, sub: &Subscription, payload: &[u8], ttl: Duration) -> Outcome {
        self.send_with(sub, payload, &Options::ttl(ttl)).await
    }

    /// [`Sender::send`] with an `Urgency` header.
    pub async fn send_with_urgency(
        &self,
        sub: &Subscription,
        payload: &[u8],
        ttl: Duration,
        urgency: Option<Urgency>,
    ) -> Outcome {
        let options = Options {
            urgency,
            ..Options::ttl(ttl)
        };
        self.send_with(sub, payload, &options).await
    }

    /// [`Sender::send`] with every header this sender can set.
    pub async fn send_with(
        &self,
        sub: &Subscription,
        payload: &[u8],
        options: &Options,
    ) -> Outcome {
        self.try_send(sub, payload, options).await.0
    }

    /// [`Sender::send_with`], also telling whether the push service answered at all: a caller
    /// that sees a host time out again and again can stop sending to it for a while.
    pub async fn try_send(
        &self,
        sub: &Subscription,
        payload: &[u8],
        options: &Options,
    ) -> (Outcome, Reached) {
        let request = match self.build(sub, payload, options) {
            Ok(request) => request,
            Err(reason) => {
                return (
                    Outcome::Failed {
                        status: None,
                        reason,
                    },
                    Reached::NotSent,
                );
            }
        };
        let (outcome, reached) = match self.inner.client.execute(request).await {
            Ok(response) => (classify(response).await, Reached::Answered),
            Err(err) => transport_failure(&err),
        };
        tracing::debug!(outcome = ?outcome, "push message sent");
        (outcome, reached)
    }

    /// The endpoints this sender accepts.
    pub fn policy(&self) -> &EndpointPolicy {
        &self.inner.policy
    }

    /// How long one request may take.
    pub fn timeout(&self) -> Duration {
        self.inner.timeout
    }

    /// How many VAPID tokens this sender has signed (one per push service and token lifetime).
    pub fn jwt_signings(&self) -> u64 {
        self.inner.vapid.signings()
    }

    /// The VAPID public key, base64url, as subscriptions must name it (`applicationServerKey`).
    pub fn vapid_public_key(&self) -> &str {
        self.inner.vapid.public_key()
    }

    fn build(
        &self,
        sub: &Subscription,
        payload: &[u8],
        options: &Options,
    ) -> Result<reqwest::Request, String> {
        if payload.is_empty() {
            // VAPID and the encryption both need a body; an empty push says nothing anyway.
            return Err("empty payload".to_owned());
        }
        if payload.len() > MAX_PAYLOAD {
            return Err(format!(
                "payload of {} bytes exceeds the limit of {MAX_PAYLOAD} bytes",
                payload.len()
            ));
        }
        let url = self
            .inner
            .policy
            .check(&sub.endpoint)
            .map_err(|e| e.to_string())?;
        // The crate would refuse a bad key too, but without saying which or why.
        check_keys(&sub.p256dh, &sub.auth).map_err(|e| e.to_string())?;
        let signature = self
            .inner
            .vapid
            .signature(&url.origin().ascii_serialization())
            .map_err(|e| format!("VAPID token could not be signed: {e}"))?;
        let message = message(url.as_str(), sub, payload, options, signature)?;
        let built = web_push::request_builder::build_request::<Vec<u8>>(message);

        let mut headers = HeaderMap::with_capacity(built.headers().len());
        for (name, value) in built.headers() {
            let name = HeaderName::from_bytes(name.as_str().as_bytes())
                .map_err(|_| "unexpected request header".to_owned())?;
            // reqwest sets the length from the body itself.
            if name == CONTENT_LENGTH {
                continue;
            }
            let mut value = HeaderValue::from_bytes(value.as_bytes())
                .map_err(|_| "unexpected request header".to_owned())?;
            if name == AUTHORIZATION {
                value.set_sensitive(true);
            }
            headers.append(name, value);
        }
        // The URL the endpoint policy checked is the one posted to, not the crate's parse of it.
        let mut request = reqwest::Request::new(reqwest::Method::POST, url);
        *request.headers_mut() = headers;
        *request.body_mut() = Some(built.into_body().into());
        Ok(request)
    }
}

/// The `web-push` crate's message for `endpoint`: the payload encrypted (aes128gcm) for the
/// subscriber's keys, the RFC 8030 headers of `options` and the `Authorization` header of
/// `signature`.
fn message(
    endpoint: &str,
    sub: &Subscription,
    payload: &[u8],
    options: &Options,
    signature: VapidSignature,
) -> Result<WebPushMessage, String> {
    let info = SubscriptionInfo::new(endpoint, unpadded(&sub.p256dh), unpadded(&sub.auth));
    let mut message = WebPushMessageBuilder::new(&info);
    message.set_payload(ContentEncoding::Aes128Gcm, payload);
    message.set_ttl(u32::try_from(options.ttl.as_secs()).unwrap_or(u32::MAX));
    if let Some(urgency) = options.urgency {
        message.set_urgency(urgency.into());
    }
    if let Some(topic) = &options.topic {
        message.set_topic(topic.as_str().to_owned());
    }
    message.set_vapid_signature(signature);
    message
        .build()
        .map_err(|e| format!("message could not be built: {e}"))
}

async fn classify(mut response: reqwest::Response) -> Outcome {
    let status = response.status();
    if status.is_success() {
        drain(&mut response).await;
        return Outcome::Delivered;
    }
    let retry_after = retry_after(response.headers(), SystemTime::now());
    let code = status.as_u16();
    match code {
        404 | 410 => {
            drain(&mut response).await;
            Outcome::Gone
        }
        429 => {
            drain(&mut response).await;
            Outcome::RetryAfter(retry_after.unwrap_or(DEFAULT_RATE_LIMIT_BACKOFF))
        }
        500..=599 => {
            drain(&mut response).await;
            Outcome::RetryAfter(retry_after.unwrap_or(DEFAULT_BACKOFF))
        }
        _ => {
            let body = drain(&mut response).await;
            let mut reason = format!("push service answered {status}");
            let text = String::from_utf8_lossy(&body);
            let text = text.trim();
            if !text.is_empty() {
                reason.push_str(": ");
                reason.extend(text.chars().filter(|c| !c.is_control()));
            }
            Outcome::Failed {
                status: Some(code),
                reason,
            }
        }
    }
}

/// Reads (a bounded part of) the answer body, so that the connection can be reused.
async fn drain(response: &mut reqwest::Response) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut seen = 0usize;
    while let Ok(Some(chunk)) = response.chunk().await {
        seen += chunk.len();
        let room = MAX_REASON_BODY.saturating_sub(kept.len());
        kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
        // A push service's answers are short; past this it is not worth reading on.
        if seen > 64 * 1024 {
            break;
        }
    }
    kept
}

fn transport_failure(err: &reqwest::Error) -> (Outcome, Reached) {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = source {
        if e.downcast_ref::<NonPublicHost>().is_some() {
            return (
                Outcome::Failed {
                    status: None,
                    reason: NonPublicHost.to_string(),
                },
                Reached::NotSent,
            );
        }
        source = e.source();
    }
    // Time-outs, refused or reset connections and TLS failures: the push service may be back
    // shortly, and the message is still worth sending then.
    (Outcome::RetryAfter(DEFAULT_BACKOFF), Reached::NoAnswer)
}

/// `Retry-After` as delta-seconds or an HTTP-date (RFC 9110 section 10.2.3).
fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let value = headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    let wait = match value.parse::<u64>() {
        Ok(seconds) => Duration::from_secs(seconds),
        Err(_) => {
            let when = httpdate::parse_http_date(value).ok()?;
            when.duration_since(now).unwrap_or(Duration::ZERO)
        }
    };
    Some(wait.min(MAX_RETRY_AFTER))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_retry_after(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            reqwest::header::RETRY_AFTER,
            HeaderValue::from_str(value).expect("value"),
        );
        headers
    }

    /// A subscriber's key pair and its subscription, as a browser would hand it over.
    fn subscriber() -> (p256::SecretKey, Subscription) {
        use p256::elliptic_curve::sec1::ToEncodedPoint;
        let secret = p256::SecretKey::random(&mut rand_core::OsRng);
        let public = secret.public_key().to_encoded_point(false);
        let sub = Subscription {
            endpoint: "https://push.example.net/s/1".to_owned(),
            p256dh: URL_SAFE_NO_PAD.encode(public.as_bytes()),
            auth: URL_SAFE_NO_PAD.encode([42u8; 16]),
        };
        (secret, sub)
    }

    fn signature() -> VapidSignature {
        VapidSignature {
            auth_t: "t".to_owned(),
            auth_k: vec![4; 65],
        }
    }

    fn body(sub: &Subscription, plaintext: &[u8]) -> Result<Vec<u8>, String> {
        let message = message(
            &sub.endpoint,
            sub,
            plaintext,
            &Options::ttl(Duration::from_secs(60)),
            signature(),
        )?;
        Ok(message.payload.expect("a payload").content)
    }

    /// Decrypted by an independent implementation (the test kit's, on RustCrypto). RFC 8291's
    /// worked example cannot be replayed: it fixes the sender's private key and salt, which are
    /// drawn at random and which the crate never lets a caller choose.
    #[test]
    fn an_independent_implementation_decrypts_every_size() {
        let (ua_secret, sub) = subscriber();
        let auth = [42u8; 16];
        for len in [1, 127, 128, 1000, MAX_PAYLOAD] {
            let plaintext: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let encrypted = body(&sub, &plaintext).expect("encrypts");
            let decrypted = testkit::push_service::decrypt_aes128gcm(&ua_secret, &auth, &encrypted)
                .expect("decrypts");
            assert_eq!(decrypted, plaintext, "{len} bytes");
        }
        let hello = body(&sub, b"hello").expect("encrypts");
        assert!(
            testkit::push_service::decrypt_aes128gcm(&ua_secret, &[0u8; 16], &hello).is_err(),
            "another authentication secret must not decrypt"
        );
        // `ece` refuses to encrypt nothing; `Sender` refuses an empty payload before that.
        assert!(body(&sub, b"").is_err());
    }

    #[test]
    fn one_padded_record_behind_the_header() {
        const HEADER_LEN: usize = 16 + 4 + 1 + 65;
        const TAG_LEN: usize = 16;
        let (_, sub) = subscriber();
        for (len, padded) in [(1, 128), (127, 128), (128, 256), (3052, 3072)] {
            let body = body(&sub, &vec![b'x'; len]).expect("encrypts");
            assert_eq!(body.len(), HEADER_LEN + padded + TAG_LEN, "{len}");
            assert_eq!(&body[16..20], &4096u32.to_be_bytes());
            assert_eq!(body[20], 65);
            assert_eq!(body[21], 4, "the key id is an uncompressed point");
        }
    }

    #[test]
    fn bad_keys_and_sizes_are_refused() {
        let (_, sub) = subscriber();
        let mut point = URL_SAFE_NO_PAD.decode(&sub.p256dh).expect("b64");
        point[64] ^= 1;
        let off_curve = Subscription {
            p256dh: URL_SAFE_NO_PAD.encode(&point),
            ..sub.clone()
        };
        assert!(body(&off_curve, b"hi").is_err());
        let short_auth = Subscription {
            auth: URL_SAFE_NO_PAD.encode([7u8; 15]),
            ..sub.clone()
        };
        assert!(body(&short_auth, b"hi").is_err());
        assert!(body(&sub, &vec![0; MAX_PAYLOAD + 1]).is_err());
    }

    #[test]
    fn the_message_carries_the_rfc_8030_headers_and_the_vapid_header() {
        let (_, sub) = subscriber();
        let options = Options {
            ttl: Duration::from_secs(3600),
            urgency: Some(Urgency::High),
            topic: Some(Topic::derive("job|slot|kind")),
        };
        let message = message(&sub.endpoint, &sub, b"hi", &options, signature()).expect("builds");
        let request = web_push::request_builder::build_request::<Vec<u8>>(message);
        let header = |name: &str| request.headers()[name].to_str().expect("ascii").to_owned();
        assert_eq!(header("ttl"), "3600");
        assert_eq!(header("urgency"), "high");
        assert_eq!(header("topic"), options.topic.expect("topic").as_str());
        assert_eq!(header("content-encoding"), "aes128gcm");
        assert_eq!(
            header("authorization"),
            format!("vapid t=t, k={}", URL_SAFE_NO_PAD.encode([4u8; 65]))
        );
    }

    #[test]
    fn topics_are_32_base64url_characters_and_stable() {
        let a = Topic::derive("meal-lunch|2026-11-23T13:00:00|meal_lunch");
        assert_eq!(a.as_str().len(), 32);
        assert!(
            a.as_str()
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        );
        assert_eq!(
            a,
            Topic::derive("meal-lunch|2026-11-23T13:00:00|meal_lunch")
        );
        assert_ne!(
            a,
            Topic::derive("meal-lunch|2026-11-24T13:00:00|meal_lunch")
        );
    }

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        assert_eq!(
            retry_after(&with_retry_after("120"), now),
            Some(Duration::from_secs(120))
        );
        let later = httpdate::fmt_http_date(now + Duration::from_secs(90));
        assert_eq!(
            retry_after(&with_retry_after(&later), now),
            Some(Duration::from_secs(90))
        );
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(90));
        assert_eq!(
            retry_after(&with_retry_after(&earlier), now),
            Some(Duration::ZERO)
        );
        assert_eq!(
            retry_after(&with_retry_after("999999999"), now),
            Some(MAX_RETRY_AFTER)
        );
        assert_eq!(retry_after(&with_retry_after("soon"), now), None);
        assert_eq!(retry_after(&HeaderMap::new(), now), None);
    }
}
