//! The one place where the account routes hand a mail to the outbox, so that they do not depend
//! on how mail is queued and sent.

use crate::repo::Tx;

use crate::error::ApiError;
use crate::repo::outbox;
use crate::state::AppState;

/// The mails the account routes send, each carrying one link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkMail {
    PasswordReset,
    EmailVerification,
}

/// Whether this service can send mail; without it the mail routes answer 503 `EMAIL_DISABLED`
/// and the pages hide their links.
pub fn enabled(state: &AppState) -> bool {
    state.email_enabled()
}

/// Queues a mail inside the caller's transaction, so that it is sent if and only if the
/// transaction commits.
pub fn queue(
    conn: &mut Tx,
    kind: LinkMail,
    to: &str,
    name: &str,
    link: &str,
) -> Result<(), ApiError> {
    let mail = match kind {
        LinkMail::PasswordReset => crate::mail::password_reset(link, name),
        LinkMail::EmailVerification => crate::mail::email_verification(link, name),
    };
    outbox::enqueue(conn, &mail.to(to))?;
    Ok(())
}

/// Tells the sender a queued mail waits, once the transaction that queued it has committed.
pub fn wake(state: &AppState) {
    state.wake_mailer();
}
