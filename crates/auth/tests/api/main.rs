//! Black-box tests of the auth service against a real Postgres database.

mod activity;
mod change_email;
mod cross_site;
mod delete_user;
mod email_otp;
mod flood;
mod helpers;
mod import;
mod language;
mod links;
mod mail;
mod mail_outbox;
mod manage;
mod oauth;
mod openapi;
mod operations;
mod origin;
mod pages;
mod passkey;
mod rate_limit;
mod robustness;
mod session;
mod sign_in;
mod sign_up;
mod two_factor;
