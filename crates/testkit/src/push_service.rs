//! A fake Web Push service on `http://127.0.0.1:<free port>`, strict enough that a sender which
//! gets VAPID or the encryption wrong fails its tests.
//!
//! Every request to `/push/<id>` is checked the way a real push service checks it, in this order:
//! the subscription exists (404); the `Authorization: vapid t=…, k=…` header is present (401) and
//! valid: an ES256 JWT signed by `k`, `aud` the service's origin, `exp` in the future and at most
//! 24 hours ahead, `sub` a `mailto:` or `https:` contact (403; RFC 8292); `TTL` is present and
//! `Content-Encoding` is `aes128gcm` (400); the body is at most 4096 bytes (413) and decrypts with
//! the subscriber's private key and auth secret (RFC 8291 and RFC 8188; 400). Refusals are kept
//! in [`FakePushService::rejected`]. Then the subscription's scripted [`Answer`] decides the
//! status; only a message answered `Created` (or `Slow`, on arrival) counts as received.
//!
//! Decryption is implemented here from the RFCs with RustCrypto, independently of the sender's
//! library, so the two check each other.

use std::collections::{HashMap, VecDeque};
use std::net::TcpListener;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use actix_web::dev::ServerHandle;
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes128Gcm, Nonce};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hkdf::Hkdf;
use p256::ecdsa::signature::Verifier;
use p256::ecdsa::{Signature, VerifyingKey};
use p256::elliptic_curve::sec1::ToEncodedPoint;
use p256::{PublicKey, SecretKey};
use rand::Rng;
use sha2::Sha256;

/// The largest body a push service must accept (RFC 8030 section 7.2).
pub const MAX_BODY: usize = 4096;
/// The longest a VAPID token may be valid (RFC 8292 section 2).
pub const MAX_TOKEN_LIFETIME: Duration = Duration::from_secs(24 * 3600);

/// How the service answers a message that passed every check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// 201, the message is recorded as received.
    Created,
    /// 404, as for an expired subscription.
    Gone404,
    /// 410, as for an unsubscribed one.
    Gone410,
    /// 429, with `Retry-After: <seconds>` when given.
    TooMany { retry_after: Option<u64> },
    /// 503, without `Retry-After`.
    Unavailable503,
    /// Any other status, with an empty body.
    Status(u16),
    /// No answer for ten minutes, to see the sender's time-out.
    Hang,
    /// A slow push service: the message is recorded as received when it arrives (the service has
    /// it), and the 201 comes after this long. A sender that dies meanwhile never learns that the
    /// message went through.
    Slow(Duration),
    /// 410 after this long: a subscription found gone while other sends to it are in flight.
    GoneAfter(Duration),
}

/// A message the service accepted.
#[derive(Debug, Clone)]
pub struct Delivered {
    pub subscription_id: String,
    pub plaintext: Vec<u8>,
    /// The `TTL` header, seconds.
    pub ttl: u64,
    pub urgency: Option<String>,
    pub topic: Option<String>,
    /// The VAPID `k`: the sender's public key, base64url.
    pub vapid_key: String,
    /// The JWT `sub`.
    pub vapid_subject: String,
    pub received_at: SystemTime,
}

impl Delivered {
    /// The plaintext as UTF-8 (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.plaintext).into_owned()
    }

    /// The plaintext as JSON, `Null` when it is not JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.plaintext).unwrap_or(serde_json::Value::Null)
    }
}

/// A request the service refused before looking at the scripted answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// `None` when the path named no known subscription.
    pub subscription_id: Option<String>,
    pub status: u16,
    pub reason: String,
}

struct Subscriber {
    secret: SecretKey,
    auth: [u8; 16],
    /// When set, only this VAPID key may push (a subscription made with `applicationServerKey`).
    application_server_key: Option<String>,
    queued: VecDeque<Answer>,
    standing: Answer,
}

#[derive(Default)]
struct State {
    subscribers: HashMap<String, Subscriber>,
    delivered: Vec<Delivered>,
    rejected: Vec<Rejected>,
    requests: u64,
    plain_requests: u64,
    /// Requests to `/push/…` being answered right now, and the most there ever were at once.
    in_flight: usize,
    max_in_flight: usize,
}

