use actix_web::{HttpResponse, web};
use chrono::{Duration, Utc};
use domain::fasting::MAX_BACKDATE;
use domain::protocol::Protocol;
use serde::Deserialize;
use service_kit::http::{Json, JsonOrEmpty};
use session::CurrentUser;

use crate::error::{ApiError, invalid};
use crate::input::{Instant, check_instant};
use crate::model::{Fast, MAX_NOTE, Symptoms};
use crate::repo::Repo;
use crate::repo::fasts::{self, EndOutcome, ResumeOutcome, StartOutcome};
use crate::state::AppState;

/// How far ahead of the server's clock a client's "now" may be; later is a future time.
const CLOCK_SKEW: Duration = Duration::seconds(60);

#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StartFast {
    /// Defaults to the preferred protocol.
    #[schema(value_type = Option<domain::protocol::Protocol>)]
    protocol: Option<String>,
    /// Defaults to now; at most 7 days in the past, never in the future.
    #[schema(value_type = Option<chrono::DateTime<chrono::Utc>>)]
    started_at: Option<Instant>,
}

/// `POST /me/fast-events`: starts a fast with the given protocol (default: the preferred one),
/// now or up to 7 days in the past.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn start(
    me: CurrentUser,
    repo: web::Data<Repo>,
    body: JsonOrEmpty<StartFast>,
) -> Result<HttpResponse, ApiError> {
    let body = body.0;
    let now = Utc::now();
    let explicit = body
        .protocol
        .as_deref()
        .map(|p| p.parse::<Protocol>().map_err(|e| invalid("protocol", e)))
        .transpose()?;
    let started_at = match body.started_at.map(|t| t.0) {
        None => now,
        Some(t) if t > now + CLOCK_SKEW => {
            return Err(invalid("startedAt", "must not be in the future"));
        }
        Some(t) if t < now - MAX_BACKDATE => {
            return Err(invalid("startedAt", "may lie at most 7 days in the past"));
        }
        Some(t) => t.min(now),
    };
    let user_id = me.id();
    let fast = match fasts::start(&repo, user_id, explicit, started_at).await? {
        StartOutcome::Started(row) => row,
        StartOutcome::NoProtocol => {
            return Err(invalid(
                "protocol",
                "is required when no preferred protocol is set",
            ));
        }
        StartOutcome::AlreadyRunning => {
            return Err(ApiError::Conflict {
                code: "FAST_ALREADY_RUNNING",
                message: "a fast is already running",
            });
        }
        StartOutcome::Overlaps => {
            return Err(invalid(
                "startedAt",
                "must not be before the end of the previous fast",
            ));
        }
        StartOutcome::DailyLimit => {
            return Err(ApiError::Unprocessable {
                code: "DAILY_LIMIT_REACHED",
                message: "at most 20 fasts may start on one day",
            });
        }
    };
    Ok(HttpResponse::Created().json(Fast::from(*fast)))
}

#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EndFast {
    /// Defaults to now; never in the future nor before the start.
    #[schema(value_type = Option<chrono::DateTime<chrono::Utc>>)]
    ended_at: Option<Instant>,
}

/// `POST /me/fast-events/<id>/end`: COMPLETED at or after the planned end, else ENDED_EARLY.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn end(
    me: CurrentUser,
    repo: web::Data<Repo>,
    path: web::Path<String>,
    body: JsonOrEmpty<EndFast>,
) -> Result<HttpResponse, ApiError> {
    let now = Utc::now();
    let ended_at = match body.0.ended_at.map(|t| t.0) {
        Some(t) if t > now + CLOCK_SKEW => {
            return Err(invalid("endedAt", "must not be in the future"));
        }
        other => other.map(|t| t.min(now)),
    };
    let user_id = me.id();
    let id = path.into_inner();
    let outcome = fasts::end(&repo, user_id, &id, ended_at).await?;
    match outcome {
        EndOutcome::Ended(row) => Ok(HttpResponse::Ok().json(Fast::from(*row))),
        EndOutcome::NotFound => Err(ApiError::NotFound),
        EndOutcome::NotRunning => Err(ApiError::Conflict {
            code: "FAST_NOT_RUNNING",
            message: "this fast is not running",
        }),
        EndOutcome::BeforeStart => Err(invalid("endedAt", "must be after the fast started")),
    }
}

/// `POST /me/fast-events/<id>/resume`: a fast ended within the last ten minutes runs again.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn resume(
    me: CurrentUser,
    repo: web::Data<Repo>,
    path: web::Path<String>,
    _body: JsonOrEmpty<Empty>,
) -> Result<HttpResponse, ApiError> {
    let user_id = me.id();
    let id = path.into_inner();
    let outcome = fasts::resume(&repo, user_id, &id, Utc::now()).await?;
    match outcome {
        ResumeOutcome::Resumed(row) => Ok(HttpResponse::Ok().json(Fast::from(*row))),
        ResumeOutcome::NotFound => Err(ApiError::NotFound),
        ResumeOutcome::AlreadyRunning => Err(ApiError::Conflict {
            code: "FAST_ALREADY_RUNNING",
            message: "a fast is already running",
        }),
        ResumeOutcome::Overlaps => Err(ApiError::Conflict {
            code: "FAST_OVERLAP",
            message: "a later fast was started since this one ended",
        }),
        ResumeOutcome::TooLate => Err(ApiError::Unprocessable {
            code: "TOO_LATE_TO_RESUME",
            message: "a fast can be resumed only within 10 minutes of its end",
        }),
    }
}

