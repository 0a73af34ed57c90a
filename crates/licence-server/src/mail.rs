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

use chrono::{DateTime, Utc};
use domain::licensing::{ACTIVATION_LIMIT, Plan};
use domain::locale::Locale;
use mailer::message::escape_html;

use crate::repo::licences::LicenceRow;
use crate::repo::outbox::NewEmail;
use crate::seat_links::Links;

/// Timings of the sender; production uses the defaults, tests shorten them.
pub use mailer::Options as MailerOptions;

/// The e-mail that hands a licence key to its buyer: plain text and HTML, the key in both, and
/// with `links` the address of the licence's seat page (contract section 12), signed at `now`.
pub fn licence_email(
    licence: &LicenceRow,
    links: Option<Links<'_>>,
    now: DateTime<Utc>,
) -> NewEmail {
    let plan = plan_name(licence.plan());
    let greeting = match licence.customer_name.as_deref().map(str::trim) {
        Some(name) if !name.is_empty() => format!("Hello {name},"),
        _ => "Hello,".to_owned(),
    };
    let key = &licence.license_key;
    let seats = links.map(|l| l.page_url(licence.id.as_str(), &licence.customer_email, now));
    let feed =
        links.map(|l| crate::releases::SparkleFeed::of(l.base, l.secret, licence.id.as_str()).url);
    let feed_text = feed.as_deref().map_or_else(String::new, |url| {
        format!(
            "On a Mac, the app's updates for this licence come from this address:\n\n    {url}\n\n"
        )
    });
    let feed_html = feed.as_deref().map_or_else(String::new, |url| {
        format!(
            "<p>On a Mac, the app's updates for this licence come from this address: \
             <code>{url}</code></p>\n",
            url = escape_html(url)
        )
    });
    let seats_text = seats.as_deref().map_or_else(String::new, |url| {
        format!(
            "See which computers use the licence, and release one, on this page (the link \
             works for 30 days; the page sends a new one when asked):\n\n    {url}\n\n"
        )
    });
    let seats_html = seats.as_deref().map_or_else(String::new, |url| {
        format!(
            "<p>See which computers use the licence, and release one, on \
             <a href=\"{url}\">the page of your licence</a> (the link works for 30 days; the page \
             sends a new one when asked).</p>\n",
            url = escape_html(url)
        )
    });
    let text_body = format!(
        "{greeting}\n\n\
         thank you for your purchase. Your licence key for the {plan} plan is:\n\n    {key}\n\n\
         Open the app, choose \"Activate licence\" and enter the key. One licence can be active \
         on up to {ACTIVATION_LIMIT} computers at a time; deactivate one in the app to move the \
         licence to another.\n\n{seats_text}{feed_text}Keep this e-mail: you will need the key again when you reinstall.\n"
    );
    let html_body = format!(
        "<!doctype html>\n<html><body style=\"font-family: sans-serif\">\n\
         <p>{greeting}</p>\n\
         <p>thank you for your purchase. Your licence key for the {plan} plan is:</p>\n\
         <p style=\"font-size: 1.3em; font-family: monospace\"><strong>{key}</strong></p>\n\
         <p>Open the app, choose &ldquo;Activate licence&rdquo; and enter the key. One licence can \
         be active on up to {ACTIVATION_LIMIT} computers at a time; deactivate one in the app to \
         move the licence to another.</p>\n\
         {seats_html}{feed_html}<p>Keep this e-mail: you will need the key again when you reinstall.</p>\n\
         </body></html>\n",
        greeting = escape_html(&greeting),
        key = escape_html(key),
    );
    let now = now.naive_utc();
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

/// The e-mail answering a request for seat links (`POST /licence/manage/link`): one fresh link
/// per licence of the address, in the language the request was made in.
pub fn seat_links_email(
    licences: &[LicenceRow],
    links: Links<'_>,
    locale: Locale,
    now: DateTime<Utc>,
) -> Option<NewEmail> {
    let first = licences.first()?;
    let items: Vec<(String, String)> = licences
        .iter()
        .map(|l| {
            let plan = plan_name(l.plan());
            // The key's last group tells a buyer with several licences which is which, without
            // putting the whole key in another mail.
            let tail = l.license_key.rsplit('-').next().unwrap_or_default();
            let label = match locale {
                Locale::It => format!("Licenza {plan} (…-{tail})"),
                Locale::En => format!("{plan} licence (…-{tail})"),
            };
            (label, links.page_url(l.id.as_str(), &l.customer_email, now))
        })
        .collect();
    let (subject, intro, outro) = match locale {
        Locale::It => (
            "Gestisci i computer della tua licenza",
            "ecco i link per vedere quali computer usano la tua licenza e liberarne uno. \
             Ogni link vale 30 giorni.",
            "Se non hai chiesto tu questi link, puoi ignorare questa e-mail.",
        ),
        Locale::En => (
            "Manage the computers of your licence",
            "here are the links to see which computers use your licence and release one. \
             Each link works for 30 days.",
            "If you did not ask for these links, you can ignore this e-mail.",
        ),
    };
    let greeting = match locale {
        Locale::It => "Ciao,",
        Locale::En => "Hello,",
    };
    let mut text_body = format!("{greeting}\n\n{intro}\n\n");
    let mut html_items = String::new();
    for (label, url) in &items {
        text_body.push_str(&format!("{label}:\n    {url}\n\n"));
        html_items.push_str(&format!(
            "<li><a href=\"{url}\">{label}</a></li>\n",
            url = escape_html(url),
            label = escape_html(label)
        ));
    }
    text_body.push_str(outro);
    text_body.push('\n');
    let html_body = format!(
        "<!doctype html>\n<html lang=\"{lang}\"><body style=\"font-family: sans-serif\">\n\
         <p>{greeting}</p>\n<p>{intro}</p>\n<ul>\n{html_items}</ul>\n<p>{outro}</p>\n\
         </body></html>\n",
        lang = locale.as_str(),
    );
    let now = now.naive_utc();
    Some(NewEmail {
        licence_id: Some(first.id.to_string()),
        to_address: first.customer_email.clone(),
        to_name: first.customer_name.clone(),
        subject: subject.to_owned(),
        text_body,
        html_body,
        next_attempt_at: now,
        created_at: now,
    })
}