struct Shared {
    state: Mutex<State>,
    origin: String,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A subscription of the fake service; the same type the sender takes.
pub type FakeSubscription = push::Subscription;

pub struct FakePushService {
    origin: String,
    shared: Arc<Shared>,
    handle: ServerHandle,
}

impl FakePushService {
    /// Starts the service on a free loopback port.
    ///
    /// Panics when no loopback port can be had: no test could run without one.
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let origin = format!("http://{}", listener.local_addr().expect("local address"));
        let shared = Arc::new(Shared {
            state: Mutex::default(),
            origin: origin.clone(),
        });
        let data = web::Data::from(Arc::clone(&shared));
        let handle = crate::http::serve(listener, 2, move |cfg| {
            cfg.app_data(data.clone())
                .app_data(web::PayloadConfig::new(64 * 1024))
                .route("/push/{id}", web::post().to(push))
                .route("/plain", web::post().to(plain));
        });
        Self {
            origin,
            shared,
            handle,
        }
    }

    /// `http://127.0.0.1:<port>`, the `aud` every VAPID token must carry.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// A new subscription with a fresh P-256 key pair and auth secret; any VAPID key may push to it.
    pub fn subscribe(&self) -> FakeSubscription {
        self.add_subscriber(None)
    }

    /// A new subscription that only accepts messages signed with this VAPID public key (base64url).
    pub fn subscribe_restricted(&self, application_server_key: &str) -> FakeSubscription {
        self.add_subscriber(Some(
            application_server_key.trim_end_matches('=').to_owned(),
        ))
    }

    /// From now on, answer messages to `sub` with `answer` (the default is `Created`).
    pub fn respond(&self, sub: &push::Subscription, answer: Answer) {
        if let Some(s) = self.shared.lock().subscribers.get_mut(id_of(sub)) {
            s.standing = answer;
        }
    }

    /// Answer the next messages to `sub` with these, in order, then as set by [`Self::respond`].
    pub fn respond_sequence(
        &self,
        sub: &push::Subscription,
        answers: impl IntoIterator<Item = Answer>,
    ) {
        if let Some(s) = self.shared.lock().subscribers.get_mut(id_of(sub)) {
            s.queued.extend(answers);
        }
    }

    /// The messages `sub` received, in order.
    pub fn received(&self, sub: &push::Subscription) -> Vec<Delivered> {
        let id = id_of(sub);
        self.shared
            .lock()
            .delivered
            .iter()
            .filter(|d| d.subscription_id == id)
            .cloned()
            .collect()
    }

    /// Every message received, in order.
    pub fn all_received(&self) -> Vec<Delivered> {
        self.shared.lock().delivered.clone()
    }

    /// Every refused request, in order.
    pub fn rejected(&self) -> Vec<Rejected> {
        self.shared.lock().rejected.clone()
    }

    /// Requests to `/push/…` so far, whatever their fate.
    pub fn requests(&self) -> u64 {
        self.shared.lock().requests
    }

    /// The most requests to `/push/…` that were being answered at the same time.
    pub fn max_in_flight(&self) -> usize {
        self.shared.lock().max_in_flight
    }

    /// Requests to `/push/…` being answered right now.
    pub fn in_flight(&self) -> usize {
        self.shared.lock().in_flight
    }

