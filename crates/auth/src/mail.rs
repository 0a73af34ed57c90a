//! The mails auth sends, in Italian: plain text and HTML, the link in both.

use mailer::message::escape_html;

use crate::otp::Kind;
use crate::repo::outbox::{
    KIND_CHANGE_EMAIL, KIND_CHANGE_EMAIL_CODE, KIND_EMAIL_VERIFICATION, KIND_NEW_DEVICE,
    KIND_PASSWORD_RESET, KIND_RESET_CODE, KIND_SIGN_IN_CODE, KIND_TWO_FACTOR_CODE,
    KIND_VERIFICATION_CODE, NewMail,
};

/// Shown with every code: a code opens an account, so the mail says not to pass it on.
const CODE_NOTE: &str = "Il codice vale 5 minuti. Non comunicarlo a nessuno.";
/// The same for the second factor of a sign-in, whose code lives shorter.
const TWO_FACTOR_NOTE: &str = "Il codice vale 3 minuti. Non comunicarlo a nessuno.";

/// The mail with a password reset link and the same reset as a code; address it with
/// `.to(&email)`.
pub fn password_reset(link: &str, code: &str, name: &str) -> NewMail {
    compose(
        KIND_PASSWORD_RESET,
        name,
        "Reimposta la tua password",
        "abbiamo ricevuto una richiesta di reimpostare la password del tuo account. Per scegliere \
         una nuova password apri questo link entro un'ora:",
        Some(("Reimposta la password", link)),
        Some(code),
        "Se non sei stato tu, ignora questa e-mail: la tua password resta quella di prima.",
    )
}

/// The mail with an address verification link and the same verification as a code; address it
/// with `.to(&email)`.
pub fn email_verification(link: &str, code: &str, name: &str) -> NewMail {
    compose(
        KIND_EMAIL_VERIFICATION,
        name,
        "Conferma il tuo indirizzo e-mail",
        "per confermare che questo indirizzo e-mail è tuo apri questo link:",
        Some(("Conferma l'indirizzo", link)),
        Some(code),
        "Se non hai creato tu un account, ignora questa e-mail.",
    )
}

/// The mail to a new address with the link that moves the account to it; address it with
/// `.to(&new_email)`.
pub fn change_email(link: &str, name: &str) -> NewMail {
    compose(
        KIND_CHANGE_EMAIL,
        name,
        "Conferma il tuo nuovo indirizzo e-mail",
        "hai chiesto di usare questo indirizzo per il tuo account. Per confermarlo apri questo link \
         entro un'ora:",
        Some(("Conferma il nuovo indirizzo", link)),
        None,
        "Se non sei stato tu, ignora questa e-mail: il tuo account resta com'era.",
    )
}

/// The mail after a sign-in from a browser and network the account has not used before, with
/// the link that ends every session and asks for a new password; address it with
/// `.to(&email)`. `device` names the browser and system (never the raw user agent), `network` is
/// as the activity keeps it.
pub fn new_device(link: &str, name: &str, device: &str, network: &str) -> NewMail {
    let lead = format!(
        "qualcuno ha appena effettuato l'accesso al tuo account da un browser e una rete che non \
         avevamo mai visto: {device}, rete {network}. Se sei stato tu, non devi fare nulla. Se non \
         sei stato tu, apri questo link entro 7 giorni: chiuderemo tutte le sessioni e ti \
         chiederemo una nuova password."
    );
    compose(
        KIND_NEW_DEVICE,
        name,
        "Nuovo accesso al tuo account",
        &lead,
        Some(("Non sono stato io", link)),
        None,
        "Puoi vedere gli accessi recenti nelle impostazioni dell'app, alla voce Attività.",
    )
}

/// The mail with a code alone, for `kind`; address it with `.to(&email)`.
pub fn code(kind: Kind, code: &str, name: &str) -> NewMail {
    let (mail_kind, subject, lead, footer) = match kind {
        Kind::SignIn => (
            KIND_SIGN_IN_CODE,
            "Il tuo codice di accesso",
            "ecco il codice per accedere al tuo account:",
            "Se non hai chiesto tu di accedere, ignora questa e-mail.",
        ),
        Kind::EmailVerification => (
            KIND_VERIFICATION_CODE,
            "Il tuo codice di verifica",
            "ecco il codice per confermare che questo indirizzo e-mail è tuo:",
            "Se non hai creato tu un account, ignora questa e-mail.",
        ),
        Kind::ChangeEmail => (
            KIND_CHANGE_EMAIL_CODE,
            "Il tuo codice per cambiare indirizzo e-mail",
            "ecco il codice per usare questo indirizzo per il tuo account:",
            "Se non sei stato tu, ignora questa e-mail: il tuo account resta com'era.",
        ),
        Kind::TwoFactor => (
            KIND_TWO_FACTOR_CODE,
            "Il tuo codice di verifica in due passaggi",
            "ecco il codice per completare l'accesso al tuo account:",
            "Se non stai accedendo tu, qualcuno conosce la tua password: cambiala subito.",
        ),
        Kind::ForgetPassword => (
            KIND_RESET_CODE,
            "Il tuo codice per reimpostare la password",
            "ecco il codice per scegliere una nuova password:",
            "Se non sei stato tu, ignora questa e-mail: la tua password resta quella di prima.",
        ),
    };
    compose(mail_kind, name, subject, lead, None, Some(code), footer)
}

fn compose(
    kind: &'static str,
    name: &str,
    subject: &str,
    lead: &str,
    link: Option<(&str, &str)>,
    code: Option<&str>,
    footer: &str,
) -> NewMail {
    let name = name.trim();
    let greeting = if name.is_empty() {
        "Ciao,".to_owned()
    } else {
        format!("Ciao {name},")
    };
    let mut text = format!("{greeting}\n\n{lead}\n\n");
    let mut html = format!(
        "<!doctype html>\n<html lang=\"it\"><body style=\"font-family: sans-serif\">\n\
         <p>{}</p>\n<p>{}</p>\n",
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
        let note = if kind == KIND_TWO_FACTOR_CODE {
            TWO_FACTOR_NOTE
        } else {
            CODE_NOTE
        };
        let before = if link.is_some() {
            "Oppure inserisci questo codice nell'app:\n\n"
        } else {
            ""
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
        let m = password_reset("https://app.example.com/reset?token=a&b", "012345", "<Ada>")
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
        let m = email_verification("https://x.example/v", "123456", "  ");
        assert_eq!(m.kind, KIND_EMAIL_VERIFICATION);
        assert!(m.text.starts_with("Ciao,\n"));
        assert_eq!(m.to_name, None);
        assert_eq!(m.subject, "Conferma il tuo indirizzo e-mail");
    }

    #[test]
    fn a_code_alone() {
        let m = code(Kind::SignIn, "987654", "Ada");
        assert_eq!(m.kind, KIND_SIGN_IN_CODE);
        assert!(m.text.contains("    987654\n"), "{}", m.text);
        assert!(!m.text.contains("Oppure"));
        assert!(!m.html.contains("href"));
    }
}
