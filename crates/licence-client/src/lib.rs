//! The licence library of the desktop app.
//!
//! It activates a licence key for this machine, keeps the answer (a token and an offline
//! *lease*) in the OS configuration directory, and decides offline whether the app may run:
//! the lease is an Ed25519-signed JWS that the app checks against public keys pinned when it was
//! built, so no server is needed until the lease expires (the server's `LICENCE_GRACE_DAYS`,
//! 7 by default). While online, [`LicenceClient::refresh`] renews the lease once per
//! [`REVALIDATE_EVERY`].
//!
//! Answers bound to their request: every request carries a fresh random `Licence-Nonce`, and
//! its answer must carry a `Licence-Signature` by a pinned key that names and covers that nonce;
//! an answer without one, signed by another key or made for another request is refused as
//! [`Error::BadSignature`], and one whose `Date` is more than [`ANSWER_DATE_TOLERANCE`] from the
//! client's clock as [`Error::ClockSkew`]. So a fake server can neither unlock the app nor
//! replay answers the real server gave to other requests (a consume that succeeded, a 404 that
//! would make the client forget its licence): such an answer changes nothing stored.
//!
//! Only `https://` servers are used, and `http://` ones on the loopback interface (tests, a
//! local development server); anything else is refused when the client is made.
//!
//! Clock tampering: the last time the client saw is stored with the lease; a clock more than
//! [`CLOCK_TOLERANCE`] behind it makes [`LicenceClient::check`] fail with
//! [`Error::ClockSetBack`] until the server has been reached again. The stored times are sealed
//! with a MAC keyed from the lease and the installation: a state file edited by hand fails with
//! [`Error::StateTampered`], which only an online validation cures.
//!
//! Updates, for apps without an updater framework: [`LicenceClient::check_update`] asks the
//! licence server's Tauri feed whether a newer release is offered to this licence, and
//! [`LicenceClient::download_update`] keeps the download only once its minisign signature
//! verifies with the [`UpdateKey`] the app pins.
//!
//! ```no_run
//! # async fn run() -> Result<(), licence_client::Error> {
//! use licence_client::LicenceClient;
//!
//! // Keys pinned at build time (LICENCE_PUBLIC_KEYS), state in the OS config directory.
//! let client = LicenceClient::new("https://licences.example.com")?;
//! match client.check() {
//!     Ok(status) => println!("licensed: {} until {}", status.plan, status.lease_expires_at),
//!     Err(licence_client::Error::NotActivated) => {
//!         client.activate("ABCDE-FGHJK-MNPQR-STVWX-YZ234", Some("My laptop")).await?;
//!     }
//!     Err(other) => return Err(other),
//! }
//! // Spend one unit of the daily quota; a blocking dialog when it is used up.
//! match client.consume().await {
//!     Ok(usage) => println!("{} left today", usage.remaining),
//!     Err(licence_client::Error::QuotaExhausted { plan, resets_at }) => {
//!         println!("the {plan} plan's quota is used up until {resets_at}");
//!     }
//!     Err(other) => return Err(other),
//! }
//! # Ok(()) }
//! ```

mod fingerprint;
mod store;
mod updater;
mod verify;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde::de::DeserializeOwned;

pub use fingerprint::machine_instance_id;
pub use store::State;
pub use updater::{MAX_UPDATE_BYTES, Update, UpdateKey, current_platform};
pub use verify::{ANSWER_DATE_TOLERANCE, Lease, PublicKey, parse_keys, pinned_keys};

/// How often [`LicenceClient::refresh`] asks the server again while the lease is valid.
pub const REVALIDATE_EVERY: chrono::Duration = chrono::Duration::hours(24);
/// How far the clock may go back (time zone fixes, NTP steps) before it counts as set back.
pub const CLOCK_TOLERANCE: chrono::Duration = chrono::Duration::minutes(10);
/// The longest the client waits for the server.
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(15);

