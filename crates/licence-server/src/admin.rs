//! Subcommands for the people running the service: create a licence by hand, look at one with
//! its activations and e-mails, free an installation's slot, disable or enable a licence, and
//! queue its e-mail again. Each prints one JSON object on stdout; errors go to stderr with a
//! non-zero exit status. Mail queued here is delivered by the running service's sender.

use std::process::ExitCode;

use chrono::{NaiveDateTime, Utc};
use clap::Subcommand;
use diesel::mysql::MysqlConnection;
use diesel::prelude::*;
use domain::licensing::{Plan, Status};
use serde_json::{Value, json};
use service_kit::Secret;

use crate::clock::rfc3339;
use crate::mail;
use crate::repo::licences::{self, LicenceRow, NewLicence};
use crate::repo::{self, activations, buyers, outbox};

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Create a licence by hand (a sale outside the payment provider, a replacement) and queue
    /// its e-mail.
    Create {
        /// Buyer's e-mail address.
        #[arg(long)]
        email: String,
        /// Buyer's name, used in the e-mail greeting.
        #[arg(long)]
        name: Option<String>,
        /// basic, pro, premium or annual (365 days from now).
        #[arg(long)]
        plan: Plan,
        /// Create the licence without e-mailing the key.
        #[arg(long)]
        no_email: bool,
    },
    /// Show a licence with its activations and e-mails.
    Show { key: String },
    /// Free the slot of one installation.
    Release { key: String, instance_id: String },
    /// Switch a licence off: it stops activating, validating and consuming.
    Disable { key: String },
    /// Switch a disabled (or refunded) licence back on.
    Enable { key: String },
    /// Queue the licence e-mail again.
    ResendEmail { key: String },
    /// Print every row about a buyer (licences, installations, usage, payment events, e-mails)
    /// as JSON: what they may ask to see or take elsewhere.
    Export {
        #[arg(long)]
        email: String,
    },
    /// Replace a buyer's name and address with a tombstone on their licences and e-mails; the
    /// licence keys and activations stay valid.
    Erase {
        #[arg(long)]
        email: String,
    },
}

