//! What the handlers share.

use std::sync::Arc;

use actix_web::HttpRequest;
use nutrition_store::PgPool;

use crate::error::ApiError;
use crate::repo::rate_limits;
use crate::settings::RateLimit;
use crate::settings::Settings;
use crate::{client, keys};

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
        self.limit(
            req,
            route,
            email.map(|e| ("email", e)),
            self.settings.rate_limit,
        )
        .await
    }

    /// Counts an attempt at `route` against the client's address and `subject` (a kind and a
    /// value, such as the e-mail address or the user id) under `limit`. Both counters count
    /// every attempt, even when the first is already over the limit. Keys are stored as keyed
    /// hashes, so the table never holds an address.
    pub async fn limit(
        &self,
        req: &HttpRequest,
        route: &'static str,
        subject: Option<(&'static str, &str)>,
        limit: RateLimit,
    ) -> Result<(), ApiError> {
        let secret = self.settings.auth.secret.expose();
        let mut keys = Vec::with_capacity(2);
        if let Some(ip) = client::ip(req, &self.settings.trusted_proxies) {
            keys.push(keys::rate_limit_key(secret, route, "ip", &ip.to_string()));
        }
        if let Some((kind, value)) = subject {
            keys.push(keys::rate_limit_key(secret, route, kind, value));
        }
        nutrition_store::run(&self.pool, move |conn| {
            let mut wait = 0;
            for key in keys {
                if let Err(secs) = rate_limits::hit(conn, &key, limit)? {
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