/// Everything that can go wrong, typed so that the app can show the right dialog.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the licence server cannot be reached: {0}")]
    Network(#[from] reqwest::Error),
    #[error("the answer is not signed for this request by a licence server key this app trusts")]
    BadSignature,
    #[error(
        "the answer is dated {server_date}, more than 5 minutes from this computer's clock: \
         set the clock right (or the answer was replayed)"
    )]
    ClockSkew { server_date: DateTime<Utc> },
    #[error("the licence server address is refused: {0}")]
    ServerUrlRefused(&'static str),
    #[error("the stored licence state was edited; connect to the internet to validate it again")]
    StateTampered,
    #[error("this app was built without the licence server's public keys")]
    NoPinnedKeys,
    #[error("this installation is not activated")]
    NotActivated,
    #[error("the lease is not valid: {0}")]
    LeaseInvalid(&'static str),
    #[error("the offline lease expired at {expired_at}; connect to the internet")]
    LeaseExpired { expired_at: DateTime<Utc> },
    #[error("the system clock is behind the last time this app saw ({last_seen})")]
    ClockSetBack { last_seen: DateTime<Utc> },
    #[error("no licence has this key")]
    LicenceNotFound,
    #[error("the licence does not grant access")]
    LicenceInactive,
    #[error("this installation no longer holds a seat of the licence")]
    InstanceNotActive,
    #[error("the licence is already activated on the maximum number of machines")]
    ActivationLimitReached,
    #[error("the daily quota of the {plan} plan is used up until {resets_at}")]
    QuotaExhausted {
        plan: String,
        resets_at: DateTime<Utc>,
    },
    #[error("too many deactivations; try again in {retry_after_secs} s")]
    DeactivationLimitReached { retry_after_secs: u64 },
    #[error("too many requests; try again in {retry_after_secs} s")]
    RateLimited { retry_after_secs: u64 },
    #[error("the server answered {status} {code}: {message}")]
    Server {
        status: u16,
        code: String,
        message: String,
    },
    #[error("the licence state could not be stored: {0}")]
    Storage(#[from] std::io::Error),
    #[error("the update is refused: {0}")]
    UpdateRefused(&'static str),
}

/// What the app may do, from a verified lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// The licence id (opaque).
    pub licence_id: String,
    pub plan: String,
    pub features: Vec<String>,
    pub daily_quota: u32,
    pub lease_expires_at: DateTime<Utc>,
    /// Whether [`LicenceClient::refresh`] would ask the server now.
    pub revalidation_due: bool,
}

/// The daily quota after a consume.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub plan: String,
    pub used: u32,
    pub limit: u32,
    pub remaining: u32,
    pub resets_at: DateTime<Utc>,
}

/// One installation holding a seat of the licence.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Activation {
    pub instance_id: String,
    pub name: Option<String>,
    pub created_at: DateTime<Utc>,
    pub last_validated_at: DateTime<Utc>,
    pub current: bool,
}

type Clock = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

/// The licence of this installation. Cheap to clone.
#[derive(Clone)]
pub struct LicenceClient {
    http: reqwest::Client,
    base: String,
    keys: Arc<Vec<PublicKey>>,
    state_path: PathBuf,
    instance_id: String,
    clock: Clock,
}

