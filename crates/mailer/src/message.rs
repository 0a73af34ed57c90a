//! Turning a queued row into a MIME message with a plain-text and an HTML part.
//!
//! Header values come from outside (a buyer's name from the payment provider, a user's name from
//! sign-up): CR, LF and other control characters are replaced by spaces before they reach a
//! header, so no value can add a header or a recipient. A message that still cannot be built is
//! reported as an error for the sender to park, never a panic.

use std::str::FromStr;

use lettre::Message;
use lettre::message::{Mailbox, MultiPart};

use crate::store::QueuedMail;

/// The longest display name or subject put in a header, in characters.
pub const MAX_HEADER_CHARS: usize = 200;

/// `value` fit for a header: control characters (CR and LF among them) become spaces, runs of
/// white space collapse, the ends are trimmed and the length is bounded.
pub fn header_safe(value: &str) -> String {
    let mut out = String::with_capacity(value.len().min(MAX_HEADER_CHARS * 4));
    let mut space = false;
    for c in value.chars() {
        if c.is_control() || c.is_whitespace() {
            space = !out.is_empty();
            continue;
        }
        if out.chars().count() >= MAX_HEADER_CHARS {
            break;
        }
        if space {
            out.push(' ');
            space = false;
        }
        out.push(c);
    }
    out
}

/// The message for `mail` from `from`, or why it cannot be built.
pub fn build(from: &Mailbox, mail: &QueuedMail) -> Result<Message, String> {
    let address = lettre::Address::from_str(mail.to_address.trim())
        .map_err(|err| format!("unusable recipient address: {err}"))?;
    let name = mail
        .to_name
        .as_deref()
        .map(header_safe)
        .filter(|n| !n.is_empty());
    let message = Message::builder()
        .from(from.clone())
        .to(Mailbox::new(name, address))
        .subject(header_safe(&mail.subject))
        .multipart(MultiPart::alternative_plain_html(
            mail.text_body.clone(),
            mail.html_body.clone(),
        ))
        .map_err(|err| format!("the message cannot be built: {err}"))?;
    Ok(message)
}

/// `s` with the five markup-special characters escaped, for values put into HTML bodies and
/// attributes, and into XML (an appcast) alike: the one escaper of the workspace. Control
/// characters other than tab and line breaks are dropped, since XML 1.0 cannot carry them at all.
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && !matches!(c, '\n' | '\t' | '\r') => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mail(name: Option<&str>, subject: &str, to: &str) -> QueuedMail {
        QueuedMail {
            id: 1,
            to_address: to.to_owned(),
            to_name: name.map(str::to_owned),
            subject: subject.to_owned(),
            text_body: "text".to_owned(),
            html_body: "<p>html</p>".to_owned(),
            attempts: 1,
        }
    }

    fn head(message: &Message) -> String {
        let raw = String::from_utf8(message.formatted()).expect("utf-8");
        raw.split("\r\n\r\n").next().unwrap_or("").to_owned()
    }

    #[test]
    fn control_characters_never_reach_a_header() {
        assert_eq!(
            header_safe("Evil\r\nBcc: v@example.com"),
            "Evil Bcc: v@example.com"
        );
        assert_eq!(header_safe("  a\t\u{0}b \u{85} "), "a b");
        assert_eq!(header_safe(&"x".repeat(500)).len(), MAX_HEADER_CHARS);
        let from = Mailbox::from_str("App <app@example.com>").expect("from");
        let m = build(
            &from,
            &mail(
                Some("Evil\r\nBcc: victim@example.com"),
                "Hi\r\nBcc: victim@example.com",
                "buyer@example.com",
            ),
        )
        .expect("built");
        let head = head(&m);
        assert!(
            !head
                .lines()
                .any(|l| l.to_ascii_lowercase().starts_with("bcc")),
            "{head}"
        );
        let to: Vec<String> = m.envelope().to().iter().map(ToString::to_string).collect();
        assert_eq!(to, vec!["buyer@example.com".to_owned()]);
    }

    #[test]
    fn a_bad_address_is_an_error_not_a_panic() {
        let from = Mailbox::from_str("App <app@example.com>").expect("from");
        assert!(build(&from, &mail(None, "s", "not an address")).is_err());
        assert!(build(&from, &mail(None, "s", "a@b\r\nBcc: c@d")).is_err());
    }

    #[test]
    fn both_parts() {
        let from = Mailbox::from_str("App <app@example.com>").expect("from");
        let m = build(&from, &mail(Some("Ada"), "s", "a@example.com")).expect("built");
        let raw = String::from_utf8(m.formatted()).expect("utf-8");
        assert!(raw.contains("multipart/alternative"), "{raw}");
        assert!(
            raw.contains("text/plain") && raw.contains("text/html"),
            "{raw}"
        );
    }

    #[test]
    fn html_is_escaped() {
        assert_eq!(escape_html("<b>&\"x'"), "&lt;b&gt;&amp;&quot;x&#39;");
    }
}
