//! Licence e-mails: what they say, and the background sender that delivers the outbox over SMTP.
//!
//! Mail is queued in `email_outbox` inside the transaction that creates the licence, so a
//! purchase is never answered before its e-mail is safely stored, and an SMTP outage cannot fail
//! the webhook. The background sender of every replica drains the outbox (see `repo::outbox` for how
//! rows are claimed): a message that fails for a passing reason (connection refused, time-out,
//! a 4xx answer) is tried again after 30 s, doubling up to one hour between attempts, for as long
//! as it takes; one the server refuses for good (a 5xx answer, an unusable address) is set aside
//! with its error for an operator, who can queue it again (`admin resend-email`).
//!
//! Scheduling uses the system clock, not the application's [`crate::clock::Clock`]: retries are
//! about real elapsed time, whatever business day the application believes it is.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use domain::licensing::{ACTIVATION_LIMIT, Plan};
use lettre::message::{Mailbox, MultiPart};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use service_kit::Secret;
use service_kit::db::DbError;
use tokio::sync::Notify;

use crate::db::MyPool;
use crate::repo::licences::LicenceRow;
use crate::repo::outbox::{self, NewEmail, OutboxRow};

/// Timings of the sender. Production uses [`MailerOptions::default`]; tests shorten them.
#[derive(Debug, Clone)]
pub struct MailerOptions {
    /// How often the outbox is looked at when nothing wakes the sender.
    pub poll_interval: Duration,
    /// Pause after the first failed attempt; doubled after each further one.
    pub retry_base: Duration,
    /// Longest pause between two attempts.
    pub retry_max: Duration,
    /// How long a claimed message belongs to the sender that claimed it.
    pub lease: Duration,
    /// Longest wait for any single SMTP exchange.
    pub smtp_timeout: Duration,
}

impl Default for MailerOptions {
    fn default() -> Self {
        Self {
            poll_interval: Duration::from_secs(5),
            retry_base: Duration::from_secs(30),
            retry_max: Duration::from_secs(3600),
            lease: Duration::from_secs(300),
            smtp_timeout: Duration::from_secs(30),
        }
    }
}

impl MailerOptions {
    /// The pause after `attempts` failed attempts.
    pub fn backoff(&self, attempts: i32) -> Duration {
        let doublings = u32::try_from(attempts.saturating_sub(1).clamp(0, 20)).unwrap_or(20);
        self.retry_base
            .saturating_mul(2u32.saturating_pow(doublings))
            .min(self.retry_max)
    }
}

/// The e-mail that hands a licence key to its buyer: plain text and HTML, the key in both.
pub fn licence_email(licence: &LicenceRow) -> NewEmail {
    let plan = plan_name(licence.plan());
    let greeting = match licence.customer_name.as_deref().map(str::trim) {
        Some(name) if !name.is_empty() => format!("Hello {name},"),
        _ => "Hello,".to_owned(),
    };
    let key = &licence.license_key;
    let text_body = format!(
        "{greeting}\n\n\
         thank you for your purchase. Your licence key for the {plan} plan is:\n\n    {key}\n\n\
         Open the app, choose \"Activate licence\" and enter the key. One licence can be active \
         on up to {ACTIVATION_LIMIT} computers at a time; deactivate one in the app to move the \
         licence to another.\n\nKeep this e-mail: you will need the key again when you reinstall.\n"
    );
    let html_body = format!(
        "<!doctype html>\n<html><body style=\"font-family: sans-serif\">\n\
         <p>{greeting}</p>\n\
         <p>thank you for your purchase. Your licence key for the {plan} plan is:</p>\n\
         <p style=\"font-size: 1.3em; font-family: monospace\"><strong>{key}</strong></p>\n\
         <p>Open the app, choose &ldquo;Activate licence&rdquo; and enter the key. One licence can \
         be active on up to {ACTIVATION_LIMIT} computers at a time; deactivate one in the app to \
         move the licence to another.</p>\n\
         <p>Keep this e-mail: you will need the key again when you reinstall.</p>\n\
         </body></html>\n",
        greeting = escape_html(&greeting),
        key = escape_html(key),
    );
    let now = Utc::now().naive_utc();
    NewEmail {
        licence_id: Some(licence.id.clone()),
        to_address: licence.customer_email.clone(),
        to_name: licence.customer_name.clone(),
        subject: format!("Your {plan} licence key"),
        text_body,
        html_body,
        next_attempt_at: now,
        created_at: now,
    }
}

fn plan_name(plan: Plan) -> &'static str {
    match plan {
        Plan::Basic => "Basic",
        Plan::Pro => "Pro",
        Plan::Premium => "Premium",
        Plan::Annual => "Annual",
    }
}

fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Wakes the sender at once (after a purchase) instead of at its next poll.
#[derive(Debug, Clone, Default)]
pub struct MailWaker(Arc<Notify>);

impl MailWaker {
    pub fn wake(&self) {
        self.0.notify_one();
    }
}

