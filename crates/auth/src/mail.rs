//! The mails auth sends, in the recipient's language: plain text and HTML, the link in both. The
//! texts are in [`crate::i18n`].

use mailer::message::escape_html;

use crate::i18n::{self, Locale};
use crate::otp::Kind;
use crate::repo::outbox::{
    KIND_CHANGE_EMAIL, KIND_CHANGE_EMAIL_CODE, KIND_EMAIL_VERIFICATION, KIND_NEW_DEVICE,
    KIND_PASSWORD_RESET, KIND_RESET_CODE, KIND_SIGN_IN_CODE, KIND_TWO_FACTOR_CODE,
    KIND_VERIFICATION_CODE, NewMail,
};

/// The mail with a password reset link and the same reset as a code; address it with
/// `.to(&email)`.
pub fn password_reset(link: &str, code: &str, name: &str, locale: Locale) -> NewMail {
    link_mail(
        locale,
        KIND_PASSWORD_RESET,
        &i18n::texts(locale).reset_mail,
        name,
        link,
        Some(code),
    )
}

/// The mail with an address verification link and the same verification as a code; address it
/// with `.to(&email)`.
pub fn email_verification(link: &str, code: &str, name: &str, locale: Locale) -> NewMail {
    link_mail(
        locale,
        KIND_EMAIL_VERIFICATION,
        &i18n::texts(locale).verification_mail,
        name,
        link,
        Some(code),
    )
}

/// The mail to a new address with the link that moves the account to it; address it with
/// `.to(&new_email)`.
pub fn change_email(link: &str, name: &str, locale: Locale) -> NewMail {
    link_mail(
        locale,
        KIND_CHANGE_EMAIL,
        &i18n::texts(locale).change_email_mail,
        name,
        link,
        None,
    )
}

/// The mail after a sign-in from a browser and network the account has not used before, with
/// the link that ends every session and asks for a new password; address it with
/// `.to(&email)`. `device` names the browser and system (never the raw user agent), `network` is
/// as the activity keeps it.
pub fn new_device(
    link: &str,
    name: &str,
    device: &str,
    network: Option<&str>,
    locale: Locale,
) -> NewMail {
    let texts = i18n::texts(locale);
    let t = &texts.new_device_mail;
    let lead = t
        .lead
        .replace("{device}", device)
        .replace("{network}", network.unwrap_or(texts.unknown_network));
    compose(
        locale,
        KIND_NEW_DEVICE,
        name,
        t.subject,
        &lead,
        Some((t.button, link)),
        None,
        t.footer,
    )
}

/// The mail with a code alone, for `kind`; address it with `.to(&email)`.
pub fn code(kind: Kind, code: &str, name: &str, locale: Locale) -> NewMail {
    let texts = i18n::texts(locale);
    let (mail_kind, t) = match kind {
        Kind::SignIn => (KIND_SIGN_IN_CODE, &texts.sign_in_code_mail),
        Kind::EmailVerification => (KIND_VERIFICATION_CODE, &texts.verification_code_mail),
        Kind::ChangeEmail => (KIND_CHANGE_EMAIL_CODE, &texts.change_email_code_mail),
        Kind::TwoFactor => (KIND_TWO_FACTOR_CODE, &texts.two_factor_code_mail),
        Kind::ForgetPassword => (KIND_RESET_CODE, &texts.reset_code_mail),
    };
    compose(
        locale,
        mail_kind,
        name,
        t.subject,
        t.lead,
        None,
        Some(code),
        t.footer,
    )
}

/// A mail of `t`'s texts whose button opens `link`, with `code` as the other way to do the same.
fn link_mail(
    locale: Locale,
    kind: &'static str,
    t: &i18n::LinkMail,
    name: &str,
    link: &str,
    code: Option<&str>,
) -> NewMail {
    compose(
        locale,
        kind,
        name,
        t.subject,
        t.lead,
        Some((t.button, link)),
        code,
        t.footer,
    )
}