#[derive(Debug, thiserror::Error)]
enum AdminError {
    #[error("no licence has the key {0}")]
    NoLicence(String),
    #[error("the licence {0} has no installation {1}")]
    NoInstance(String, String),
    #[error("no licence or e-mail names this address")]
    NoBuyer,
    #[error("invalid value: {0}")]
    Invalid(String),
    #[error(transparent)]
    Db(#[from] diesel::result::Error),
}

/// Runs `command` against the database at `url`.
pub fn run(url: &Secret, command: AdminCommand) -> ExitCode {
    let outcome = crate::db::connect(url)
        .map_err(|e| e.to_string())
        .and_then(|mut conn| execute(&mut conn, command).map_err(|e| e.to_string()));
    match outcome {
        Ok(value) => {
            println!("{value}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("{err}");
            ExitCode::FAILURE
        }
    }
}

fn execute(conn: &mut MysqlConnection, command: AdminCommand) -> Result<Value, AdminError> {
    let now = Utc::now();
    match command {
        AdminCommand::Create {
            email,
            name,
            plan,
            no_email,
        } => {
            let email = email.trim().to_owned();
            if email.len() > 320 || !email.contains('@') || email.contains(char::is_whitespace) {
                return Err(AdminError::Invalid(format!(
                    "{email} is not an e-mail address"
                )));
            }
            let name = name
                .map(|n| n.trim().chars().take(255).collect::<String>())
                .filter(|n| !n.is_empty());
            let licence = conn.transaction(|conn| {
                let licence = licences::insert(
                    conn,
                    &NewLicence {
                        id: repo::new_id(),
                        license_key: repo::new_licence_key(),
                        status: Status::Active.as_str().to_owned(),
                        plan: plan.as_str().to_owned(),
                        customer_email: email,
                        customer_name: name,
                        order_id: None,
                        subscription_id: None,
                        variant_id: None,
                        subscription_synced_at: None,
                        expires_at: plan.expiry_from(now).map(|t| t.naive_utc()),
                    },
                )?;
                if !no_email {
                    outbox::enqueue(conn, &mail::licence_email(&licence))?;
                }
                diesel::QueryResult::Ok(licence)
            })?;
            describe(conn, &licence)
        }
        AdminCommand::Show { key } => {
            let licence = by_key(conn, &key)?;
            describe(conn, &licence)
        }
        AdminCommand::Release { key, instance_id } => {
            let licence = by_key(conn, &key)?;
            // The licence row first, as activate and deactivate lock it: the trigger that
            // counts the seat updates that row, and the same order everywhere deadlocks nowhere.
            let released = conn.transaction(|conn| {
                licences::find_by_key_for_update(conn, &licence.license_key)?;
                activations::delete(conn, &licence.id, &instance_id)
            })?;
            if released == 0 {
                return Err(AdminError::NoInstance(licence.license_key, instance_id));
            }
            describe(conn, &licence)
        }
        AdminCommand::Disable { key } => {
            let licence = by_key(conn, &key)?;
            if licence.disabled_at.is_none() {
                licences::set_disabled(conn, &licence.id, Some(now.naive_utc()), now.naive_utc())?;
            }
            let licence = licences::by_id(conn, &licence.id)?;
            describe(conn, &licence)
        }
        AdminCommand::Enable { key } => {
            let licence = by_key(conn, &key)?;
            conn.transaction(|conn| {
                licences::set_disabled(conn, &licence.id, None, now.naive_utc())?;
                licences::reactivate_refunded(conn, &licence.id, now.naive_utc())?;
                diesel::QueryResult::Ok(())
            })?;
            let licence = licences::by_id(conn, &licence.id)?;
            describe(conn, &licence)
        }
        AdminCommand::Export { email } => {
            buyers::export(conn, email.trim())?.ok_or(AdminError::NoBuyer)
        }
        AdminCommand::Erase { email } => {
            let erased = buyers::erase(conn, email.trim())?;
            if erased.licences == 0 && erased.emails == 0 {
                return Err(AdminError::NoBuyer);
            }
            Ok(json!({ "erasedLicences": erased.licences, "erasedEmails": erased.emails }))
        }
        AdminCommand::ResendEmail { key } => {
            let licence = by_key(conn, &key)?;
            outbox::enqueue(conn, &mail::licence_email(&licence))?;
            describe(conn, &licence)
        }
    }
}

fn by_key(conn: &mut MysqlConnection, key: &str) -> Result<LicenceRow, AdminError> {
    let key = domain::licensing::normalise_key(key);
    licences::find_by_key(conn, &key)?.ok_or(AdminError::NoLicence(key))
}

fn time(t: Option<NaiveDateTime>) -> Value {
    t.map_or(Value::Null, |t| Value::String(rfc3339(t.and_utc())))
}

fn describe(conn: &mut MysqlConnection, licence: &LicenceRow) -> Result<Value, AdminError> {
    let activations: Vec<Value> = activations::list(conn, &licence.id)?
        .into_iter()
        .map(|a| {
            json!({
                "instanceId": a.instance_id,
                "instanceName": a.instance_name,
                "activatedAt": time(Some(a.created_at)),
                "lastValidatedAt": time(Some(a.last_validated_at)),
            })
        })
        .collect();
    let emails: Vec<Value> = outbox::for_licence(conn, &licence.id)?
        .into_iter()
        .map(|m| {
            json!({
                "id": m.id,
                "to": m.to_address,
                "subject": m.subject,
                "attempts": m.attempts,
                "queuedAt": time(Some(m.created_at)),
                "sentAt": time(m.sent_at),
                "gaveUpAt": time(m.gave_up_at),
                "lastError": m.last_error,
            })
        })
        .collect();
    let plan = licence.plan();
    Ok(json!({
        "id": licence.id,
        "key": licence.license_key,
        "status": licence.status().as_str(),
        "disabledAt": time(licence.disabled_at),
        "hasAccess": licence.has_access(Utc::now()),
        "plan": plan.as_str(),
        "features": plan.features(),
        "dailyQuota": plan.daily_quota(),
        "customerEmail": licence.customer_email,
        "customerName": licence.customer_name,
        "orderId": licence.order_id,
        "subscriptionId": licence.subscription_id,
        "expiresAt": time(licence.expires_at),
        "createdAt": time(Some(licence.created_at)),
        "activations": activations,
        "emails": emails,
    }))
}
