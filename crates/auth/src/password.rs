//! Password hashing: argon2id with OWASP's parameters (19 MiB, 2 passes, 1 lane), stored as PHC
//! strings so that parameters can be raised later without invalidating existing hashes.
//!
//! Every hash the service computes for a request goes through [`HashPool`]: a fixed number of
//! worker threads, each owning one 19 MiB buffer that it reuses, behind a short bounded queue.
//! A flood of sign-ins therefore costs at most `workers × 19 MiB` of memory, never more, and the
//! memory stays the same after the flood; the database's blocking pool, which serves session
//! lookups, never runs a hash.
//!
//! Accounts imported from a better-auth database keep its scrypt hash (`saltHex:keyHex`) until
//! their owner's next successful sign-in, which replaces it with argon2id ([`is_current`]).

use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use argon2::password_hash::phc::{Output, ParamsString, PasswordHash, Salt};
use argon2::{Algorithm, Argon2, Block, Params, PasswordHasher, PasswordVerifier, Version};
use subtle::ConstantTimeEq;
use tokio::sync::oneshot;
use unicode_normalization::UnicodeNormalization;

pub const MIN_LENGTH: usize = 8;
pub const MAX_LENGTH: usize = 128;

/// Jobs that may wait for a worker, per worker.
pub const QUEUE_PER_WORKER: usize = 32;
/// A job still waiting after this long is answered "busy" instead of being hashed: its client
/// has waited long enough, and hashing it would only delay the jobs behind it.
pub const MAX_WAIT: Duration = Duration::from_secs(2);
/// What a refused client is told to wait, in seconds.
pub const BUSY_RETRY_AFTER_SECS: u64 = 2;

fn params() -> Params {
    Params::new(19 * 1024, 2, 1, None).unwrap_or_default()
}

fn hasher() -> Argon2<'static> {
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params())
}

/// A PHC string for `password`, with a fresh random salt. Allocates its own memory: for start-up
/// and tests; requests use [`HashPool`].
pub fn hash(password: &str) -> Result<String, String> {
    hasher()
        .hash_password(password.as_bytes())
        .map(|h| h.to_string())
        .map_err(|e| e.to_string())
}

/// Whether `password` matches `stored`: an argon2 PHC string, or a better-auth scrypt hash. A
/// malformed stored hash never matches. Allocates its own memory, like [`hash`].
pub fn verify(password: &str, stored: &str) -> bool {
    if stored.starts_with('$') {
        return hasher()
            .verify_password(password.as_bytes(), stored)
            .is_ok();
    }
    verify_better_auth_scrypt(password, stored)
}

/// Whether `stored` is the hash this service writes today; any other is replaced at the next
/// successful sign-in.
pub fn is_current(stored: &str) -> bool {
    stored.starts_with("$argon2id$")
}