    /// Waits until at least `count` messages were received or `timeout` passes; returns them all.
    pub async fn wait_for_received(&self, count: usize, timeout: Duration) -> Vec<Delivered> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let received = self.all_received();
            if received.len() >= count || tokio::time::Instant::now() >= deadline {
                return received;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// An endpoint that answers 201 to any POST without checking anything: the floor cost of an
    /// HTTP request to this service, for benchmarks.
    pub fn plain_endpoint(&self) -> String {
        format!("{}/plain", self.origin)
    }

    /// Requests to [`Self::plain_endpoint`] so far.
    pub fn plain_requests(&self) -> u64 {
        self.shared.lock().plain_requests
    }

    fn add_subscriber(&self, application_server_key: Option<String>) -> push::Subscription {
        let mut rng = rand::rng();
        let secret = loop {
            let bytes: [u8; 32] = rng.random();
            if let Ok(secret) = SecretKey::from_slice(&bytes) {
                break secret;
            }
        };
        let auth: [u8; 16] = rng.random();
        let id_bytes: [u8; 16] = rng.random();
        let id = URL_SAFE_NO_PAD.encode(id_bytes);
        let sub = push::Subscription {
            endpoint: format!("{}/push/{id}", self.origin),
            p256dh: URL_SAFE_NO_PAD.encode(secret.public_key().to_encoded_point(false)),
            auth: URL_SAFE_NO_PAD.encode(auth),
        };
        self.shared.lock().subscribers.insert(
            id,
            Subscriber {
                secret,
                auth,
                application_server_key,
                queued: VecDeque::new(),
                standing: Answer::Created,
            },
        );
        sub
    }
}

impl Drop for FakePushService {
    fn drop(&mut self) {
        // The stop command is sent at once; nobody needs to wait for the workers to finish.
        drop(self.handle.stop(false));
    }
}

fn id_of(sub: &push::Subscription) -> &str {
    sub.endpoint.rsplit('/').next().unwrap_or("")
}

async fn plain(shared: web::Data<Shared>, _body: web::Bytes) -> HttpResponse {
    shared.lock().plain_requests += 1;
    HttpResponse::Created().finish()
}

async fn push(
    shared: web::Data<Shared>,
    req: HttpRequest,
    id: web::Path<String>,
    body: web::Bytes,
) -> HttpResponse {
    let id = id.into_inner();
    let _in_flight = InFlight::enter(&shared);
    let keys = {
        let mut state = shared.lock();
        state.requests += 1;
        state
            .subscribers
            .get(&id)
            .map(|s| (s.secret.clone(), s.auth, s.application_server_key.clone()))
    };
    let Some((secret, auth, restricted_to)) = keys else {
        return refuse(&shared, None, 404, "no such subscription".to_owned());
    };
    let refused = |status: u16, reason: String| refuse(&shared, Some(id.clone()), status, reason);

    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let vapid = match verify_vapid(header(&req, "authorization"), &shared.origin, now) {
        Ok(vapid) => vapid,
        Err((status, reason)) => return refused(status, reason),
    };
    if let Some(expected) = restricted_to
        && expected != vapid.key
    {
        return refused(
            403,
            "VAPID key differs from the subscription's applicationServerKey".to_owned(),
        );
    }
    let Some(ttl) = header(&req, "ttl").and_then(|v| v.trim().parse::<u64>().ok()) else {
        return refused(400, "TTL header missing or not a number".to_owned());
    };
    if !header(&req, "content-encoding").is_some_and(|v| v.trim().eq_ignore_ascii_case("aes128gcm"))
    {
        return refused(400, "Content-Encoding must be aes128gcm".to_owned());
    }
    if body.len() > MAX_BODY {
        return refused(
            413,
            format!("body of {} bytes exceeds {MAX_BODY}", body.len()),
        );
    }
    let plaintext = match decrypt_aes128gcm(&secret, &auth, &body) {
        Ok(plaintext) => plaintext,
        Err(reason) => return refused(400, format!("decryption failed: {reason}")),
    };

    let answer = {
        let mut state = shared.lock();
        let answer = match state.subscribers.get_mut(&id) {
            Some(s) => s.queued.pop_front().unwrap_or(s.standing),
            None => Answer::Gone404,
        };
        if matches!(answer, Answer::Created | Answer::Slow(_)) {
            state.delivered.push(Delivered {
                subscription_id: id.clone(),
                plaintext,
                ttl,
                urgency: header(&req, "urgency").map(str::to_owned),
                topic: header(&req, "topic").map(str::to_owned),
                vapid_key: vapid.key,
                vapid_subject: vapid.subject,
                received_at: SystemTime::now(),
            });
        }
        answer
    };
    match answer {
        Answer::Created => HttpResponse::Created()
            .insert_header(("Location", format!("/message/{id}")))
            .finish(),
        Answer::Gone404 => HttpResponse::NotFound().finish(),
        Answer::Gone410 => HttpResponse::Gone().finish(),
        Answer::TooMany { retry_after } => {
            let mut response = HttpResponse::TooManyRequests();
            if let Some(seconds) = retry_after {
                response.insert_header(("Retry-After", seconds.to_string()));
            }
            response.finish()
        }
        Answer::Unavailable503 => HttpResponse::ServiceUnavailable().finish(),
        Answer::Status(code) => {
            HttpResponse::new(StatusCode::from_u16(code).unwrap_or(StatusCode::IM_A_TEAPOT))
        }
        Answer::Hang => {
            tokio::time::sleep(Duration::from_secs(600)).await;
            HttpResponse::GatewayTimeout().finish()
        }
        Answer::GoneAfter(delay) => {
            tokio::time::sleep(delay).await;
            HttpResponse::Gone().finish()
        }
        Answer::Slow(delay) => {
            tokio::time::sleep(delay).await;
            HttpResponse::Created()
                .insert_header(("Location", format!("/message/{id}")))
                .finish()
        }
    }
}

/// Counts a request as being answered until it is dropped: answered, or abandoned by a client
/// that went away (actix then drops the handler's future).
struct InFlight<'a>(&'a Shared);