/// Starts the background sender on the current runtime. A transport that cannot even be built (the
/// settings rule out most reasons) is logged, and the outbox simply waits for a fixed deployment:
/// the HTTP service runs regardless.
pub fn spawn_sender(
    pool: MyPool,
    smtp_url: &Secret,
    from: Mailbox,
    options: MailerOptions,
    waker: MailWaker,
) {
    let transport = match AsyncSmtpTransport::<Tokio1Executor>::from_url(smtp_url.expose()) {
        Ok(builder) => builder.timeout(Some(options.smtp_timeout)).build(),
        Err(err) => {
            tracing::error!(error = %err, "SMTP_URL cannot be used; licence e-mails stay queued");
            return;
        }
    };
    let sender = Sender {
        pool,
        transport,
        from,
        options,
    };
    tokio::spawn(sender.run(waker));
}

struct Sender {
    pool: MyPool,
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    options: MailerOptions,
}

enum Outcome {
    Sent,
    Retry(String),
    GiveUp(String),
}

impl Sender {
    async fn run(self, waker: MailWaker) {
        loop {
            let lease = chrono::Duration::from_std(self.options.lease)
                .unwrap_or(chrono::Duration::minutes(5));
            let claimed: Result<Vec<OutboxRow>, DbError> =
                service_kit::db::run(&self.pool, move |conn| {
                    outbox::claim(conn, Utc::now().naive_utc(), lease, 20).map_err(DbError::from)
                })
                .await;
            let batch = match claimed {
                Ok(rows) => rows,
                Err(err) => {
                    tracing::warn!(error = %err, "cannot read the e-mail outbox");
                    Vec::new()
                }
            };
            if batch.is_empty() {
                tokio::select! {
                    () = waker.0.notified() => {}
                    () = tokio::time::sleep(self.options.poll_interval) => {}
                }
                continue;
            }
            for row in batch {
                let outcome = self.deliver(&row).await;
                self.record(row, outcome).await;
            }
        }
    }

    async fn deliver(&self, row: &OutboxRow) -> Outcome {
        let to = match lettre::Address::from_str(row.to_address.trim()) {
            Ok(address) => Mailbox::new(row.to_name.clone(), address),
            Err(err) => return Outcome::GiveUp(format!("unusable recipient address: {err}")),
        };
        let message = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(row.subject.clone())
            .multipart(MultiPart::alternative_plain_html(
                row.text_body.clone(),
                row.html_body.clone(),
            ));
        let message = match message {
            Ok(m) => m,
            Err(err) => return Outcome::GiveUp(format!("the message cannot be built: {err}")),
        };
        match self.transport.send(message).await {
            Ok(_) => Outcome::Sent,
            Err(err) if err.is_permanent() => Outcome::GiveUp(err.to_string()),
            Err(err) => Outcome::Retry(err.to_string()),
        }
    }

    async fn record(&self, row: OutboxRow, outcome: Outcome) {
        let id = row.id;
        let now = Utc::now();
        let result = match outcome {
            Outcome::Sent => {
                tracing::info!(
                    outbox_id = id,
                    attempts = row.attempts,
                    "licence e-mail sent"
                );
                service_kit::db::run(&self.pool, move |conn| {
                    outbox::mark_sent(conn, id, now.naive_utc()).map_err(DbError::from)
                })
                .await
            }
            Outcome::Retry(error) => {
                let pause = self.options.backoff(row.attempts);
                tracing::warn!(outbox_id = id, attempts = row.attempts, ?pause, %error,
                    "licence e-mail not delivered; will retry");
                let at = now + chrono::Duration::from_std(pause).unwrap_or_default();
                service_kit::db::run(&self.pool, move |conn| {
                    outbox::retry_later(conn, id, at.naive_utc(), &error).map_err(DbError::from)
                })
                .await
            }
            Outcome::GiveUp(error) => {
                tracing::error!(outbox_id = id, %error, "licence e-mail refused for good");
                service_kit::db::run(&self.pool, move |conn| {
                    outbox::give_up(conn, id, now.naive_utc(), &error).map_err(DbError::from)
                })
                .await
            }
        };
        if let Err(err) = result {
            // The lease runs out and the message is tried again: at least once, never lost.
            tracing::warn!(outbox_id = id, error = %err, "cannot record the delivery outcome");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_maximum() {
        let o = MailerOptions::default();
        assert_eq!(o.backoff(1), Duration::from_secs(30));
        assert_eq!(o.backoff(2), Duration::from_secs(60));
        assert_eq!(o.backoff(4), Duration::from_secs(240));
        assert_eq!(o.backoff(50), Duration::from_secs(3600));
        assert_eq!(o.backoff(0), Duration::from_secs(30));
    }

    #[test]
    fn html_is_escaped() {
        assert_eq!(escape_html("<b>&\"x'"), "&lt;b&gt;&amp;&quot;x&#39;");
    }
}
