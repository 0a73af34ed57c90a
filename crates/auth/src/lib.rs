//! The auth service: sign-up, sign-in and sessions for the nutrition product, served at
//! `/api/auth/*` for the better-auth client, plus the sign-in and sign-up pages.

pub mod routes;
pub mod settings;
pub mod startup;

pub use settings::Settings;
pub use startup::Application;
