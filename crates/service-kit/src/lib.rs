//! Plumbing that every service of the workspace shares, so that the four binaries behave the same
//! way at their edges: how settings are read and rejected, how errors look on the wire, how health
//! is reported and how migrations are applied when several replicas start at once.

pub mod adb;
pub mod cli;
pub mod config;
pub mod db;
pub mod files;
pub mod fixed;
pub mod http;
pub mod ids;
pub mod metrics;
pub mod openapi;
pub mod probe;
pub mod telemetry;
pub mod time;

pub use config::{ConfigError, Env, Secret, ServerSettings};
