//! Black-box tests of the auth service against a real Postgres database.

mod helpers;
mod operations;
