//! Web Push for the product: VAPID configuration (RFC 8292) and key handling.

pub mod vapid;

pub use vapid::{VapidConfig, VapidKeyPair};