impl<'a> InFlight<'a> {
    fn enter(shared: &'a Shared) -> Self {
        let mut state = shared.lock();
        state.in_flight += 1;
        state.max_in_flight = state.max_in_flight.max(state.in_flight);
        Self(shared)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.in_flight = state.in_flight.saturating_sub(1);
    }
}

fn header<'a>(req: &'a HttpRequest, name: &str) -> Option<&'a str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

fn refuse(
    shared: &Shared,
    subscription_id: Option<String>,
    status: u16,
    reason: String,
) -> HttpResponse {
    shared.lock().rejected.push(Rejected {
        subscription_id,
        status,
        reason: reason.clone(),
    });
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    HttpResponse::build(status).body(reason)
}

/// What a valid VAPID header says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vapid {
    /// `k`, base64url without padding.
    pub key: String,
    pub subject: String,
    pub expires_at: u64,
}

/// Checks an `Authorization` value as RFC 8292 describes it, for a push service at `origin`, at
/// unix time `now`. Errors carry the status to answer: 401 when the header is missing or not
/// VAPID, 403 when the token or a claim is wrong.
pub fn verify_vapid(
    authorization: Option<&str>,
    origin: &str,
    now: u64,
) -> Result<Vapid, (u16, String)> {
    let unauthorized = |reason: &str| (401, reason.to_owned());
    let forbidden = |reason: &str| (403, reason.to_owned());

    let value = authorization.ok_or_else(|| unauthorized("no Authorization header"))?;
    let (scheme, params) = value
        .trim()
        .split_once(' ')
        .ok_or_else(|| unauthorized("Authorization is not `vapid t=…, k=…`"))?;
    if !scheme.eq_ignore_ascii_case("vapid") {
        return Err(unauthorized("Authorization scheme is not vapid"));
    }
    let (mut token, mut key) = (None, None);
    for param in params.split(',') {
        match param.trim().split_once('=') {
            Some(("t", v)) => token = Some(v.trim()),
            Some(("k", v)) => key = Some(v.trim()),
            _ => {}
        }
    }
    let (Some(token), Some(key)) = (token, key) else {
        return Err(unauthorized("vapid needs both t and k"));
    };

    let key = key.trim_end_matches('=');
    let key_bytes = URL_SAFE_NO_PAD
        .decode(key)
        .map_err(|_| forbidden("k is not base64url"))?;
    if key_bytes.len() != 65 || key_bytes[0] != 0x04 {
        return Err(forbidden("k is not an uncompressed P-256 point"));
    }
    let verifying_key =
        VerifyingKey::from_sec1_bytes(&key_bytes).map_err(|_| forbidden("k is not on P-256"))?;

    let parts: Vec<&str> = token.split('.').collect();
    let [head, claims, signature] = parts[..] else {
        return Err(forbidden("t is not a JWS compact serialization"));
    };
    let head: serde_json::Value = decode_json(head).ok_or_else(|| forbidden("bad JWT header"))?;
    if head["alg"] != "ES256" {
        return Err(forbidden("JWT alg must be ES256"));
    }
    if !head["typ"].is_null() && head["typ"] != "JWT" {
        return Err(forbidden("JWT typ must be JWT"));
    }
    let signature = URL_SAFE_NO_PAD
        .decode(signature)
        .ok()
        .and_then(|raw| Signature::from_slice(&raw).ok())
        .ok_or_else(|| forbidden("JWT signature is not a 64-byte ES256 signature"))?;
    let signing_input = &token[..token.rfind('.').unwrap_or(0)];
    verifying_key
        .verify(signing_input.as_bytes(), &signature)
        .map_err(|_| forbidden("JWT signature does not verify with k"))?;

    let claims: serde_json::Value =
        decode_json(claims).ok_or_else(|| forbidden("bad JWT claims"))?;
    if claims["aud"] != origin {
        return Err(forbidden("JWT aud is not this push service's origin"));
    }
    let exp = claims["exp"]
        .as_u64()
        .ok_or_else(|| forbidden("JWT exp missing"))?;
    if exp <= now {
        return Err(forbidden("JWT expired"));
    }
    if exp > now + MAX_TOKEN_LIFETIME.as_secs() {
        return Err(forbidden("JWT exp more than 24 hours ahead"));
    }
    let subject = claims["sub"].as_str().unwrap_or_default();
    if !(subject.starts_with("mailto:") || subject.starts_with("https:")) {
        return Err(forbidden("JWT sub must be a mailto: or https: contact"));
    }
    Ok(Vapid {
        key: key.to_owned(),
        subject: subject.to_owned(),
        expires_at: exp,
    })
}

