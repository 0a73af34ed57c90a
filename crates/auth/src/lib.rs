//! The auth service: sign-up, sign-in and sessions for the nutrition product, served at
//! `/api/auth/*` for the better-auth client, plus the sign-in and sign-up pages.

pub mod activity;
pub mod answers;
pub mod body;
pub mod client;
pub mod codes;
pub mod csrf;
pub mod error;
pub mod google;
pub mod i18n;
pub mod import;
pub mod keys;
pub mod links;
pub mod mail;
pub mod mailbox;
pub mod openapi;
pub mod otp;
pub mod passkey;
pub mod password;
pub mod redirect;
pub mod repo;
pub mod routes;
pub mod settings;
pub mod startup;
pub mod state;
pub mod two_factor;

pub use settings::Settings;
pub use startup::Application;
