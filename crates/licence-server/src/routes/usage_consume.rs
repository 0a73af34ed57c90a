use actix_web::{HttpRequest, web};

use chrono::SubsecRound;

use super::{AppState, Claims, check};
use domain::licensing::Plan;

use crate::error::ApiError;
use crate::repo::Db;
use crate::repo::activations::{self, LicenceBy};
use crate::repo::idempotency::{self, Consumed};
use crate::repo::usage::{self, Take};
use crate::wire::UsageReport;

/// Longest `Idempotency-Key` accepted.
pub const MAX_IDEMPOTENCY_KEY: usize = 64;

/// `POST /api/usage/consume`: takes one unit of today's (Europe/Rome) quota of the licence's
/// current plan, or answers 429 with the same report once it is used up. With an
/// `Idempotency-Key`, the same key on the same licence and day answers the first result again
/// and takes nothing more.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn consume(
    state: web::Data<AppState>,
    db: web::Data<Db>,
    req: HttpRequest,
    Claims(claims): Claims,
) -> Result<web::Json<UsageReport>, ApiError> {
    let key = idempotency_key(&req)?;
    let now = state.clock.now();
    let day = domain::licensing::quota_day(now);
    // `now` goes to the statements cut to MariaDB's microseconds, never rounded up, so that
    // their `expires_at` test is never more lenient than `check`'s at full precision.
    let at = now.naive_utc().trunc_subsecs(6);
    // Keys only mean something on their own day; old ones are dropped now and then.
    if rand::random_ratio(1, 1000) {
        idempotency::prune(&db, day - chrono::Days::new(1)).await?;
    }
    let consumed = match key {
        Some(key) => {
            let check = |found: Option<_>| -> Result<Plan, ApiError> {
                let (licence, activation, _) = found.ok_or(ApiError::InvalidToken)?;
                Ok(check(licence, activation, now)?.licence.plan())
            };
            idempotency::consume_once(&db, &claims.sub, &claims.iid, day, at, &key, check).await??
        }
        None => take(&db, &claims, day, at, now).await?,
    };
    let report = UsageReport::new(consumed.plan, consumed.used, now);
    if consumed.taken {
        Ok(web::Json(report))
    } else {
        Err(ApiError::QuotaExceeded(report))
    }
}

/// The plain consumption. First the take on the token's plan, guarded by the licence's plain
/// access, which is every consumption but a refused one or one whose licence changed plan since
/// its token; when its guard does not hold, the seat is read, `check` says why, and a licence
/// with access on other grounds (on trial, past due, cancelled with a paid end) or on another
/// plan takes its unit by the same statement, on the plan just read.
async fn take(
    db: &Db,
    claims: &crate::tokens::Claims,
    day: chrono::NaiveDate,
    at: chrono::NaiveDateTime,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Consumed, ApiError> {
    let ask = |plan: Plan, access_checked: bool| Take {
        licence_id: claims.sub.clone(),
        instance_id: claims.iid.clone(),
        plan,
        day,
        now: at,
        access_checked,
    };
    if let Ok(plan) = claims.plan.parse::<Plan>()
        && let Some((taken, used)) = usage::take(db, ask(plan, false)).await?
    {
        return Ok(Consumed { taken, used, plan });
    }
    let (licence, activation, _) = activations::seat(db, LicenceBy::Id(&claims.sub), &claims.iid)
        .await?
        .ok_or(ApiError::InvalidToken)?;
    let plan = check(licence, activation, now)?.licence.plan();
    // `None` only when the seat or the plan changed since it was read: as if read after.
    let (taken, used) = usage::take(db, ask(plan, true))
        .await?
        .ok_or(ApiError::InstanceNotActive)?;
    Ok(Consumed { taken, used, plan })
}

/// The `Idempotency-Key` header: 1 to 64 visible ASCII characters, or 400 naming it.
fn idempotency_key(req: &HttpRequest) -> Result<Option<String>, ApiError> {
    let Some(value) = req.headers().get("idempotency-key") else {
        return Ok(None);
    };
    let key = value.to_str().ok().map(str::trim).filter(|k| {
        !k.is_empty() && k.len() <= MAX_IDEMPOTENCY_KEY && k.bytes().all(|b| b.is_ascii_graphic())
    });
    match key {
        Some(k) => Ok(Some(k.to_owned())),
        None => Err(ApiError::Validation(format!(
            "Idempotency-Key: must be 1 to {MAX_IDEMPOTENCY_KEY} visible ASCII characters"
        ))),
    }
}
