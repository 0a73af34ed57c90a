//! What every service needs to recognise a signed-in user. This module holds the settings that
//! auth and nutrition-api must share (the same secret and base URL); cookie verification, the
//! session lookup and the request guard build on them.

pub mod settings;

pub use settings::AuthSettings;
