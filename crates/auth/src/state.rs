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
}

impl AppState {
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
                keys.push(rate_limit::email_key(route, &email));
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
