//! Black-box tests of push-scheduler against a real Postgres database.

mod helpers;
mod jobs;
mod operations;
mod safety;
