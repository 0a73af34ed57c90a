//! The raw argon2id verification rate of this machine, with the parameters auth uses: `THREADS`
//! threads (auth's hash workers, `AUTH_HASH_CONCURRENCY`, by default one per core) each verify
//! the same password against the same PHC string in a loop for `SECONDS`, reusing one memory
//! buffer per thread like auth's workers do. It is the ceiling of the sign-in rate: sign-in does
//! exactly one such verification, plus HTTP and a few statements.
//!
//!   cargo run --release -p auth --example argon2_rate -- [THREADS] [SECONDS]
//!
//! Prints one line: `RESULT threads=N seconds=S verifies=V rate=R` (verifications per second).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use argon2::password_hash::phc::PasswordHash;
use argon2::{Algorithm, Argon2, Block, Params, Version};

fn main() {
    let mut args = std::env::args().skip(1);
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let threads = match args.next() {
        Some(n) => n.parse::<usize>().ok().filter(|n| (1..=256).contains(n)),
        None => Some(cores),
    };
    let seconds = match args.next() {
        Some(s) => s.parse::<f64>().ok().filter(|s| *s > 0.0 && *s <= 300.0),
        None => Some(10.0),
    };
    let (Some(threads), Some(seconds)) = (threads, seconds) else {
        eprintln!("usage: argon2_rate [THREADS 1..256] [SECONDS 0..300]");
        std::process::exit(2);
    };

    let password = "correct horse battery staple";
    // The same function that auth uses to store a password.
    let phc = auth::password::hash(password).expect("hash");
    let parsed = PasswordHash::new(&phc).expect("PHC string");
    let params = Params::try_from(&parsed).expect("parameters");
    let salt = parsed.salt.expect("salt");
    let expected = parsed.hash.expect("hash output").as_bytes().to_vec();
    let salt_bytes = salt.as_ref().to_vec();

    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (stop, done) = (Arc::clone(&stop), Arc::clone(&done));
            let (params, salt, expected) = (params.clone(), salt_bytes.clone(), expected.clone());
            std::thread::spawn(move || {
                let argon2 = Argon2::new(Algorithm::Argon2id, Version::V0x13, params.clone());
                let mut memory = vec![Block::default(); params.block_count()];
                let mut out = vec![0u8; expected.len()];
                while !stop.load(Ordering::Relaxed) {
                    argon2
                        .hash_password_into_with_memory(
                            password.as_bytes(),
                            &salt,
                            &mut out,
                            &mut memory,
                        )
                        .expect("argon2");
                    assert_eq!(out, expected, "the password verifies");
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(seconds));
    stop.store(true, Ordering::Relaxed);
    for handle in handles {
        handle.join().expect("worker");
    }
    // Verifications finished while the last ones completed are counted over the real time.
    let elapsed = start.elapsed().as_secs_f64();
    let verifies = done.load(Ordering::Relaxed);
    println!(
        "RESULT threads={threads} seconds={elapsed:.3} verifies={verifies} rate={:.2}",
        verifies as f64 / elapsed
    );
}
