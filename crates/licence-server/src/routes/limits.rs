//! Per-client-address rate limits of activate, validate, deactivate and the webhook
//! (`LICENCE_RATE_LIMIT_PER_MINUTE`, `WEBHOOK_RATE_LIMIT_PER_MINUTE`), counted in MariaDB so
//! that replicas agree. The address is the peer's, or, behind a proxy listed in
//! `TRUSTED_PROXIES`, the first address of `X-Forwarded-For` from the right that is not a proxy;
//! an IPv6 address counts as its /64.

use std::net::IpAddr;

use actix_web::HttpRequest;
use ipnet::IpNet;
use rand::Rng;

use super::AppState;
use crate::error::ApiError;
use crate::repo::rate_limit::{self, Hit};

/// The counting window of every limit.
pub const WINDOW_SECS: u32 = 60;

#[derive(Debug, Clone, Copy)]
pub enum Bucket {
    /// activate, validate, deactivate together: what a licence-key guesser would use.
    Licence,
    Webhook,
}

/// Counts the request; 429 `RATE_LIMITED` with `Retry-After` beyond the limit.
pub async fn check(state: &AppState, req: &HttpRequest, bucket: Bucket) -> Result<(), ApiError> {
    let limit = Limit::of(state, req, bucket);
    service_kit::db::run(&state.pool, move |conn| limit.hit(conn)).await
}

/// One request's count in its bucket, settled before the blocking call so that a handler can
/// count it on the same connection as the rest of its work.
#[derive(Debug)]
pub struct Limit {
    name: &'static str,
    key: String,
    max: u32,
    prune: bool,
}

impl Limit {
    pub fn of(state: &AppState, req: &HttpRequest, bucket: Bucket) -> Self {
        // An IPv6 client counts as its /64: one host holds billions of addresses.
        let ip = client_ip(req, &state.settings.trusted_proxies)
            .map_or_else(|| "unknown".to_owned(), service_kit::http::client_network);
        let (name, max) = match bucket {
            Bucket::Licence => ("licence", state.settings.licence_rate_limit),
            Bucket::Webhook => ("webhook", state.settings.webhook_rate_limit),
        };
        Self {
            name,
            key: format!("{name}:{ip}"),
            max,
            prune: rand::rng().random_ratio(1, 1000),
        }
    }

    /// Counts the request; 429 `RATE_LIMITED` with `Retry-After` beyond the limit.
    pub fn hit(&self, conn: &mut diesel::MysqlConnection) -> Result<(), ApiError> {
        if self.prune {
            rate_limit::prune(conn)?;
        }
        match rate_limit::hit(conn, &self.key, self.max, WINDOW_SECS)? {
            Hit::Within => Ok(()),
            Hit::Refused(retry_after_secs) => {
                tracing::warn!(bucket = self.name, "rate limit reached");
                Err(ApiError::RateLimited { retry_after_secs })
            }
            // Refused rather than let through uncounted: counting is what stops a guesser.
            Hit::Full => Err(ApiError::DatabaseUnavailable(
                "every rate-limit counter is in use".to_owned(),
            )),
        }
    }
}

/// The client's address (see the module documentation).
pub fn client_ip(req: &HttpRequest, trusted: &[IpNet]) -> Option<IpAddr> {
    let peer = req.peer_addr().map(|a| a.ip())?;
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|net| net.contains(ip));
    if !is_trusted(&peer) {
        return Some(peer);
    }
    let entries: Vec<&str> = req
        .headers()
        .get_all("x-forwarded-for")
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect();
    for raw in entries.iter().rev() {
        match raw.parse::<IpAddr>() {
            Ok(ip) if is_trusted(&ip) => {}
            Ok(ip) => return Some(ip),
            Err(_) => break,
        }
    }
    Some(peer)
}
