//! nutrition-api: the signed-in user's routes under `/me`.

pub mod error;
pub mod import;
pub mod input;
pub mod model;
pub mod openapi;
pub mod repo;
pub mod routes;
pub mod settings;
pub mod startup;
pub mod state;

pub use settings::Settings;
pub use startup::Application;
