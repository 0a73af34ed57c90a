//! The push crate against the test kit's fake push service, which verifies VAPID and decrypts
//! every message independently of the sending side.

mod checks;
mod classify;
mod delivery;
mod helpers;
mod policy;
mod vapid_cache;
