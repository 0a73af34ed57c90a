use actix_web::{HttpRequest, web};
use serde::Serialize;

use super::limits::{Bucket, Limit};
use super::{
    AppState, Authorised, KeyAndInstance, OptionalBody, bearer, check, claims, issue, issue_lease,
};
use crate::error::ApiError;
use crate::repo::activations::{self, LicenceBy};
use crate::repo::{Db, LicenceId};
use crate::wire::{IssuedLease, IssuedToken, LicenceView};

#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Validated)]
pub struct Answer {
    valid: bool,
    #[serde(flatten)]
    token: IssuedToken,
    #[serde(flatten)]
    lease: IssuedLease,
    license: LicenceView,
}

/// Licence id and instance from a token, or key and instance from the body.
enum By {
    Token(LicenceId, String),
    Key(String, String),
}

impl By {
    /// How the seat's statement names the licence, and the installation.
    fn seat(&self) -> (LicenceBy<'_>, &str) {
        match self {
            By::Token(id, iid) => (LicenceBy::Id(id), iid),
            By::Key(key, iid) => (LicenceBy::Key(key), iid),
        }
    }

    /// The answer when no licence is found: a token names one that is gone, a key a wrong one.
    fn not_found(&self) -> ApiError {
        match self {
            By::Token(..) => ApiError::InvalidToken,
            By::Key(..) => ApiError::LicenceNotFound,
        }
    }
}

/// `POST /api/license/validate`: by Bearer token (preferred when both are sent) or by
/// `{licenseKey, instanceId}`; answers a fresh token.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn validate(
    state: web::Data<AppState>,
    db: web::Data<Db>,
    req: HttpRequest,
    body: OptionalBody,
) -> Result<web::Json<Answer>, ApiError> {
    let limit = Limit::of(&state, &req, Bucket::Licence);
    let now = state.clock.now();
    // Who is asking. A refusal here is answered only after the request was counted, so that a
    // guesser pays for every try.
    let by = (|| -> Result<By, ApiError> {
        if bearer(&req)?.is_some() {
            let c = claims(&state, &req)?;
            return Ok(By::Token(c.sub, c.iid));
        }
        let body: KeyAndInstance = body.json()?.ok_or(ApiError::InvalidToken)?;
        let (key, instance_id) = body.checked()?;
        Ok(By::Key(key.as_str().to_owned(), instance_id.into_string()))
    })();
    // Counted first, so that a refusal below comes after the count. Only an address whose
    // requests this replica holds none of costs a statement here.
    limit.count(&db).await?;
    let by = by?;
    let (licence_by, instance) = by.seat();
    let found = activations::seat(&db, licence_by, instance).await?;
    let (licence, activation, usage) = found.ok_or_else(|| by.not_found())?;
    let Authorised {
        licence,
        activation,
    } = check(licence, activation, now)?;
    if needs_touch(activation.last_validated_at, now.naive_utc()) {
        activations::touch(&db, &activation.id, now.naive_utc()).await?;
    }
    let license = LicenceView::new(&licence, usage);
    let instance_id = activation.instance_id;
    let token = issue(&state, &licence, &instance_id)?;
    let lease = issue_lease(&state, &licence, &instance_id)?;
    Ok(web::Json(Answer {
        valid: true,
        token,
        lease,
        license,
    }))
}

/// How fresh a seat's `last_validated_at` is kept. Seats go stale after days
/// (`LICENCE_STALE_DAYS`), so a minute of slack changes no decision, and an installation that
/// validates again within it (a restart, several windows of the app) costs no write.
const TOUCH_EVERY: chrono::TimeDelta = chrono::TimeDelta::minutes(1);

/// Whether a validation at `now` must record itself: the last one is a minute old or more, or
/// lies ahead of `now` (a clock set back), which the new time replaces.
fn needs_touch(last: chrono::NaiveDateTime, now: chrono::NaiveDateTime) -> bool {
    let age = now - last;
    age < chrono::TimeDelta::zero() || age >= TOUCH_EVERY
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touches_at_most_once_a_minute() {
        let t = chrono::DateTime::from_timestamp(1_800_000_000, 0)
            .unwrap_or_default()
            .naive_utc();
        assert!(!needs_touch(t, t));
        assert!(!needs_touch(t, t + chrono::TimeDelta::seconds(59)));
        assert!(needs_touch(t, t + TOUCH_EVERY));
        assert!(needs_touch(t, t + chrono::TimeDelta::days(3)));
        assert!(needs_touch(t, t - chrono::TimeDelta::seconds(1)));
    }
}
