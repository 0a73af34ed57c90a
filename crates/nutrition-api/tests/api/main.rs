//! Black-box tests of nutrition-api against a real Postgres database.

mod body;
mod corrections;
mod export;
mod fasting;
mod helpers;
mod hostile;
mod limits;
mod me;
mod notifications;
mod operations;
mod plans;
mod undo;
