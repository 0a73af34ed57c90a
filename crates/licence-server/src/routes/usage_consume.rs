use actix_web::{HttpRequest, web};

use chrono::SubsecRound;

use super::{AppState, Claims, authorise_on, check};
use domain::licensing::Plan;

use crate::direct::{Direct, Sent};
use crate::error::ApiError;
use crate::repo::idempotency::{self, Consumed};
use crate::repo::{activations, usage};
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
    direct: web::Data<Direct>,
    req: HttpRequest,
    Claims(claims): Claims,
) -> Result<web::Json<UsageReport>, ApiError> {
    let key = idempotency_key(&req)?;
    let now = state.clock.now();
    // Keys only mean something on their own day; old ones are dropped now and then.
    let prune = rand::random_ratio(1, 1000);
    // Without a key, one statement reads the licence with the installation's seat and, when
    // the licence is plainly active, takes the unit too; it runs on the worker. A key's
    // transaction can wait on the lock of a concurrent request with the same key, and the
    // pruning deletes many rows, so both go to the blocking pool.
    let consumed = if key.is_none() && !prune {
        match take_direct(&state, &direct, &claims, now).await? {
            Some(consumed) => consumed,
            None => {
                crate::direct::POOL.inc();
                let work = on_pool(claims, None, false, now);
                service_kit::db::run_inline(&state.pool, work).await?
            }
        }
    } else {
        service_kit::db::run(&state.pool, on_pool(claims, key, prune, now)).await?
    };
    let report = UsageReport::new(consumed.plan, consumed.used, now);
    if consumed.taken {
        Ok(web::Json(report))
    } else {
        Err(ApiError::QuotaExceeded(report))
    }
}

/// The consumption on one checkout of the pool: with `key`, once per key; `prune` first drops
/// the keys of days gone.
fn on_pool(
    claims: crate::tokens::Claims,
    key: Option<String>,
    prune: bool,
    now: chrono::DateTime<chrono::Utc>,
) -> impl FnOnce(&mut diesel::MysqlConnection) -> Result<Consumed, ApiError> + Send + 'static {
    let day = domain::licensing::quota_day(now);
    move |conn| {
        if prune {
            idempotency::prune(conn, day - chrono::Days::new(1))?;
        }
        let Some(key) = key else {
            // `now` goes to the statement cut to MariaDB's microseconds, never rounded up, so that
            // its `expires_at` test is never more lenient than `check`'s below at full precision.
            let found = activations::seat_and_take(
                conn,
                &claims.sub,
                &claims.iid,
                day,
                now.naive_utc().trunc_subsecs(6),
            )?
            .ok_or(ApiError::InvalidToken)?;
            let auth = check(found.licence, found.activation, now)?;
            let plan = auth.licence.plan();
            let (taken, used) = match found.taken {
                Some(outcome) => outcome,
                None => usage::consume(conn, &auth.licence.id, day, plan.daily_quota())?,
            };
            return Ok(Consumed { taken, used, plan });
        };
        let auth = authorise_on(conn, &claims, now)?;
        let plan = auth.licence.plan();
        Ok(idempotency::consume_once(
            conn,
            &auth.licence.id,
            day,
            &key,
            plan,
        )?)
    }
}

/// The plain consumption over the worker's own connections: `None` when the statements could
/// not be sent that way, or MariaDB refused one, and the pool must run them. One that was sent
/// and then lost is not run again, since its unit may have been taken: it answers 503 as the
/// pool would.
///
/// First the one statement that takes the unit if the licence plainly grants access on the
/// token's plan, which is every consumption but a refused one or one whose licence changed plan
/// since its token; when its guard does not hold, the seat's statement reads the licence and the
/// seat, says why, and takes the unit when the licence has access on other grounds.
async fn take_direct(
    state: &AppState,
    direct: &web::Data<Direct>,
    claims: &crate::tokens::Claims,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Option<Consumed>, ApiError> {
    let day = domain::licensing::quota_day(now);
    // As in the pool's path: cut to MariaDB's microseconds, never rounded up.
    let at = now.naive_utc().trunc_subsecs(6);
    // The statement creates a day's row with its first unit without comparing it to the limit,
    // so a plan whose quota is nothing leaves it to the seat's statement.
    if let Ok(plan) = claims.plan.parse::<Plan>()
        && plan.daily_quota() > 0
    {
        let sent = direct
            .clone()
            .into_inner()
            .take_on_plan(&claims.sub, &claims.iid, plan, day, at)
            .await;
        let Some(taken) = answered(sent)? else {
            return Ok(None);
        };
        if let Some((taken, used)) = taken {
            return Ok(Some(Consumed { taken, used, plan }));
        }
    }
    let sent = direct
        .seat_and_take(&claims.sub, &claims.iid, day, at)
        .await;
    let Some(found) = answered(sent)? else {
        return Ok(None);
    };
    let found = found.ok_or(ApiError::InvalidToken)?;
    let auth = check(found.licence, found.activation, now)?;
    let plan = auth.licence.plan();
    let (taken, used) = match found.taken {
        Some(outcome) => outcome,
        // A licence with access on other grounds takes its unit with a statement of its own.
        None => {
            crate::direct::POOL.inc();
            let id = auth.licence.id.clone();
            let quota = plan.daily_quota();
            service_kit::db::run_inline(&state.pool, move |conn| {
                usage::consume(conn, &id, day, quota).map_err(ApiError::from)
            })
            .await?
        }
    };
    Ok(Some(Consumed { taken, used, plan }))
}

/// What a consumption's statement on the worker's connection came to: its answer, `None` when
/// the pool must run the request (never sent, or refused and so without effect), or 503 when it
/// was lost after it was sent, since its unit may have been taken.
fn answered<T>(sent: Sent<T>) -> Result<Option<T>, ApiError> {
    match sent {
        Sent::Answered(answer) => Ok(Some(answer)),
        Sent::NotSent | Sent::Refused(_) => Ok(None),
        Sent::Failed(cause) => Err(ApiError::DatabaseUnavailable(cause)),
    }
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