/// better-auth 1.x (`@better-auth/utils/password`): `saltHex:keyHex`, the key being scrypt with
/// N = 16384, r = 16, p = 1 and 64 bytes over the NFKC form of the password. The salt is the
/// hex *text* itself (its ASCII bytes), not the bytes it encodes.
fn verify_better_auth_scrypt(password: &str, stored: &str) -> bool {
    let Some((salt, key_hex)) = stored.split_once(':') else {
        return false;
    };
    if salt.is_empty() || key_hex.len() != 128 {
        return false;
    }
    let Some(expected) = decode_hex(key_hex) else {
        return false;
    };
    let Ok(params) = scrypt::Params::new(14, 16, 1, 64) else {
        return false;
    };
    let normalised: String = password.nfkc().collect();
    let mut derived = [0u8; 64];
    if scrypt::scrypt(
        normalised.as_bytes(),
        salt.as_bytes(),
        &params,
        &mut derived,
    )
    .is_err()
    {
        return false;
    }
    derived.ct_eq(expected.as_slice()).into()
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

/// A hash of a random password, verified against when the e-mail address is unknown, so that
/// an unknown address costs as much time as a wrong password and cannot be told apart.
pub fn decoy() -> String {
    hash(&session::ids::random_alphanumeric(24)).unwrap_or_default()
}

/// Every worker is busy and the queue is full (or the job waited too long): answered 503.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy;

enum Task {
    Hash(String),
    Verify { password: String, phc: Arc<str> },
}

enum Outcome {
    Hashed(Result<String, String>),
    Verified(bool),
    Busy,
}

struct Job {
    task: Task,
    queued: Instant,
    reply: oneshot::Sender<Outcome>,
}

/// The workers that compute every password hash of the running service.
#[derive(Clone)]
pub struct HashPool {
    jobs: SyncSender<Job>,
}

impl HashPool {
    /// Starts `workers` threads, each with its own reusable argon2 memory.
    pub fn start(workers: usize) -> std::io::Result<Self> {
        let workers = workers.max(1);
        let (jobs, queue) = mpsc::sync_channel(workers * QUEUE_PER_WORKER);
        let queue = Arc::new(Mutex::new(queue));
        for i in 0..workers {
            let queue = Arc::clone(&queue);
            std::thread::Builder::new()
                .name(format!("argon2-{i}"))
                .spawn(move || work(&queue))?;
        }
        Ok(Self { jobs })
    }

    /// A PHC string for `password` with a fresh salt.
    pub async fn hash(&self, password: String) -> Result<Result<String, String>, Busy> {
        match self.submit(Task::Hash(password)).await? {
            Outcome::Hashed(result) => Ok(result),
            _ => Err(Busy),
        }
    }

    /// Whether `password` matches the stored `phc`.
    pub async fn verify(&self, password: String, phc: Arc<str>) -> Result<bool, Busy> {
        match self.submit(Task::Verify { password, phc }).await? {
            Outcome::Verified(matches) => Ok(matches),
            _ => Err(Busy),
        }
    }

    async fn submit(&self, task: Task) -> Result<Outcome, Busy> {
        let (reply, answer) = oneshot::channel();
        let job = Job {
            task,
            queued: Instant::now(),
            reply,
        };
        match self.jobs.try_send(job) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => return Err(Busy),
        }
        match answer.await {
            Ok(Outcome::Busy) | Err(_) => Err(Busy),
            Ok(outcome) => Ok(outcome),
        }
    }
}

fn work(queue: &Mutex<Receiver<Job>>) {
    let argon2 = hasher();
    // Allocated at the first hash, not at start-up: a process that computes none (a replica
    // serving only session checks) never holds the 19 MiB.
    let mut memory: Vec<Block> = Vec::new();
    loop {
        // The lock is held only while taking a job, never while hashing.
        let next = match queue.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(job) = next else { return };
        // The request was cancelled (the client went away): nobody needs the answer.
        if job.reply.is_closed() {
            continue;
        }
        if job.queued.elapsed() > MAX_WAIT {
            let _ = job.reply.send(Outcome::Busy);
            continue;
        }
        if memory.is_empty() {
            memory = vec![Block::default(); params().block_count()];
        }
        let outcome = match job.task {
            Task::Hash(password) => Outcome::Hashed(hash_with(&argon2, &mut memory, &password)),
            Task::Verify { password, phc } => {
                Outcome::Verified(verify_with(&argon2, &mut memory, &password, &phc))
            }
        };
        let _ = job.reply.send(outcome);
    }
}

fn hash_with(argon2: &Argon2<'_>, memory: &mut [Block], password: &str) -> Result<String, String> {
    let salt_bytes: [u8; 16] = rand::random();
    let salt = Salt::new(&salt_bytes).map_err(|e| e.to_string())?;
    let mut out = [0u8; Params::DEFAULT_OUTPUT_LEN];
    argon2
        .hash_password_into_with_memory(password.as_bytes(), &salt, &mut out, &mut *memory)
        .map_err(|e| e.to_string())?;
    let phc = PasswordHash {
        algorithm: argon2::ARGON2ID_IDENT,
        version: Some(Version::V0x13.into()),
        params: ParamsString::try_from(argon2.params()).map_err(|e| e.to_string())?,
        salt: Some(salt),
        hash: Some(Output::new(&out).map_err(|e| e.to_string())?),
    };
    Ok(phc.to_string())
}

