//! Black-box tests of licence-server against a real MariaDB database.

mod helpers;
mod migrations;
mod operations;
