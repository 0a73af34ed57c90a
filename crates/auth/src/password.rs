//! Password hashing: argon2id with OWASP's parameters (19 MiB, 2 passes, 1 lane), stored as PHC
//! strings so that parameters can be raised later without invalidating existing hashes.
//!
//! Every hash the service computes for a request goes through [`HashPool`]: a fixed number of
//! worker threads, each owning one 19 MiB buffer that it reuses, behind a short bounded queue.
//! A flood of sign-ins therefore costs at most `workers × 19 MiB` of memory, never more, and the
//! memory stays the same after the flood; the database's blocking pool, which serves session
//! lookups, never runs a hash.

use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use argon2::password_hash::phc::{Output, ParamsString, PasswordHash, Salt};
use argon2::{Algorithm, Argon2, Block, Params, PasswordHasher, PasswordVerifier, Version};
use subtle::ConstantTimeEq;
use tokio::sync::oneshot;

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

/// Whether `password` matches `phc`. A malformed stored hash never matches. Allocates its own
/// memory, like [`hash`].
pub fn verify(password: &str, phc: &str) -> bool {
    hasher().verify_password(password.as_bytes(), phc).is_ok()
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
    let mut memory = vec![Block::default(); params().block_count()];
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
/// this service wrote); any other valid PHC string is verified the allocating way.
fn verify_with(argon2: &Argon2<'_>, memory: &mut [Block], password: &str, phc: &str) -> bool {
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
        assert_eq!(check("legacy passwore", &weaker).await, Ok(false));
    }
}
