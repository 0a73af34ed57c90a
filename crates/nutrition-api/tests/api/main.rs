//! Black-box tests of nutrition-api against a real Postgres database.

mod helpers;
mod operations;
