//! Black-box tests of licence-server against a real MariaDB database and a real SMTP server.

mod admin;
mod hardening;
mod helpers;
mod licences;
mod migrations;
mod operations;
mod releases;
mod tokens;
mod usage;
mod webhook;
