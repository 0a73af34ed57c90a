//! The access rules behind a token or a key: the licence must grant access now and the
//! installation must still hold its seat; and what a granted request gets back (a fresh token,
//! the `license` object).

use super::AppState;
use crate::error::ApiError;
use crate::repo::activations::{self, ActivationRow};
use crate::repo::licences::{self, LicenceRow};
use crate::tokens::Claims;
use crate::wire::{IssuedToken, LicenceView};

/// A licence and one of its activations, both checked: the licence grants access now and the
/// installation still holds its slot.
pub struct Authorised {
    pub licence: LicenceRow,
    pub activation: ActivationRow,
}

/// Checks in one blocking call what a token-bearing request needs: the licence of `claims`
/// (gone: 401), its access (403 `LICENSE_INACTIVE`), the installation (403 `INSTANCE_NOT_ACTIVE`).
pub async fn authorise(state: &AppState, claims: Claims) -> Result<Authorised, ApiError> {
    let now = state.clock.now();
    service_kit::db::run(&state.pool, move |conn| {
        let licence = licences::find_by_id(conn, &claims.sub)?.ok_or(ApiError::InvalidToken)?;
        check(conn, licence, &claims.iid, now)
    })
    .await
}

/// The same checks for a licence found by key.
pub fn check(
    conn: &mut diesel::MysqlConnection,
    licence: LicenceRow,
    instance_id: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Authorised, ApiError> {
    if !licence.has_access(now) {
        return Err(ApiError::LicenceInactive);
    }
    let activation =
        activations::find(conn, &licence.id, instance_id)?.ok_or(ApiError::InstanceNotActive)?;
    Ok(Authorised {
        licence,
        activation,
    })
}

/// A fresh token for an activation.
pub fn issue(
    state: &AppState,
    licence: &LicenceRow,
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

/// The `license` object with the current activation count.
pub fn licence_view(
    conn: &mut diesel::MysqlConnection,
    licence: &LicenceRow,
) -> Result<LicenceView, ApiError> {
    Ok(LicenceView::new(
        licence,
        activations::count(conn, &licence.id)?,
    ))
}
