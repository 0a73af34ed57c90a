//! licence-server: licences of the desktop app on MariaDB.

pub mod db;
pub mod settings;
pub mod startup;

pub use settings::Settings;
pub use startup::Application;
