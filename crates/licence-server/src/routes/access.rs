//! The access rules behind a token or a key: the licence must grant access now and the
//! installation must still hold its seat; and what a granted request gets back (a fresh token,
//! the `license` object).

use super::AppState;
use crate::error::ApiError;
use crate::lease::{LeaseClaims, lease_expiry};
use crate::releases::Offer;
use crate::repo::Db;
use crate::repo::activations::{self, ActivationRow, LicenceBy};
use crate::repo::licences::LicenceAccess;
use crate::tokens::Claims;
use crate::wire::{IssuedLease, IssuedToken, LicenceView};

/// A licence and one of its activations, both checked: the licence grants access now and the
/// installation still holds its slot.
pub struct Authorised {
    pub licence: LicenceAccess,
    pub activation: ActivationRow,
}

/// Checks what a token-bearing request needs, in one statement: the licence of `claims` (gone:
/// 401), its access (403 `LICENSE_INACTIVE`), the installation (403 `INSTANCE_NOT_ACTIVE`).
pub async fn authorise(state: &AppState, db: &Db, claims: Claims) -> Result<Authorised, ApiError> {
    let now = state.clock.now();
    let (licence, activation, _) = activations::seat(db, LicenceBy::Id(&claims.sub), &claims.iid)
        .await?
        .ok_or(ApiError::InvalidToken)?;
    check(licence, activation, now)
}

/// What a token-bearing updater request is offered: the rules of [`authorise`], except that a
/// licence whose access ended still holds its seat for the releases published before that end
/// (contract section 12, "Who gets what"); a licence offered nothing is 403 `LICENSE_INACTIVE`.
pub async fn authorise_updates(
    state: &AppState,
    db: &Db,
    claims: Claims,
) -> Result<(LicenceAccess, Offer), ApiError> {
    let now = state.clock.now();
    let (licence, activation, _) = activations::seat(db, LicenceBy::Id(&claims.sub), &claims.iid)
        .await?
        .ok_or(ApiError::InvalidToken)?;
    let channel = crate::repo::updates::channel(db, &licence.id)
        .await?
        .ok_or(ApiError::InvalidToken)?;
    let offer = Offer::for_licence(&licence, channel, now).ok_or(ApiError::LicenceInactive)?;
    if licence.has_access(now) {
        let granted = check(licence, activation, now)?;
        return Ok((granted.licence, offer));
    }
    activation.ok_or(ApiError::InstanceNotActive)?;
    Ok((licence, offer))
}

/// The access rules on a licence and the installation's activation as read together by
/// [`activations::seat`].
pub fn check(
    licence: LicenceAccess,
    activation: Option<ActivationRow>,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Authorised, ApiError> {
    if !licence.has_access(now) {
        return Err(ApiError::LicenceInactive);
    }
    let activation = activation.ok_or(ApiError::InstanceNotActive)?;
    Ok(Authorised {
        licence,
        activation,
    })
}

/// A fresh token for an activation.
pub fn issue(
    state: &AppState,
    licence: &LicenceAccess,
    instance_id: &str,
) -> Result<IssuedToken, ApiError> {
    let (token, expires) = state
        .keys
        .issue(
            &licence.id,
            instance_id,
            licence.plan().as_str(),
            state.clock.now(),
        )
        .map_err(ApiError::internal)?;
    Ok(IssuedToken {
        token,
        token_expires_at: crate::clock::rfc3339(expires),
    })
}

/// A fresh offline lease for an activation: the plan and its features, valid for the grace.
pub fn issue_lease(
    state: &AppState,
    licence: &LicenceAccess,
    instance_id: &str,
) -> Result<IssuedLease, ApiError> {
    let now = state.clock.now();
    let mut expires = lease_expiry(now, state.settings.grace_days);
    // A licence that ends sooner (Annual, a cancelled subscription) ends its lease with it.
    if let Some(end) = licence.expires_at.map(|t| t.and_utc()) {
        expires = expires.min(end);
    }
    let plan = licence.plan();
    let lease = state
        .signing
        .lease(&LeaseClaims {
            sub: licence.id.as_str(),
            iid: instance_id,
            plan: plan.as_str(),
            features: plan.features(),
            daily_quota: plan.daily_quota(),
            iat: now.timestamp(),
            exp: expires.timestamp(),
        })
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("the lease could not be signed")))?;
    Ok(IssuedLease {
        lease,
        lease_expires_at: crate::clock::rfc3339(
            chrono::DateTime::from_timestamp(expires.timestamp(), 0).unwrap_or(expires),
        ),
    })
}

/// The `license` object with the current activation count.
pub async fn licence_view(db: &Db, licence: &LicenceAccess) -> Result<LicenceView, ApiError> {
    Ok(LicenceView::new(
        licence,
        activations::count(db, &licence.id).await?,
    ))
}