/// The body of a request that takes none: empty, or a JSON object without fields.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Page size, 1 to 100 (default 20).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100)]
    limit: Option<String>,
    /// Only fasts started before this instant: the `nextBefore` of the previous page.
    #[param(value_type = Option<chrono::DateTime<chrono::Utc>>)]
    before: Option<String>,
}

pub const DEFAULT_PAGE: i64 = 20;
pub const MAX_PAGE: i64 = 100;

/// `GET /me/fast-events?limit=&before=`: newest first; `nextBefore` fetches the next page.
pub async fn list(
    me: CurrentUser,
    repo: web::Data<Repo>,
    query: web::Query<ListQuery>,
) -> Result<HttpResponse, ApiError> {
    let limit = match query.limit.as_deref() {
        None | Some("") => DEFAULT_PAGE,
        Some(raw) => raw
            .parse::<i64>()
            .ok()
            .filter(|n| (1..=MAX_PAGE).contains(n))
            .ok_or_else(|| invalid("limit", "must be a whole number from 1 to 100"))?,
    };
    let before = match query.before.as_deref() {
        None | Some("") => None,
        Some(raw) => Some(check_instant("before", raw)?),
    };
    let user_id = me.id();
    let mut rows = fasts::list(&repo, user_id, before, limit + 1).await?;
    let more = i64::try_from(rows.len()).unwrap_or(i64::MAX) > limit;
    rows.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    let next_before = if more {
        rows.last()
            .map(|r| service_kit::time::format(&r.started_at))
    } else {
        None
    };
    let items: Vec<Fast> = rows.into_iter().map(Fast::from).collect();
    Ok(HttpResponse::Ok().json(serde_json::json!({ "items": items, "nextBefore": next_before })))
}

/// `GET /me/fast-events/current`: the running fast, or 404.
pub async fn current(me: CurrentUser, repo: web::Data<Repo>) -> Result<HttpResponse, ApiError> {
    let user_id = me.id();
    let row = fasts::current(&repo, user_id).await?;
    row.map(|r| HttpResponse::Ok().json(Fast::from(r)))
        .ok_or(ApiError::NotFound)
}

/// `GET /me/fast-events/<id>`: another user's fast is reported like a missing one.
pub async fn one(
    me: CurrentUser,
    repo: web::Data<Repo>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let user_id = me.id();
    let id = path.into_inner();
    let row = fasts::get(&repo, user_id, &id).await?;
    row.map(|r| HttpResponse::Ok().json(Fast::from(r)))
        .ok_or(ApiError::NotFound)
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchFast {
    symptoms: Symptoms,
}

/// `PATCH /me/fast-events/<id>`: the symptom diary. Status and timer are untouched.
pub async fn patch(
    me: CurrentUser,
    repo: web::Data<Repo>,
    path: web::Path<String>,
    body: Json<PatchFast>,
) -> Result<HttpResponse, ApiError> {
    let s = body.into_inner().symptoms;
    for (name, value) in [
        ("energy", s.energy),
        ("hunger", s.hunger),
        ("clarity", s.clarity),
    ] {
        if value.is_some_and(|v| !(1..=10).contains(&v)) {
            return Err(invalid(&format!("symptoms.{name}"), "must be from 1 to 10"));
        }
    }
    if s.note
        .as_ref()
        .is_some_and(|n| n.chars().count() > MAX_NOTE)
    {
        return Err(invalid("symptoms.note", "must be at most 2000 characters"));
    }
    let user_id = me.id();
    let id = path.into_inner();
    let row = fasts::patch_symptoms(&repo, user_id, &id, &s).await?;
    row.map(|r| HttpResponse::Ok().json(Fast::from(r)))
        .ok_or(ApiError::NotFound)
}

/// `GET /me/fast-events/<id>/break-fast-suggestions`: three easy-to-digest recipes after a fast
/// of 24 hours or more (the running one counted up to now).
pub async fn suggestions(
    me: CurrentUser,
    repo: web::Data<Repo>,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let user_id = me.id();
    let id = path.into_inner();
    let row = fasts::get(&repo, user_id, &id)
        .await?
        .ok_or(ApiError::NotFound)?;
    let length = row.ended_at.unwrap_or_else(Utc::now) - row.started_at;
    if length < Duration::hours(24) {
        return Err(ApiError::Unprocessable {
            code: "FAST_TOO_SHORT",
            message: "break-fast suggestions are for fasts of 24 hours or more",
        });
    }
    let recipes = state.catalogue.break_fast_suggestions();
    Ok(HttpResponse::Ok().json(serde_json::json!({ "recipes": recipes })))
}