/// Verifies in the worker's memory when the stored hash has the current parameters (every hash
/// this service wrote); any other valid PHC string, or an imported scrypt hash, is verified the
/// allocating way (still on this worker, so still bounded by the number of workers).
fn verify_with(argon2: &Argon2<'_>, memory: &mut [Block], password: &str, phc: &str) -> bool {
    if !phc.starts_with('$') {
        return verify_better_auth_scrypt(password, phc);
    }
    let Ok(parsed) = PasswordHash::new(phc) else {
        return false;
    };
    let current = parsed.algorithm == argon2::ARGON2ID_IDENT
        && parsed.version == Some(Version::V0x13.into())
        && Params::try_from(&parsed).is_ok_and(|p| {
            p.m_cost() == argon2.params().m_cost()
                && p.t_cost() == argon2.params().t_cost()
                && p.p_cost() == argon2.params().p_cost()
                && p.output_len() == Some(Params::DEFAULT_OUTPUT_LEN)
                && p.keyid().is_empty()
                && p.data().is_empty()
        });
    let (Some(salt), Some(expected)) = (&parsed.salt, &parsed.hash) else {
        return false;
    };
    if !current {
        return argon2.verify_password(password.as_bytes(), &parsed).is_ok();
    }
    let mut out = [0u8; Params::DEFAULT_OUTPUT_LEN];
    if argon2
        .hash_password_into_with_memory(password.as_bytes(), salt, &mut out, &mut *memory)
        .is_err()
    {
        return false;
    }
    out.ct_eq(expected.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argon2id_phc_round_trip() {
        let phc = hash("correct horse battery").expect("hash");
        assert!(phc.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{phc}");
        assert!(verify("correct horse battery", &phc));
        assert!(!verify("correct horse batterY", &phc));
        assert!(!verify("anything", "not a phc string"));
        assert_ne!(phc, hash("correct horse battery").expect("hash"), "salted");
        assert!(is_current(&phc));
    }

    /// Vectors from Node's `crypto.scrypt`, the function better-auth calls.
    #[test]
    fn better_auth_scrypt_hashes_verify() {
        let salt = "0123456789abcdef0123456789abcdef";
        let umlauts = format!(
            "{salt}:9a6c243491aab229db407df28ad4abf11637c042c9802699411f49f248a3d6170901b91273005277985f701f0276516d63b8f6ff7200392161627cab393b24ce"
        );
        assert!(verify("Pässwörd-123", &umlauts));
        assert!(!verify("Passwörd-123", &umlauts));
        assert!(!is_current(&umlauts));
        // "\u{fb01}" (the fi ligature) is "fi" in NFKC, as better-auth normalises.
        let ligature = format!(
            "{salt}:248bca41498ed9946b0bcc0469418910d6d470c24203925ca9a5c803d42715c964c1b04ec52380f9c3fe7371cb3833fbc47933f8a85d5dc5dde53953d07d48b8"
        );
        assert!(verify("\u{fb01}le-password", &ligature));
        assert!(verify("file-password", &ligature));
    }

    #[test]
    fn malformed_scrypt_hashes_never_match() {
        for stored in [
            "",
            ":",
            "abcd:",
            ":00",
            "abcd:zz",
            &format!("abcd:{}", "0".repeat(127)),
            &format!("abcd:{}", "g".repeat(128)),
        ] {
            assert!(!verify("password-123", stored), "{stored}");
            assert!(!is_current(stored));
        }
    }

    #[tokio::test]
    async fn pool_hashes_are_ordinary_phc_strings() {
        let pool = HashPool::start(1).expect("start");
        let phc = pool
            .hash("correct horse battery".into())
            .await
            .expect("not busy")
            .expect("hash");
        assert!(phc.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{phc}");
        // Interchangeable with the allocating functions, both ways.
        assert!(verify("correct horse battery", &phc));
        let other: Arc<str> = hash("another one").expect("hash").into();
        let check = |p: &str, h: &Arc<str>| pool.verify(p.to_owned(), Arc::clone(h));
        assert_eq!(check("another one", &other).await, Ok(true));
        assert_eq!(check("another two", &other).await, Ok(false));
        assert_eq!(check("x", &Arc::from("not a phc string")).await, Ok(false));
        // Hashes of other parameters still verify.
        let weaker = Argon2::new(
            Algorithm::Argon2id,
            Version::V0x13,
            Params::new(8 * 1024, 3, 1, None).expect("params"),
        )
        .hash_password(b"legacy password")
        .expect("hash")
        .to_string();
        let weaker: Arc<str> = weaker.into();
        assert_eq!(check("legacy password", &weaker).await, Ok(true));
        let imported: Arc<str> = "0123456789abcdef0123456789abcdef:9a6c243491aab229db407df28ad4abf11637c042c9802699411f49f248a3d6170901b91273005277985f701f0276516d63b8f6ff7200392161627cab393b24ce".into();
        assert_eq!(check("Pässwörd-123", &imported).await, Ok(true));
        assert_eq!(check("Passwörd-123", &imported).await, Ok(false));
        assert_eq!(check("legacy passwore", &weaker).await, Ok(false));
    }
}
