//! Licence e-mails: what they say. Delivery is the shared sender's (`mailer`).
//!
//! Mail is queued in `email_outbox` inside the transaction that creates the licence, so a
//! purchase is never answered before its e-mail is safely stored, and an SMTP outage cannot fail
//! the webhook. The background sender of every replica drains the outbox (see `repo::outbox` for
//! how rows are claimed): a message that fails for a passing reason (connection refused, time-out,
//! a 4xx answer) is tried again after 30 s, doubling up to one hour between attempts, for as long
//! as it takes; one the server refuses for good (a 5xx answer, an unusable address, a message that
//! cannot be built) is set aside with its error for an operator, who can queue it again
//! (`admin resend-email`). Delivered and set-aside mail is deleted after 30 days.

use chrono::Utc;
use domain::licensing::{ACTIVATION_LIMIT, Plan};
use mailer::message::escape_html;

use crate::repo::licences::LicenceRow;
use crate::repo::outbox::NewEmail;

/// Timings of the sender; production uses the defaults, tests shorten them.
pub use mailer::Options as MailerOptions;

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
        licence_id: Some(licence.id.to_string()),
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