impl std::fmt::Debug for LicenceClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LicenceClient")
            .field("base", &self.base)
            .field("state_path", &self.state_path)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct ErrorBody {
    #[serde(default)]
    code: String,
    #[serde(default)]
    message: String,
    plan: Option<String>,
    #[serde(rename = "resetsAt")]
    resets_at: Option<DateTime<Utc>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Granted {
    token: String,
    lease: String,
}

#[derive(Deserialize)]
struct Activations {
    activations: Vec<Activation>,
}

impl LicenceClient {
    /// A client for `base_url` trusting the keys pinned at build time, with its state in the OS
    /// configuration directory and this machine's instance id.
    pub fn new(base_url: &str) -> Result<Self, Error> {
        let keys = pinned_keys();
        if keys.is_empty() {
            return Err(Error::NoPinnedKeys);
        }
        let dirs = directories::ProjectDirs::from("com", "Example", "Desktop App")
            .ok_or_else(|| std::io::Error::other("no home directory to keep the licence in"))?;
        let dir = dirs.config_dir().to_path_buf();
        let instance_id = machine_instance_id(&dir)?;
        Self::with_keys(base_url, keys, dir.join("licence.json"), instance_id)
    }

    /// A client trusting exactly `keys`, keeping its state at `state_path`, as `instance_id`:
    /// for tests and for apps that manage these themselves.
    pub fn with_keys(
        base_url: &str,
        keys: Vec<PublicKey>,
        state_path: PathBuf,
        instance_id: String,
    ) -> Result<Self, Error> {
        check_server_url(base_url)?;
        // The licence routes never redirect; following one could leave https.
        let http = reqwest::Client::builder()
            .timeout(HTTP_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Self {
            http,
            base: base_url.trim_end_matches('/').to_owned(),
            keys: Arc::new(keys),
            state_path,
            instance_id,
            clock: Arc::new(Utc::now),
        })
    }

    /// Replaces the clock (tests move time with it).
    pub fn with_clock(mut self, clock: impl Fn() -> DateTime<Utc> + Send + Sync + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    pub fn instance_id(&self) -> &str {
        &self.instance_id
    }

    /// Activates `key` on this installation and stores the lease.
    pub async fn activate(&self, key: &str, name: Option<&str>) -> Result<Status, Error> {
        let body = serde_json::json!({
            "licenseKey": key,
            "instanceId": self.instance_id,
            "instanceName": name,
        });
        let granted: Granted = self
            .call(
                reqwest::Method::POST,
                "/api/license/activate",
                None,
                Some(&body),
                None,
            )
            .await?;
        self.keep_with_key(granted, Some(key.trim().to_owned()))
    }

    /// The offline decision: the stored lease, verified against the pinned keys, for this
    /// installation, not expired, with a clock that did not go back and a state nobody edited.
    pub fn check(&self) -> Result<Status, Error> {
        let now = (self.clock)();
        let mut state = State::load(&self.state_path)?.ok_or(Error::NotActivated)?;
        if !state.is_sealed_for(&self.instance_id) {
            return Err(Error::StateTampered);
        }
        if now + CLOCK_TOLERANCE < state.last_seen {
            return Err(Error::ClockSetBack {
                last_seen: state.last_seen,
            });
        }
        let lease = verify::lease(&self.keys, &state.lease)?;
        if lease.iid != self.instance_id {
            return Err(Error::LeaseInvalid("issued to another installation"));
        }
        let issued = DateTime::from_timestamp(lease.iat, 0).ok_or(Error::LeaseInvalid("iat"))?;
        // A clock behind the moment the server signed the lease was set back too.
        if now + CLOCK_TOLERANCE < issued {
            return Err(Error::ClockSetBack { last_seen: issued });
        }
        let expires = DateTime::from_timestamp(lease.exp, 0).ok_or(Error::LeaseInvalid("exp"))?;
        if expires <= now {
            return Err(Error::LeaseExpired {
                expired_at: expires,
            });
        }
        if now > state.last_seen {
            state.last_seen = now;
            state.seal(&self.instance_id);
            state.save(&self.state_path)?;
        }
        Ok(Status {
            licence_id: lease.sub,
            plan: lease.plan,
            features: lease.features,
            daily_quota: lease.daily_quota,
            lease_expires_at: expires,
            revalidation_due: now - state.last_validated_at >= REVALIDATE_EVERY,
        })
    }

    /// [`check`](Self::check), and when revalidation is due, a validation with the server that
    /// renews the lease. A server out of reach, or an answer that cannot be bound to the
    /// request (a fake server, a captive portal), leaves the offline decision standing; a server
    /// that refuses the licence ends it.
    pub async fn refresh(&self) -> Result<Status, Error> {
        let status = match self.check() {
            Ok(s) if !s.revalidation_due => return Ok(s),
            Ok(s) => Some(s),
            // A clock set back, an expired lease or an edited state may be cured by the server.
            Err(Error::ClockSetBack { .. } | Error::LeaseExpired { .. } | Error::StateTampered) => {
                None
            }
            Err(other) => return Err(other),
        };
        match self.validate().await {
            Ok(fresh) => Ok(fresh),
            Err(e @ (Error::Network(_) | Error::BadSignature | Error::ClockSkew { .. })) => {
                status.ok_or(e)
            }
            Err(e) => Err(e),
        }
    }

    /// Validates with the server now and stores the fresh token and lease. A refused licence
    /// removes the stored lease; only an answer bound to this request can refuse it.
    pub async fn validate(&self) -> Result<Status, Error> {
        let state = State::load(&self.state_path)?.ok_or(Error::NotActivated)?;
        let by_token = self
            .call::<Granted>(
                reqwest::Method::POST,
                "/api/license/validate",
                Some(&state.token),
                None,
                None,
            )
            .await;
        let granted = match (by_token, &state.licence_key) {
            (Err(Error::Server { status: 401, .. }), Some(key)) => {
                let body = serde_json::json!({"licenseKey": key, "instanceId": self.instance_id});
                self.call(
                    reqwest::Method::POST,
                    "/api/license/validate",
                    None,
                    Some(&body),
                    None,
                )
                .await
            }
            (other, _) => other,
        };
        match granted {
            Ok(g) => {
                let mut status = self.keep_with_key(g, state.licence_key.clone())?;
                status.revalidation_due = false;
                Ok(status)
            }
            Err(
                e @ (Error::LicenceInactive | Error::InstanceNotActive | Error::LicenceNotFound),
            ) => {
                State::remove(&self.state_path)?;
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    /// Takes one unit of today's quota. A fresh `Idempotency-Key` is sent, and the request is
    /// sent once more with the same key if the first answer was lost (or the token had expired
    /// and was renewed first), so a flaky network never costs two units.
    pub async fn consume(&self) -> Result<Usage, Error> {
        let state = State::load(&self.state_path)?.ok_or(Error::NotActivated)?;
        let key = random_token();
        let path = "/api/usage/consume";
        let first = self
            .call(
                reqwest::Method::POST,
                path,
                Some(&state.token),
                None,
                Some(&key),
            )
            .await;
        let token = match first {
            Err(Error::Network(_)) => state.token,
            Err(Error::Server { status: 401, .. }) => {
                self.validate().await?;
                State::load(&self.state_path)?
                    .ok_or(Error::NotActivated)?
                    .token
            }
            other => return other,
        };
        self.call(reqwest::Method::POST, path, Some(&token), None, Some(&key))
            .await
    }

    /// The installations holding a seat of this licence.
    pub async fn activations(&self) -> Result<Vec<Activation>, Error> {
        let state = State::load(&self.state_path)?.ok_or(Error::NotActivated)?;
        let list: Activations = self
            .call(
                reqwest::Method::GET,
                "/api/license/activations",
                Some(&state.token),
                None,
                None,
            )
            .await?;
        Ok(list.activations)
    }

    /// Frees the seat of `instance_id` (another installation of the same licence), or of this
    /// one when `None`; freeing this one also forgets the stored lease.
    pub async fn deactivate(&self, instance_id: Option<&str>) -> Result<(), Error> {
        let state = State::load(&self.state_path)?.ok_or(Error::NotActivated)?;
        let target = instance_id.unwrap_or(&self.instance_id);
        let body = serde_json::json!({ "instanceId": target });
        self.call::<serde_json::Value>(
            reqwest::Method::POST,
            "/api/license/deactivate",
            Some(&state.token),
            Some(&body),
            None,
        )
        .await?;
        if target == self.instance_id {
            State::remove(&self.state_path)?;
        }
        Ok(())
    }

    fn keep_with_key(
        &self,
        granted: Granted,
        licence_key: Option<String>,
    ) -> Result<Status, Error> {
        let lease = verify::lease(&self.keys, &granted.lease)?;
        if lease.iid != self.instance_id {
            return Err(Error::LeaseInvalid("issued to another installation"));
        }
        let now = (self.clock)();
        let mut state = State {
            licence_key,
            token: granted.token,
            lease: granted.lease,
            // The server has just vouched for the licence: the clock starts afresh from here,
            // which is how a clock that was set back (and then fixed) is forgiven.
            last_seen: now,
            last_validated_at: now,
            mac: String::new(),
        };
        state.seal(&self.instance_id);
        state.save(&self.state_path)?;
        self.check()
    }

    async fn call<T: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        path: &str,
        bearer: Option<&str>,
        body: Option<&serde_json::Value>,
        idempotency_key: Option<&str>,
    ) -> Result<T, Error> {
        let mut req = self
            .http
            .request(method.clone(), format!("{}{path}", self.base));
        if let Some(token) = bearer {
            req = req.bearer_auth(token);
        }
        if let Some(body) = body {
            req = req.json(body);
        }
        if let Some(key) = idempotency_key {
            req = req.header("idempotency-key", key);
        }
        // Fresh for every request, so that no answer made for another one is taken for its own.
        let nonce = random_token();
        req = req.header("licence-nonce", &nonce);
        let resp = req.send().await?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let bytes = read_limited(resp).await?;
        let request = verify::Request {
            method: method.as_str(),
            path,
            nonce: &nonce,
        };
        verify::answer(&self.keys, &request, &headers, &bytes, (self.clock)())?;
        if status.is_success() {
            return serde_json::from_slice(&bytes).map_err(|_| Error::Server {
                status: status.as_u16(),
                code: "MALFORMED_ANSWER".into(),
                message: "the answer is not the expected JSON".into(),
            });
        }
        Err(server_error(status.as_u16(), &headers, &bytes))
    }
}

/// The error an answer of `status` with `bytes` (`{code, message}`) stands for.
fn server_error(status: u16, headers: &reqwest::header::HeaderMap, bytes: &[u8]) -> Error {
    let err: ErrorBody = serde_json::from_slice(bytes).unwrap_or(ErrorBody {
        code: String::new(),
        message: String::from_utf8_lossy(bytes).chars().take(200).collect(),
        plan: None,
        resets_at: None,
    });
    let retry_after_secs = headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    match err.code.as_str() {
        "LICENSE_NOT_FOUND" => Error::LicenceNotFound,
        "LICENSE_INACTIVE" => Error::LicenceInactive,
        "INSTANCE_NOT_ACTIVE" => Error::InstanceNotActive,
        "ACTIVATION_LIMIT_REACHED" => Error::ActivationLimitReached,
        "DAILY_QUOTA_EXCEEDED" => match (err.plan, err.resets_at) {
            (Some(plan), Some(resets_at)) => Error::QuotaExhausted { plan, resets_at },
            _ => Error::Server {
                status,
                code: err.code,
                message: err.message,
            },
        },
        "DEACTIVATION_LIMIT_REACHED" => Error::DeactivationLimitReached { retry_after_secs },
        "RATE_LIMITED" => Error::RateLimited { retry_after_secs },
        _ => Error::Server {
            status,
            code: err.code,
            message: err.message,
        },
    }
}

/// The largest answer the client reads; the server's are a few kilobytes.
pub const MAX_ANSWER_BYTES: usize = 1 << 20;

/// The body of `resp`, refused once it grows past [`MAX_ANSWER_BYTES`], so that whatever
/// answers at the server's address cannot make the app hold an unbounded body.
async fn read_limited(mut resp: reqwest::Response) -> Result<Vec<u8>, Error> {
    let status = resp.status().as_u16();
    let too_large = || Error::Server {
        status,
        code: "ANSWER_TOO_LARGE".into(),
        message: format!("the answer is larger than {MAX_ANSWER_BYTES} bytes"),
    };
    if resp
        .content_length()
        .is_some_and(|n| n > MAX_ANSWER_BYTES as u64)
    {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// 32 random URL-safe characters (192 bits): idempotency keys and nonces.
fn random_token() -> String {
    use base64::Engine;
    let bytes: [u8; 24] = rand::random();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// `https://` anywhere, `http://` only on the loopback interface (127.0.0.0/8, `::1`,
/// `localhost`), where no one on the network can read or answer the requests; no credentials,
/// query or fragment, since paths are appended to the address.
fn check_server_url(base_url: &str) -> Result<(), Error> {
    let url = reqwest::Url::parse(base_url)
        .map_err(|_| Error::ServerUrlRefused("not an absolute http(s) address"))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Error::ServerUrlRefused("credentials in the address"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(Error::ServerUrlRefused(
            "a query or fragment in the address",
        ));
    }
    url.host_str()
        .filter(|h| !h.is_empty())
        .ok_or(Error::ServerUrlRefused("no host in the address"))?;
    match url.scheme() {
        "https" => Ok(()),
        "http" if on_loopback(&url) => Ok(()),
        "http" => Err(Error::ServerUrlRefused(
            "http:// is allowed only on the loopback interface; use https://",
        )),
        _ => Err(Error::ServerUrlRefused("not an http(s) address")),
    }
}

/// Whether `url`'s host is the loopback interface: a loopback IP address or `localhost`.
fn on_loopback(url: &reqwest::Url) -> bool {
    let host = url.host_str().unwrap_or_default();
    // The parser has already normalised IPv4 forms (`127.1`, hex) and put IPv6 in brackets.
    let ip = host.trim_start_matches('[').trim_end_matches(']');
    match ip.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => host.eq_ignore_ascii_case("localhost"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn construct(base: &str) -> Result<LicenceClient, Error> {
        LicenceClient::with_keys(
            base,
            Vec::new(),
            std::env::temp_dir().join("licence-client-never-written.json"),
            "desk".into(),
        )
    }

    #[test]
    fn an_http_server_other_than_loopback_is_refused_at_construction() {
        for refused in [
            "http://licences.example.com",
            "http://licences.example.com:8083/",
            "http://10.0.0.7:8083",
            "http://192.168.1.20",
            "http://[fe80::1]:8083",
            "http://localhost.example.com",
            "http://127.0.0.1.example.com",
            "http://0.0.0.0:8083",
            "ftp://licences.example.com",
            "file:///etc/passwd",
            "licences.example.com",
            "",
            "https://user:secret@licences.example.com",
            "https://licences.example.com/?x=1",
        ] {
            assert!(
                matches!(construct(refused), Err(Error::ServerUrlRefused(_))),
                "{refused} must be refused"
            );
        }
        for allowed in [
            "https://licences.example.com",
            "https://licences.example.com/",
            "https://10.0.0.7:8443",
            "http://127.0.0.1:8083",
            "http://127.0.0.2:8083/",
            "http://127.255.255.254",
            "http://[::1]:8083",
            "http://localhost:8083",
            "http://LOCALHOST:8083",
        ] {
            assert!(construct(allowed).is_ok(), "{allowed} must be taken");
        }
    }
}
