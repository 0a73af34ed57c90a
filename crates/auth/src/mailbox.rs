//! The one place where the account routes hand a mail to the outbox, so that they do not depend
//! on how mail is queued and sent.

use chrono::Utc;

use crate::error::ApiError;
use crate::i18n::Locale;
use crate::otp;
use crate::repo::{Tx, outbox};
use crate::state::AppState;

/// The mails the account routes send, each carrying one link and the same step as a code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkMail {
    PasswordReset,
    EmailVerification,
    /// To a new address; the link alone (a change of address has no code).
    ChangeEmail,
}

/// Whether this service can send mail; without it the mail routes answer 503 `EMAIL_DISABLED`
/// and the pages hide their links.
pub fn enabled(state: &AppState) -> bool {
    state.email_enabled()
}

/// Queues a mail inside the caller's transaction, so that it is sent if and only if the
/// transaction commits. The mail also carries a code for the same step (a new one, voiding the
/// last), for someone whose link would open another browser than the app they use: an
/// installed web app on a phone has its own cookies. Written in `locale`, the recipient's.
pub fn queue(
    conn: &mut Tx,
    secret: &str,
    kind: LinkMail,
    to: &str,
    name: &str,
    link: &str,
    locale: Locale,
) -> Result<(), ApiError> {
    let mail = match kind {
        LinkMail::PasswordReset => {
            let code = otp::issue(conn, secret, otp::Kind::ForgetPassword, to, Utc::now())?;
            crate::mail::password_reset(link, &code, name, locale)
        }
        LinkMail::EmailVerification => {
            let code = otp::issue(conn, secret, otp::Kind::EmailVerification, to, Utc::now())?;
            crate::mail::email_verification(link, &code, name, locale)
        }
        LinkMail::ChangeEmail => crate::mail::change_email(link, name, locale),
    };
    outbox::enqueue(conn, &mail.to(to))?;
    Ok(())
}

/// Queues a new code for `kind` alone, like [`queue`]: the code of `subject` (the address it
/// proves, or for a change of address `<userId>:<new address>`), mailed to `to` in `locale`.
pub fn queue_code(
    conn: &mut Tx,
    secret: &str,
    kind: otp::Kind,
    subject: &str,
    to: &str,
    name: &str,
    locale: Locale,
) -> Result<(), ApiError> {
    let code = otp::issue(conn, secret, kind, subject, Utc::now())?;
    outbox::enqueue(conn, &crate::mail::code(kind, &code, name, locale).to(to))?;
    Ok(())
}

/// Tells the sender a queued mail waits, once the transaction that queued it has committed.
pub fn wake(state: &AppState) {
    state.wake_mailer();
}
