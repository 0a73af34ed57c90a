//! push-scheduler: the scheduled Web Push notifications of the nutrition product.
//!
//! Jobs claim their slot, queue messages in an outbox in the same transaction, and a sender
//! drains the outbox; see ARCHITECTURE.md ("Scheduled pushes").

pub mod breaker;
pub mod deliver;
pub mod jobs;
pub mod openapi;
pub mod run;
pub mod scheduler;
pub mod settings;
pub mod startup;

pub use scheduler::Scheduler;
pub use settings::Settings;
pub use startup::Application;
