//! Repository functions: plain sync diesel on `&mut MysqlConnection`, one module per table, run
//! on the blocking pool through `service_kit::db::run`. Flows that must hold under concurrent
//! requests (the activation limit, the daily quota, webhook idempotency) are enforced here, in
//! the database, by a row lock or a single conditional statement.

pub mod activations;
pub mod buyers;
pub mod deactivations;
pub mod events;
pub mod fixed;
pub mod idempotency;
pub mod licences;
pub mod outbox;
pub mod rate_limit;
pub mod usage;

use rand::Rng;

/// A random id in the form of a version 4 UUID, for the `CHAR(36)` primary keys.
pub fn new_id() -> String {
    let mut b: [u8; 16] = rand::rng().random();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = crate::signing::to_hex(&b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// A fresh licence key (see `domain::licensing::format_key`).
pub fn new_licence_key() -> String {
    let bytes: [u8; domain::licensing::KEY_RANDOM_BYTES] = rand::rng().random();
    domain::licensing::format_key(&bytes)
}

/// Whether a failed transaction may simply be run again: InnoDB chose it as a deadlock victim,
/// or a concurrent transaction inserted the same unique value first.
pub fn is_retryable(err: &diesel::result::Error) -> bool {
    use diesel::result::{DatabaseErrorKind, Error};
    matches!(
        err,
        Error::DatabaseError(
            DatabaseErrorKind::SerializationFailure | DatabaseErrorKind::UniqueViolation,
            _
        )
    )
}

/// Runs `attempt` again, up to five times in all, while it fails in a retryable way.
pub fn with_retries<T, E>(mut attempt: impl FnMut() -> Result<T, E>) -> Result<T, E>
where
    E: AsRetryable,
{
    let mut tries = 0;
    loop {
        tries += 1;
        match attempt() {
            Err(e) if tries < 5 && e.retryable() => {
                tracing::debug!(tries, "transaction conflicted; running it again");
            }
            other => return other,
        }
    }
}

pub trait AsRetryable {
    fn retryable(&self) -> bool;
}

impl AsRetryable for diesel::result::Error {
    fn retryable(&self) -> bool {
        is_retryable(self)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_look_like_uuids() {
        let id = super::new_id();
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "4");
        assert_ne!(id, super::new_id());
    }

    /// `bench/licence/statements.lua` sends the hot statements without the service, to measure
    /// what the database alone allows; it must send the very texts the service prepares.
    #[test]
    fn the_benchmark_sends_the_statements_the_service_prepares() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../bench/licence/statements.lua"
        );
        let lua = std::fs::read_to_string(path).expect("bench/licence/statements.lua");
        let squeezed = |sql: &str| sql.split_whitespace().collect::<String>();
        for (name, sql) in [
            ("SEAT", super::activations::SEAT_BY_ID),
            ("TAKE", super::rate_limit::TAKE),
            ("TAKE_ON_PLAN", super::usage::TAKE_ON_PLAN),
        ] {
            let opening = format!("local {name} = [[");
            let from = lua.find(&opening).expect(name) + opening.len();
            let to = from + lua[from..].find("]]").expect(name);
            assert_eq!(squeezed(&lua[from..to]), squeezed(sql), "{name}");
        }
    }
}
