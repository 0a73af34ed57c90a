//! Business rules of both products as pure functions: nothing here reads a clock, a database or
//! the network, so every rule is tested directly and reused by every service.
//!
//! Time is always passed in. "Today", days, weeks and months are those of the product time zone,
//! Europe/Rome, whose daylight-saving changes make some days 23 or 25 hours long.

pub mod email;
pub mod fasting;
pub mod licensing;
pub mod meals;
pub mod notifications;
pub mod protocol;
pub mod recipes;
pub mod rome;
pub mod stats;
pub mod zones;
