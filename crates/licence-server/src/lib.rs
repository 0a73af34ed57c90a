//! licence-server: licences of the desktop app on MariaDB: activation, tokens, releases and
//! signed downloads, the Lemon Squeezy webhook, plans and the daily quota, licence e-mails.

pub mod admin;
pub mod clock;
pub mod db;
pub mod error;
pub mod lease;
pub mod mail;
pub mod openapi;
pub mod payments;
pub mod releases;
pub mod repo;
pub mod routes;
pub mod schema;
pub mod seat_links;
pub mod settings;
pub mod signing;
pub mod startup;
pub mod tokens;
pub mod wire;

pub use settings::Settings;
pub use startup::{Application, Options};
