//! Plain sync diesel on `&mut PgConnection`, one module per table group. Limits ("one running
//! fast") are enforced by the database, never by reading first and writing after.

pub mod devices;
pub mod fasts;
pub mod plans;
pub mod profile;
