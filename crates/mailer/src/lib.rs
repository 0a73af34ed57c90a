//! The one e-mail outbox sender of the workspace.
//!
//! A service queues mail in its own database inside the transaction that causes it, so that a
//! request is never answered before its mail is stored and an SMTP outage never fails a request.
//! This crate delivers the queue: [`settings`] reads and checks `SMTP_URL` and `MAIL_FROM`,
//! [`message`] turns a stored row into a MIME message (headers never carry CR or LF), and
//! [`sender`] runs the background loop over a [`store::Store`] that each service implements for
//! its database.

pub mod message;
pub mod sender;
pub mod settings;
pub mod store;

pub use sender::{Health, Mailer, Options, SenderReadiness, export_metrics};
pub use settings::SmtpSettings;
pub use store::{QueuedMail, Store};
