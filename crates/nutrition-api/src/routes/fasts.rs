use actix_web::{HttpResponse, web};
use chrono::{Duration, Utc};
use domain::fasting::{MAX_BACKDATE, SpanError};
use domain::protocol::Protocol;
use serde::{Deserialize, Serialize};
use service_kit::http::{Json, JsonOrEmpty};
use session::CurrentUser;

use crate::error::{ApiError, invalid};
use crate::import::FileError;
use crate::input::{CsvBody, Instant, MaybeIdempotencyKey, check_instant};
use crate::model::{Fast, MAX_NOTE, Symptoms};
use crate::repo::Repo;
use crate::repo::fasts::{
    self, CorrectOutcome, Correction, EndOutcome, RecordOutcome, ResumeOutcome, Skipped,
    StartOutcome,
};
use crate::repo::idempotency::Guarded;
use crate::routes::retried;
use crate::state::AppState;

/// How far ahead of the server's clock a client's "now" may be; later is a future time.
const CLOCK_SKEW: Duration = Duration::seconds(60);

#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StartFast {
    /// Defaults to the preferred protocol.
    #[schema(value_type = Option<domain::protocol::Protocol>)]
    protocol: Option<String>,
    /// Defaults to now; at most 7 days in the past, never in the future. With `endedAt`: a past
    /// fast, at most 365 days ago.
    #[schema(value_type = Option<chrono::DateTime<chrono::Utc>>)]
    started_at: Option<Instant>,
    /// Records a fast that has already ended (with `startedAt`).
    #[schema(value_type = Option<chrono::DateTime<chrono::Utc>>)]
    ended_at: Option<Instant>,
}

/// `POST /me/fast-events`: starts a fast with the given protocol (default: the preferred one),
/// now or up to 7 days in the past.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn start(
    me: CurrentUser,
    repo: web::Data<Repo>,
    key: MaybeIdempotencyKey,
    body: JsonOrEmpty<StartFast>,
) -> Result<HttpResponse, ApiError> {
    let body = body.0;
    let now = Utc::now();
    let explicit = body
        .protocol
        .as_deref()
        .map(|p| p.parse::<Protocol>().map_err(|e| invalid("protocol", e)))
        .transpose()?;
    if let Some(ended_at) = body.ended_at {
        let started_at = body
            .started_at
            .ok_or_else(|| invalid("startedAt", "is required with endedAt"))?;
        return record(me, repo, key, explicit, started_at.0, ended_at.0).await;
    }
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
    let fast = match fasts::start(&repo, me.id(), explicit, started_at, key.0.as_ref()).await? {
        Guarded::Fresh(StartOutcome::Started(row)) => row,
        Guarded::Fresh(StartOutcome::NoProtocol) => return Err(no_protocol()),
        Guarded::Fresh(StartOutcome::AlreadyRunning) => {
            return Err(ApiError::Conflict {
                code: "FAST_ALREADY_RUNNING",
                message: "a fast is already running",
            });
        }
        Guarded::Fresh(StartOutcome::Overlaps) => {
            return Err(invalid(
                "startedAt",
                "must not be before the end of the previous fast",
            ));
        }
        Guarded::Fresh(StartOutcome::DailyLimit) => return Err(daily_limit()),
        again => return retried(again),
    };
    Ok(HttpResponse::Created().json(Fast::from(*fast)))
}

fn no_protocol() -> ApiError {
    invalid("protocol", "is required when no preferred protocol is set")
}

fn daily_limit() -> ApiError {
    ApiError::Unprocessable {
        code: "DAILY_LIMIT_REACHED",
        message: "at most 20 fasts may start on one day",
    }
}

fn overlap() -> ApiError {
    ApiError::Conflict {
        code: "FAST_OVERLAP",
        message: "this fast would overlap another one",
    }
}

fn span_error(e: SpanError) -> ApiError {
    let (field, rule) = e.field_and_rule();
    invalid(field, rule)
}