fn decode_json(part: &str) -> Option<serde_json::Value> {
    let bytes = URL_SAFE_NO_PAD.decode(part).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Decrypts an `aes128gcm` Web Push body (RFC 8291 on top of RFC 8188) for the subscriber holding
/// `ua_secret` and `auth_secret`.
pub fn decrypt_aes128gcm(
    ua_secret: &SecretKey,
    auth_secret: &[u8],
    body: &[u8],
) -> Result<Vec<u8>, String> {
    // salt (16) | record size (4) | key id length (1) | key id
    const FIXED_HEADER: usize = 21;
    const TAG: usize = 16;
    if body.len() < FIXED_HEADER {
        return Err("body shorter than the aes128gcm header".to_owned());
    }
    let salt = &body[..16];
    let rs = u32::from_be_bytes([body[16], body[17], body[18], body[19]]) as usize;
    if rs < TAG + 2 {
        return Err(format!("record size {rs} below the minimum of 18"));
    }
    let id_len = usize::from(body[20]);
    let as_public_bytes = body
        .get(FIXED_HEADER..FIXED_HEADER + id_len)
        .ok_or("header truncated")?;
    if id_len != 65 {
        return Err(format!(
            "key id must be the sender's 65-byte public key, is {id_len} bytes"
        ));
    }
    let as_public = PublicKey::from_sec1_bytes(as_public_bytes)
        .map_err(|_| "key id is not a P-256 public key".to_owned())?;
    let records = &body[FIXED_HEADER + id_len..];
    if records.is_empty() {
        return Err("no records".to_owned());
    }

    let shared = p256::ecdh::diffie_hellman(ua_secret.to_nonzero_scalar(), as_public.as_affine());
    let ua_public = ua_secret.public_key().to_encoded_point(false);
    let mut key_info = Vec::with_capacity(14 + 65 + 65);
    key_info.extend_from_slice(b"WebPush: info\0");
    key_info.extend_from_slice(ua_public.as_bytes());
    key_info.extend_from_slice(as_public_bytes);
    let mut ikm = [0u8; 32];
    Hkdf::<Sha256>::new(Some(auth_secret), shared.raw_secret_bytes())
        .expand(&key_info, &mut ikm)
        .map_err(|_| "HKDF expand failed".to_owned())?;
    let prk = Hkdf::<Sha256>::new(Some(salt), &ikm);
    let mut cek = [0u8; 16];
    let mut base_nonce = [0u8; 12];
    prk.expand(b"Content-Encoding: aes128gcm\0", &mut cek)
        .and_then(|()| prk.expand(b"Content-Encoding: nonce\0", &mut base_nonce))
        .map_err(|_| "HKDF expand failed".to_owned())?;
    let cipher = Aes128Gcm::new_from_slice(&cek).map_err(|_| "bad key length".to_owned())?;

    let count = records.len().div_ceil(rs);
    let mut plaintext = Vec::with_capacity(records.len());
    for (seq, record) in records.chunks(rs).enumerate() {
        let last = seq + 1 == count;
        if record.len() <= TAG {
            return Err(format!("record {seq} too short"));
        }
        let mut nonce = base_nonce;
        let counter = u64::from_be_bytes(nonce[4..].try_into().unwrap_or_default()) ^ seq as u64;
        nonce[4..].copy_from_slice(&counter.to_be_bytes());
        let padded = cipher
            .decrypt(&Nonce::from(nonce), record)
            .map_err(|_| format!("record {seq} does not authenticate"))?;
        let end = padded
            .iter()
            .rposition(|&b| b != 0)
            .ok_or_else(|| format!("record {seq} has no padding delimiter"))?;
        match (padded[end], last) {
            (2, true) | (1, false) => {}
            (2, false) => return Err(format!("record {seq} is marked last but more follow")),
            (1, true) => {
                return Err("message truncated: the last record is not marked last".to_owned());
            }
            _ => return Err(format!("record {seq} has a bad padding delimiter")),
        }
        plaintext.extend_from_slice(&padded[..end]);
    }
    Ok(plaintext)
}

/// A host that accepts connections and never answers: every request sent to it lasts until the
/// sender's time-out. What a push endpoint on a server that drops the traffic looks like.
pub struct Tarpit {
    addr: std::net::SocketAddr,
    accepted: Arc<std::sync::atomic::AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Tarpit {
    /// Listens on a free loopback port.
    ///
    /// Panics when no loopback port can be had: no test could run without one.
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let addr = listener.local_addr().expect("local address");
        let accepted = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counter = Arc::clone(&accepted);
        let task = tokio::spawn(async move {
            // Held open and never read, until the tarpit is dropped.
            let mut held = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                held.push(stream);
            }
        });
        Self {
            addr,
            accepted,
            task,
        }
    }

    pub fn addr(&self) -> std::net::SocketAddr {
        self.addr
    }

    /// `http://<host>:<port>/tarpit/<id>`: an endpoint on this tarpit under any host name (which
    /// the sender must resolve to [`Self::addr`]).
    pub fn endpoint(&self, host: &str, id: &str) -> String {
        format!("http://{host}:{}/tarpit/{id}", self.addr.port())
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.accepted.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Drop for Tarpit {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::SigningKey;
    use p256::ecdsa::signature::Signer;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect()
    }

    // RFC 8291 Appendix A.
    const RFC_UA_PRIVATE: &str = "ab5757a70dd4a53e553a6bbf71ffefea2874ec07a6b379e3c48f895a02dc33de";
    const RFC_AUTH: &str = "05305932a1c7eabe13b6cec9fda48882";
    const RFC_BODY: &str = "0c6bfaadad67958803092d454676f397000010004104fe33f4ab0dea71914db55823f73b54948f41306d920732dbb9a59a53286482200e597a7b7bc260ba1c227998580992e93973002f3012a28ae8f06bbb78e5ec0ff297de5b429bba7153d3a4ae0caa091fd425f3b4b5414add8ab37a19c1bbb05cf5cb5b2a2e0562d558635641ec52812c6c8ff42e95ccb86be7cd";

    #[test]
    fn decrypts_the_rfc_8291_example() {
        let secret = SecretKey::from_slice(&hex(RFC_UA_PRIVATE)).expect("key");
        let plaintext =
            decrypt_aes128gcm(&secret, &hex(RFC_AUTH), &hex(RFC_BODY)).expect("decrypts");
        assert_eq!(plaintext, b"When I grow up, I want to be a watermelon");
    }

    #[test]
    fn decrypts_small_records() {
        // Record size 18: one byte of plaintext per record.
        let secret = SecretKey::from_slice(&hex(
            "27433fab8970b3cb5284b61183efb46286562cd2a7330d8cae960911a5571d0c",
        ))
        .expect("key");
        let body = hex(
            "7caebdbc20938ee340a946f1bd4f68f100000012410437cfdb5223d9f95eaa02f6ed940ff22eaf05b3622e949dc3ce9f335e6ef9b26aeaacca0f74080a8b364592f2ccc6d5eddd43004b70b91887d144d9fa93f16c3bc7ea68f4fd547a94eca84b16e138a6080177",
        );
        let plaintext = decrypt_aes128gcm(&secret, &hex("d65a04df95f2db5e604839f717dcde79"), &body)
            .expect("decrypts");
        assert_eq!(plaintext, b"1");
    }

    #[test]
    fn refuses_tampered_or_misaddressed_bodies() {
        let secret = SecretKey::from_slice(&hex(RFC_UA_PRIVATE)).expect("key");
        let auth = hex(RFC_AUTH);
        let body = hex(RFC_BODY);
        let mut flipped = body.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert!(decrypt_aes128gcm(&secret, &auth, &flipped).is_err());
        let mut wrong_auth = auth.clone();
        wrong_auth[0] ^= 1;
        assert!(decrypt_aes128gcm(&secret, &wrong_auth, &body).is_err());
        let other = SecretKey::from_slice(&[7u8; 32]).expect("key");
        assert!(decrypt_aes128gcm(&other, &auth, &body).is_err());
        assert!(decrypt_aes128gcm(&secret, &auth, &body[..body.len() - 20]).is_err());
        assert!(decrypt_aes128gcm(&secret, &auth, &body[..30]).is_err());
    }

    const ORIGIN: &str = "http://127.0.0.1:4000";
    const NOW: u64 = 1_800_000_000;

    fn b64(bytes: impl AsRef<[u8]>) -> String {
        URL_SAFE_NO_PAD.encode(bytes)
    }

    fn signed(key: &SigningKey, head: &serde_json::Value, claims: &serde_json::Value) -> String {
        let input = format!("{}.{}", b64(head.to_string()), b64(claims.to_string()));
        let signature: Signature = key.sign(input.as_bytes());
        format!("{input}.{}", b64(signature.to_bytes()))
    }

    fn header_for(key: &SigningKey, claims: &serde_json::Value) -> String {
        let head = serde_json::json!({"typ": "JWT", "alg": "ES256"});
        format!(
            "vapid t={}, k={}",
            signed(key, &head, claims),
            b64(key.verifying_key().to_encoded_point(false))
        )
    }

    fn claims(aud: &str, exp: u64, sub: &str) -> serde_json::Value {
        serde_json::json!({"aud": aud, "exp": exp, "sub": sub})
    }

    #[test]
    fn accepts_a_correct_vapid_header() {
        let key = SigningKey::from_slice(&[9u8; 32]).expect("key");
        let header = header_for(&key, &claims(ORIGIN, NOW + 3600, "mailto:ops@example.com"));
        let vapid = verify_vapid(Some(&header), ORIGIN, NOW).expect("valid");
        assert_eq!(vapid.subject, "mailto:ops@example.com");
        assert_eq!(vapid.key, b64(key.verifying_key().to_encoded_point(false)));
    }

    #[test]
    fn refuses_each_wrong_part_of_the_vapid_header() {
        let key = SigningKey::from_slice(&[9u8; 32]).expect("key");
        let other = SigningKey::from_slice(&[10u8; 32]).expect("key");
        let good = claims(ORIGIN, NOW + 3600, "https://example.com/contact");
        let status = |header: Option<&str>| {
            verify_vapid(header, ORIGIN, NOW)
                .map(|_| ())
                .map_err(|e| e.0)
        };

        assert_eq!(status(None), Err(401));
        assert_eq!(status(Some("Bearer abc")), Err(401));
        assert_eq!(status(Some("vapid t=abc")), Err(401));
        let wrong_aud = header_for(
            &key,
            &claims("http://127.0.0.1:4001", NOW + 3600, "mailto:a@b.c"),
        );
        assert_eq!(status(Some(&wrong_aud)), Err(403));
        let expired = header_for(&key, &claims(ORIGIN, NOW, "mailto:a@b.c"));
        assert_eq!(status(Some(&expired)), Err(403));
        let too_long = header_for(&key, &claims(ORIGIN, NOW + 24 * 3600 + 1, "mailto:a@b.c"));
        assert_eq!(status(Some(&too_long)), Err(403));
        let bad_sub = header_for(&key, &claims(ORIGIN, NOW + 3600, "ops@example.com"));
        assert_eq!(status(Some(&bad_sub)), Err(403));
        // Signed by one key, presented with another.
        let token = signed(
            &other,
            &serde_json::json!({"typ": "JWT", "alg": "ES256"}),
            &good,
        );
        let swapped = format!(
            "vapid t={token}, k={}",
            b64(key.verifying_key().to_encoded_point(false))
        );
        assert_eq!(status(Some(&swapped)), Err(403));
        // A claim changed after signing.
        let honest = header_for(&key, &good);
        let forged_claims =
            b64(claims("http://evil.example", NOW + 3600, "mailto:a@b.c").to_string());
        let mut pieces: Vec<String> = honest.split('.').map(str::to_owned).collect();
        pieces[1] = forged_claims;
        assert_eq!(status(Some(&pieces.join("."))), Err(403));
        let hs256 = signed(
            &key,
            &serde_json::json!({"typ": "JWT", "alg": "HS256"}),
            &good,
        );
        let hs256 = format!(
            "vapid t={hs256}, k={}",
            b64(key.verifying_key().to_encoded_point(false))
        );
        assert_eq!(status(Some(&hs256)), Err(403));
        assert_eq!(status(Some(&honest)), Ok(()));
    }
}
