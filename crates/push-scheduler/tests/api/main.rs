//! Black-box tests of push-scheduler against a real Postgres database.

mod batch;
mod due;
mod helpers;
mod jobs;
mod language;
mod operations;
mod safety;
mod tarpit;
