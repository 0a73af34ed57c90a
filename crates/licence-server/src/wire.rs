//! JSON shapes of the contract that several routes share.

use chrono::{DateTime, Utc};
use domain::licensing::{self, ACTIVATION_LIMIT, Plan};
use serde::Serialize;

use crate::clock::rfc3339;
use crate::repo::licences::LicenceAccess;

/// `license` in the answers of activate, validate and deactivate.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LicenceView {
    pub key: String,
    /// The subscription state; `disabled` when an operator or a refund switched the licence off.
    /// `active`, `expired`, `cancelled`, … or `disabled`.
    pub status: String,
    #[schema(value_type = String, example = "pro")]
    pub plan: &'static str,
    #[schema(value_type = Vec<String>)]
    pub features: &'static [&'static str],
    pub daily_quota: u32,
    pub activation_limit: u32,
    pub activation_usage: u32,
    #[schema(required = true, format = DateTime)]
    pub expires_at: Option<String>,
}

impl LicenceView {
    pub fn new(licence: &LicenceAccess, activation_usage: u32) -> Self {
        let plan = licence.plan();
        Self {
            key: licence.license_key.clone(),
            status: if licence.disabled_at.is_some() {
                "disabled".to_owned()
            } else {
                licence.status().as_str().to_owned()
            },
            plan: plan.as_str(),
            features: plan.features(),
            daily_quota: plan.daily_quota(),
            activation_limit: ACTIVATION_LIMIT,
            activation_usage,
            expires_at: licence.expires_at.map(|t| rfc3339(t.and_utc())),
        }
    }
}

/// The quota of today: the answer of consume (also inside its 429) and, with features, of status.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageReport {
    #[schema(value_type = String, example = "pro")]
    pub plan: &'static str,
    pub used: u32,
    pub limit: u32,
    pub remaining: u32,
    /// The next midnight in Europe/Rome.
    #[schema(format = DateTime)]
    pub resets_at: String,
    #[serde(skip)]
    retry_after_secs: u64,
}

impl UsageReport {
    pub fn new(plan: Plan, used: u32, now: DateTime<Utc>) -> Self {
        let limit = plan.daily_quota();
        let resets_at = licensing::quota_resets_at(now);
        Self {
            plan: plan.as_str(),
            used,
            limit,
            remaining: licensing::remaining(limit, used),
            resets_at: rfc3339(resets_at),
            retry_after_secs: u64::try_from((resets_at - now).num_seconds().max(1)).unwrap_or(1),
        }
    }

    /// Seconds until the quota resets, for `Retry-After`.
    pub fn retry_after_secs(&self) -> u64 {
        self.retry_after_secs
    }
}

/// A fresh token and its expiry, as activate and validate return them.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct IssuedToken {
    /// HS256 JWT for `Authorization: Bearer`.
    pub token: String,
    #[schema(format = DateTime)]
    pub token_expires_at: String,
}

/// The offline lease of activate and validate (contract section 7).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct IssuedLease {
    /// Compact JWS (EdDSA, header `kid`) the desktop app verifies offline with a public key
    /// of `GET /api/license/public-keys`.
    pub lease: String,
    #[schema(format = DateTime)]
    pub lease_expires_at: String,
}