/// `POST /me/fast-events` with `startedAt` and `endedAt`: a fast that has already ended.
async fn record(
    me: CurrentUser,
    repo: web::Data<Repo>,
    key: MaybeIdempotencyKey,
    explicit: Option<Protocol>,
    started_at: chrono::DateTime<Utc>,
    ended_at: chrono::DateTime<Utc>,
) -> Result<HttpResponse, ApiError> {
    let now = Utc::now();
    // A client's clock a little ahead is forgiven, as for a start; the fast ends now then.
    let ended_at = if ended_at > now && ended_at <= now + CLOCK_SKEW {
        now
    } else {
        ended_at
    };
    let started_at = if started_at > now && started_at <= now + CLOCK_SKEW {
        now
    } else {
        started_at
    };
    match fasts::record(
        &repo,
        me.id(),
        explicit,
        started_at,
        ended_at,
        key.0.as_ref(),
    )
    .await?
    {
        Guarded::Fresh(Some(RecordOutcome::Recorded(row))) => {
            Ok(HttpResponse::Created().json(Fast::from(*row)))
        }
        Guarded::Fresh(None) => Err(no_protocol()),
        Guarded::Fresh(Some(RecordOutcome::Invalid(e))) => Err(span_error(e)),
        Guarded::Fresh(Some(RecordOutcome::Overlaps)) => Err(overlap()),
        Guarded::Fresh(Some(RecordOutcome::DailyLimit)) => Err(daily_limit()),
        again => retried(again),
    }
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
    key: MaybeIdempotencyKey,
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
    match fasts::end(&repo, user_id, &id, ended_at, key.0.as_ref()).await? {
        Guarded::Fresh(EndOutcome::Ended(row)) => Ok(HttpResponse::Ok().json(Fast::from(*row))),
        Guarded::Fresh(EndOutcome::NotFound) => Err(ApiError::NotFound),
        Guarded::Fresh(EndOutcome::NotRunning) => Err(ApiError::Conflict {
            code: "FAST_NOT_RUNNING",
            message: "this fast is not running",
        }),
        Guarded::Fresh(EndOutcome::BeforeStart) => {
            Err(invalid("endedAt", "must be after the fast started"))
        }
        again => retried(again),
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

#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PatchFast {
    symptoms: Option<Symptoms>,
    /// A corrected start: before the end, not in the future, at most 365 days ago.
    #[schema(value_type = Option<chrono::DateTime<chrono::Utc>>)]
    started_at: Option<Instant>,
    /// A corrected end, for an ended fast only.
    #[schema(value_type = Option<chrono::DateTime<chrono::Utc>>)]
    ended_at: Option<Instant>,
    #[schema(value_type = Option<domain::protocol::Protocol>)]
    protocol: Option<String>,
}

/// `PATCH /me/fast-events/<id>`: the symptom diary, and corrections of the start, the end and
/// the protocol; the status is computed again from the corrected times.
pub async fn patch(
    me: CurrentUser,
    repo: web::Data<Repo>,
    path: web::Path<String>,
    key: MaybeIdempotencyKey,
    body: Json<PatchFast>,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    if let Some(s) = &body.symptoms {
        check_symptoms(s)?;
    }
    if body.symptoms.is_none()
        && body.started_at.is_none()
        && body.ended_at.is_none()
        && body.protocol.is_none()
    {
        return Err(invalid(
            "body",
            "must give symptoms, startedAt, endedAt or protocol",
        ));
    }
    let protocol = body
        .protocol
        .as_deref()
        .map(|p| p.parse::<Protocol>().map_err(|e| invalid("protocol", e)))
        .transpose()?;
    let correction = Correction {
        started_at: body.started_at.map(|t| t.0),
        ended_at: body.ended_at.map(|t| t.0),
        protocol,
        symptoms: body.symptoms,
    };
    let id = path.into_inner();
    match fasts::correct(&repo, me.id(), &id, correction, key.0.as_ref()).await? {
        Guarded::Fresh(CorrectOutcome::Corrected(row)) => {
            Ok(HttpResponse::Ok().json(Fast::from(*row)))
        }
        Guarded::Fresh(CorrectOutcome::NotFound) => Err(ApiError::NotFound),
        Guarded::Fresh(CorrectOutcome::StillRunning) => Err(invalid(
            "endedAt",
            "only an ended fast has an end to correct; end a running one with POST .../end",
        )),
        Guarded::Fresh(CorrectOutcome::Invalid(e)) => Err(span_error(e)),
        Guarded::Fresh(CorrectOutcome::Overlaps) => Err(overlap()),
        again => retried(again),
    }
}

fn check_symptoms(s: &Symptoms) -> Result<(), ApiError> {
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
    Ok(())
}

/// `DELETE /me/fast-events/<id>`: the fast is gone from history, statistics and streaks.
pub async fn delete(
    me: CurrentUser,
    repo: web::Data<Repo>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    if fasts::delete(&repo, me.id(), &path.into_inner()).await? {
        Ok(HttpResponse::NoContent().finish())
    } else {
        Err(ApiError::NotFound)
    }
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

#[derive(Serialize, utoipa::ToSchema)]
pub struct ImportReport {
    imported: usize,
    /// Lines not imported, with why; `line` counts the header as line 1.
    skipped: Vec<Skipped>,
}

/// `POST /me/fast-events/import`: a `text/csv` file, Zero's export or this product's own. The
/// same file twice imports nothing the second time.
pub async fn import(
    me: CurrentUser,
    repo: web::Data<Repo>,
    body: CsvBody,
) -> Result<HttpResponse, ApiError> {
    let (rows, skipped) = crate::import::read(&body.0).map_err(|e| match e {
        FileError::UnknownFormat => invalid(
            "body",
            "must be Zero's export (Date, Start, End) or this app's (protocol, startedAt, endedAt)",
        ),
        FileError::TooManyRows => ApiError::TooLarge(format!(
            "at most {} rows may be imported at once",
            crate::import::MAX_ROWS
        )),
    })?;
    let (imported, skipped) = fasts::import(&repo, me.id(), rows, skipped, Utc::now()).await?;
    Ok(HttpResponse::Ok().json(ImportReport { imported, skipped }))
}
