//! Black-box tests of nutrition-api against a real Postgres database.

mod fasting;
mod helpers;
mod operations;
mod plans;
