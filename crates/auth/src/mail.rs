//! The mails auth sends, in Italian: plain text and HTML, the link in both.

use mailer::message::escape_html;

use crate::repo::outbox::{KIND_EMAIL_VERIFICATION, KIND_PASSWORD_RESET, NewMail};

/// The mail with a password reset link; address it with `.to(&email)`.
pub fn password_reset(link: &str, name: &str) -> NewMail {
    compose(
        KIND_PASSWORD_RESET,
        name,
        "Reimposta la tua password",
        "abbiamo ricevuto una richiesta di reimpostare la password del tuo account. Per scegliere \
         una nuova password apri questo link entro un'ora:",
        "Reimposta la password",
        "Se non sei stato tu, ignora questa e-mail: la tua password resta quella di prima.",
        link,
    )
}

/// The mail with an address verification link; address it with `.to(&email)`.
pub fn email_verification(link: &str, name: &str) -> NewMail {
    compose(
        KIND_EMAIL_VERIFICATION,
        name,
        "Conferma il tuo indirizzo e-mail",
        "per confermare che questo indirizzo e-mail è tuo apri questo link:",
        "Conferma l'indirizzo",
        "Se non hai creato tu un account, ignora questa e-mail.",
        link,
    )
}

fn compose(
    kind: &'static str,
    name: &str,
    subject: &str,
    lead: &str,
    button: &str,
    footer: &str,
    link: &str,
) -> NewMail {
    let name = name.trim();
    let greeting = if name.is_empty() {
        "Ciao,".to_owned()
    } else {
        format!("Ciao {name},")
    };
    let text = format!("{greeting}\n\n{lead}\n\n{link}\n\n{footer}\n");
    let html = format!(
        "<!doctype html>\n<html lang=\"it\"><body style=\"font-family: sans-serif\">\n\
         <p>{greeting}</p>\n<p>{lead}</p>\n\
         <p><a href=\"{href}\">{button}</a></p>\n\
         <p style=\"font-size: 0.9em\">{link_text}</p>\n\
         <p>{footer}</p>\n</body></html>\n",
        greeting = escape_html(&greeting),
        lead = escape_html(lead),
        href = escape_html(link),
        button = escape_html(button),
        link_text = escape_html(link),
        footer = escape_html(footer),
    );
    NewMail {
        to: String::new(),
        to_name: Some(name.to_owned()).filter(|n| !n.is_empty()),
        subject: subject.to_owned(),
        text,
        html,
        kind,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_and_name_in_both_parts_escaped_in_html() {
        let m =
            password_reset("https://app.example.com/reset?token=a&b", "<Ada>").to("a@example.com");
        assert_eq!(m.to, "a@example.com");
        assert_eq!(m.kind, KIND_PASSWORD_RESET);
        assert!(m.text.contains("https://app.example.com/reset?token=a&b"));
        assert!(m.text.contains("Ciao <Ada>,"));
        assert!(
            m.html
                .contains("href=\"https://app.example.com/reset?token=a&amp;b\"")
        );
        assert!(m.html.contains("Ciao &lt;Ada&gt;,"));
        assert!(!m.html.contains("<Ada>"));
    }

    #[test]
    fn verification_without_a_name() {
        let m = email_verification("https://x.example/v", "  ");
        assert_eq!(m.kind, KIND_EMAIL_VERIFICATION);
        assert!(m.text.starts_with("Ciao,\n"));
        assert_eq!(m.to_name, None);
        assert_eq!(m.subject, "Conferma il tuo indirizzo e-mail");
    }
}