#[allow(clippy::too_many_arguments)]
fn compose(
    locale: Locale,
    kind: &'static str,
    name: &str,
    subject: &str,
    lead: &str,
    link: Option<(&str, &str)>,
    code: Option<&str>,
    footer: &str,
) -> NewMail {
    let texts = i18n::texts(locale);
    let name = name.trim();
    let greeting = if name.is_empty() {
        format!("{},", texts.greeting)
    } else {
        format!("{} {name},", texts.greeting)
    };
    let mut text = format!("{greeting}\n\n{lead}\n\n");
    let mut html = format!(
        "<!doctype html>\n<html lang=\"{}\"><body style=\"font-family: sans-serif\">\n\
         <p>{}</p>\n<p>{}</p>\n",
        locale.as_str(),
        escape_html(&greeting),
        escape_html(lead),
    );
    if let Some((button, link)) = link {
        text.push_str(&format!("{link}\n\n"));
        html.push_str(&format!(
            "<p><a href=\"{href}\">{button}</a></p>\n<p style=\"font-size: 0.9em\">{href}</p>\n",
            href = escape_html(link),
            button = escape_html(button),
        ));
    }
    if let Some(code) = code {
        // The second factor's code lives shorter than the others.
        let note = if kind == KIND_TWO_FACTOR_CODE {
            texts.two_factor_code_note
        } else {
            texts.code_note
        };
        let before = if link.is_some() {
            format!("{}\n\n", texts.or_enter_code)
        } else {
            String::new()
        };
        text.push_str(&format!("{before}    {code}\n\n{note}\n\n"));
        html.push_str(&format!(
            "<p>{}</p>\n<p style=\"font-size: 2em; letter-spacing: 0.2em\"><strong>{}</strong></p>\n\
             <p>{}</p>\n",
            escape_html(before.trim_end()),
            escape_html(code),
            escape_html(note),
        ));
    }
    text.push_str(&format!("{footer}\n"));
    html.push_str(&format!("<p>{}</p>\n</body></html>\n", escape_html(footer)));
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
        let m = password_reset(
            "https://app.example.com/reset?token=a&b",
            "012345",
            "<Ada>",
            Locale::It,
        )
        .to("a@example.com");
        assert_eq!(m.to, "a@example.com");
        assert_eq!(m.kind, KIND_PASSWORD_RESET);
        assert!(m.text.contains("https://app.example.com/reset?token=a&b"));
        assert!(m.text.contains("Ciao <Ada>,"));
        assert!(
            m.html
                .contains("href=\"https://app.example.com/reset?token=a&amp;b\"")
        );
        assert!(m.html.contains("Ciao &lt;Ada&gt;,"));
        assert!(m.text.contains("    012345\n"));
        assert!(m.html.contains("<strong>012345</strong>"));
        assert!(!m.html.contains("<Ada>"));
    }

    #[test]
    fn verification_without_a_name() {
        let m = email_verification("https://x.example/v", "123456", "  ", Locale::It);
        assert_eq!(m.kind, KIND_EMAIL_VERIFICATION);
        assert!(m.text.starts_with("Ciao,\n"));
        assert_eq!(m.to_name, None);
        assert_eq!(m.subject, "Conferma il tuo indirizzo e-mail");
    }

    #[test]
    fn a_code_alone() {
        let m = code(Kind::SignIn, "987654", "Ada", Locale::It);
        assert_eq!(m.kind, KIND_SIGN_IN_CODE);
        assert!(m.text.contains("    987654\n"), "{}", m.text);
        assert!(!m.text.contains("Oppure"));
        assert!(!m.html.contains("href"));
    }

    #[test]
    fn every_mail_in_english() {
        let link = "https://x.example/l";
        let mails = [
            password_reset(link, "111111", "Ada", Locale::En),
            email_verification(link, "222222", "Ada", Locale::En),
            change_email(link, "Ada", Locale::En),
            new_device(link, "Ada", "Firefox on Linux", None, Locale::En),
            code(Kind::SignIn, "333333", "Ada", Locale::En),
            code(Kind::EmailVerification, "333333", "Ada", Locale::En),
            code(Kind::ChangeEmail, "333333", "Ada", Locale::En),
            code(Kind::TwoFactor, "333333", "Ada", Locale::En),
            code(Kind::ForgetPassword, "333333", "Ada", Locale::En),
        ];
        for m in mails {
            assert!(m.text.starts_with("Hello Ada,\n"), "{}", m.text);
            assert!(m.html.contains("<html lang=\"en\">"));
            for italian in ["Ciao", "codice", "e-mail", "tuo", "sconosciuta"] {
                assert!(!m.text.contains(italian), "{italian}: {}", m.text);
                assert!(!m.subject.contains(italian), "{italian}: {}", m.subject);
            }
        }
        let m = new_device(link, "", "Firefox on Linux", None, Locale::En);
        assert!(m.text.starts_with("Hello,\n"));
        assert!(
            m.text.contains("Firefox on Linux, network unknown."),
            "{}",
            m.text
        );
        let m = code(Kind::TwoFactor, "444444", "Ada", Locale::En);
        assert!(m.text.contains("valid for 3 minutes"));
    }

    /// The Italian mails as they were before English came.
    #[test]
    fn italian_stays_as_it_was() {
        let m = password_reset("https://x.example/r", "012345", "Ada", Locale::It);
        assert_eq!(
            m.text,
            "Ciao Ada,\n\nabbiamo ricevuto una richiesta di reimpostare la password del tuo account. \
             Per scegliere una nuova password apri questo link entro un'ora:\n\n\
             https://x.example/r\n\nOppure inserisci questo codice nell'app:\n\n    012345\n\n\
             Il codice vale 5 minuti. Non comunicarlo a nessuno.\n\n\
             Se non sei stato tu, ignora questa e-mail: la tua password resta quella di prima.\n"
        );
        assert!(m.html.contains("<html lang=\"it\">"));
        let m = new_device(
            "https://x.example/n",
            "Ada",
            "Firefox su Linux",
            None,
            Locale::It,
        );
        assert!(
            m.text.contains("Firefox su Linux, rete sconosciuta."),
            "{}",
            m.text
        );
    }
}
