//! Subcommands for the people running the service: create a licence by hand, look at one with
//! its activations and e-mails, free an installation's slot, disable or enable a licence, and
//! queue its e-mail again. Each prints one JSON object on stdout; errors go to stderr with a
//! non-zero exit status. Mail queued here is delivered by the running service's sender.

use std::process::ExitCode;

use chrono::{NaiveDateTime, Utc};
use clap::Subcommand;
use domain::licensing::{Plan, Status};
use serde_json::{Value, json};
use service_kit::{Env, Secret};
use url::Url;

use crate::clock::rfc3339;
use crate::mail;
use crate::repo::licences::{self, LicenceRow, NewLicence};
use crate::repo::{self, Db, DbError, activations, buyers, outbox};
use crate::seat_links::Links;

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
    /// Move a licence to the `stable` or the `beta` update channel: a beta licence is offered
    /// beta releases as well as stable ones.
    Channel {
        #[arg(long)]
        key: String,
        channel: crate::releases::Channel,
    },
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
    Db(#[from] DbError),
}

/// Runs `command` against the database at `url`, through the same repository functions as the
/// service, on a pool of one connection.
pub async fn run(url: &Secret, command: AdminCommand, env: &Env) -> ExitCode {
    let links = MailLinks::from_env(env);
    let outcome = match crate::db::connect_options(url) {
        Err(e) => Err(e.to_string()),
        Ok(opts) => {
            let db = Db::new(crate::db::pool(&opts, 1));
            execute(&db, command, &links)
                .await
                .map_err(|e| e.to_string())
        }
    };
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

async fn execute(db: &Db, command: AdminCommand, links: &MailLinks) -> Result<Value, AdminError> {
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
            let new = NewLicence {
                id: repo::new_id().into(),
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
            };
            let links = if no_email { None } else { links.get() };
            let licence = licences::create(db, &new, !no_email, links, now).await?;
            describe(db, &licence).await
        }
        AdminCommand::Show { key } => {
            let licence = by_key(db, &key).await?;
            describe(db, &licence).await
        }
        AdminCommand::Release { key, instance_id } => {
            let licence = by_key(db, &key).await?;
            let released = activations::release(db, &licence.license_key, &instance_id).await?;
            if released == 0 {
                return Err(AdminError::NoInstance(licence.license_key, instance_id));
            }
            describe(db, &licence).await
        }
        AdminCommand::Disable { key } => {
            let licence = by_key(db, &key).await?;
            if licence.disabled_at.is_none() {
                licences::set_disabled(db, &licence.id, Some(now.naive_utc()), now.naive_utc())
                    .await?;
            }
            let licence = licences::get(db, &licence.id).await?;
            describe(db, &licence).await
        }
        AdminCommand::Enable { key } => {
            let licence = by_key(db, &key).await?;
            licences::enable(db, &licence.id, now.naive_utc()).await?;
            let licence = licences::get(db, &licence.id).await?;
            describe(db, &licence).await
        }
        AdminCommand::Export { email } => buyers::export(db, email.trim())
            .await?
            .ok_or(AdminError::NoBuyer),
        AdminCommand::Erase { email } => {
            let erased = buyers::erase(db, email.trim()).await?;
            if erased.licences == 0 && erased.emails == 0 {
                return Err(AdminError::NoBuyer);
            }
            Ok(json!({ "erasedLicences": erased.licences, "erasedEmails": erased.emails }))
        }
        AdminCommand::Channel { key, channel } => {
            let licence = by_key(db, &key).await?;
            repo::updates::set_channel(db, &licence.license_key, channel).await?;
            Ok(json!({ "key": licence.license_key, "channel": channel.as_str() }))
        }
        AdminCommand::ResendEmail { key } => {
            let licence = by_key(db, &key).await?;
            let mail_links = links.get();
            outbox::enqueue(db, &mail::licence_email(&licence, mail_links, now)).await?;
            if let Some(l) = mail_links {
                let feed = crate::releases::SparkleFeed::of(l.base, l.secret, licence.id.as_str());
                repo::updates::remember_feed(db, &licence.id, &feed.token).await?;
            }
            describe(db, &licence).await
        }
    }
}

/// What the e-mails queued here sign their seat links with: `PUBLIC_BASE_URL` and
/// `DOWNLOAD_SIGNING_SECRET` when the environment holds them as the service takes them. The
/// commands need only `DATABASE_URL`, so without them the e-mail goes out without the link (the
/// buyer can ask the seat page for one) and a warning says so.
struct MailLinks(Option<(Url, Secret)>);

impl MailLinks {
    fn from_env(env: &Env) -> Self {
        let base = env.http_url(
            crate::settings::PUBLIC_BASE_URL,
            "https://licences.example.com",
        );
        let secret = env.secret(
            crate::settings::DOWNLOAD_SIGNING_SECRET,
            crate::settings::MIN_SIGNING_SECRET_LEN,
        );
        Self(base.ok().zip(secret.ok()))
    }

    fn get(&self) -> Option<Links<'_>> {
        let links = self.0.as_ref().map(|(base, secret)| Links {
            base,
            secret: secret.expose().as_bytes(),
        });
        if links.is_none() {
            eprintln!(
                "warning: PUBLIC_BASE_URL and DOWNLOAD_SIGNING_SECRET are not both set; the e-mail \
                 carries no seat link"
            );
        }
        links
    }
}

async fn by_key(db: &Db, key: &str) -> Result<LicenceRow, AdminError> {
    let key = domain::licensing::normalise_key(key);
    licences::by_key(db, &key)
        .await?
        .ok_or(AdminError::NoLicence(key))
}

fn time(t: Option<NaiveDateTime>) -> Value {
    t.map_or(Value::Null, |t| Value::String(rfc3339(t.and_utc())))
}

async fn describe(db: &Db, licence: &LicenceRow) -> Result<Value, AdminError> {
    let activations: Vec<Value> = activations::list(db, &licence.id)
        .await?
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
    let emails: Vec<Value> = outbox::for_licence(db, &licence.id)
        .await?
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
    let channel = repo::updates::channel(db, &licence.id)
        .await?
        .unwrap_or(crate::releases::Channel::Stable);
    Ok(json!({
        "id": licence.id,
        "key": licence.license_key,
        "status": licence.status().as_str(),
        "disabledAt": time(licence.disabled_at),
        "hasAccess": licence.has_access(Utc::now()),
        "plan": plan.as_str(),
        "features": plan.features(),
        "dailyQuota": plan.daily_quota(),
        "channel": channel.as_str(),
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
