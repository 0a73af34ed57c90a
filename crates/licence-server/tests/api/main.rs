//! Black-box tests of licence-server against a real MariaDB database and a real SMTP server.

mod admin;
mod client;
mod client_binding;
mod client_updates;
mod hardening;
mod helpers;
mod licences;
mod mail;
mod migrations;
mod offline;
mod operations;
mod releases;
mod seats;
mod tokens;
mod updates;
mod usage;
mod webhook;
