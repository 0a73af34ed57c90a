//! Every query of the auth service, as plain sync diesel on `&mut PgConnection`, one module per
//! table. Handlers call these inside `nutrition_store::run`, in a transaction where several
//! writes must stand or fall together.

pub mod accounts;
pub mod outbox;
pub mod rate_limits;
pub mod sessions;
pub mod users;
pub mod verification;
