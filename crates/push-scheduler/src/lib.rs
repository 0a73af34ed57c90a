//! push-scheduler: the scheduled Web Push notifications of the nutrition product.

pub mod settings;
pub mod startup;

pub use settings::Settings;
pub use startup::Application;
