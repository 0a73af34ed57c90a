//! What the handlers share.

use std::sync::Arc;

use actix_web::HttpRequest;
use nutrition_store::PgPool;

use crate::error::ApiError;
use crate::settings::Settings;
use crate::{client, rate_limit};

#[derive(Clone)]
pub struct AppState {
    pub settings: Arc<Settings>,
    pub pool: PgPool,
    /// Verified against when an e-mail address is unknown (see `password::decoy`).
    pub decoy_hash: Arc<str>,
    /// For the OAuth provider: connection reuse and a time-out.
    pub http: reqwest::Client,
    /// The e-mail sender; `None` without `SMTP_URL`.
    pub mailer: Option<mailer::Mailer>,
}

impl AppState {
    /// Whether mail can be sent: the routes and pages that need it check this first.
    pub fn email_enabled(&self) -> bool {
        self.mailer.is_some()
    }

    /// 503 `EMAIL_DISABLED` unless mail can be sent.
    pub fn require_email(&self) -> Result<(), ApiError> {
        if self.email_enabled() {
            Ok(())
        } else {
            Err(ApiError::EmailDisabled)
        }
    }

    /// Asks the sender to look at the outbox now; call it after committing a queued mail.
    pub fn wake_mailer(&self) {
        if let Some(mailer) = &self.mailer {
            mailer.wake();
        }
    }

    /// Counts an attempt at `route` against the client's address and, when known, the e-mail
    /// address; 429 when either is over the limit.
    pub async fn rate_limit(
        &self,
        req: &HttpRequest,
        route: &'static str,
        email: Option<&str>,
    ) -> Result<(), ApiError> {
        let ip = client::ip(req, &self.settings.trusted_proxies).map(|ip| ip.to_string());
        let email = email.map(str::to_owned);
        let limit = self.settings.rate_limit;
        nutrition_store::run(&self.pool, move |conn| {
            let mut keys = Vec::with_capacity(2);
            if let Some(ip) = ip {
                keys.push(format!("{route}:ip:{ip}"));
            }
            if let Some(email) = email {
                keys.push(format!("{route}:email:{email}"));
            }
            let mut wait = 0;
            // Both keys count every attempt, even when the first is already over the limit.
            for key in keys {
                if let Err(secs) = rate_limit::hit(conn, &key, limit)? {
                    wait = wait.max(secs);
                }
            }
            if wait > 0 {
                Err(ApiError::RateLimited { retry_after: wait })
            } else {
                Ok(())
            }
        })
        .await
    }
}
