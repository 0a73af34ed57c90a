//! The one place where the account routes hand a mail to the outbox, so that they do not depend
//! on how mail is queued and sent.

use diesel::PgConnection;

use crate::error::ApiError;
use crate::state::AppState;

/// The mails the account routes send, each carrying one link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkMail {
    PasswordReset,
    EmailVerification,
}

/// Whether this service can send mail; without it the mail routes answer 503 `EMAIL_DISABLED`
/// and the pages hide their links.
pub fn enabled(_state: &AppState) -> bool {
    false
}

/// Queues a mail inside the caller's transaction, so that it is sent if and only if the
/// transaction commits.
pub fn queue(
    _conn: &mut PgConnection,
    _kind: LinkMail,
    _to: &str,
    _name: &str,
    _link: &str,
) -> Result<(), ApiError> {
    Err(ApiError::EmailDisabled)
}
