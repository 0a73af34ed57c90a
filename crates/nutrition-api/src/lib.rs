//! nutrition-api: the signed-in user's routes under `/me`.

pub mod settings;
pub mod startup;

pub use settings::Settings;
pub use startup::Application;
