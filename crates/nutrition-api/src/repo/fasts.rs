//! Fast events.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use session::UserId;

use crate::repo::Conn;
use service_kit::db::DbError;

use crate::repo::Repo;

use domain::fasting::{
    FastStatus, MAX_FASTS_PER_DAY, SpanError, UNDO_WINDOW, check_span, due_milestones,
    next_milestone_at,
};
use domain::protocol::Protocol;
use pg_store::schema::nutrition::fast_event;

use crate::input::IdempotencyKey;
use crate::model::{Fast, FastRow, Symptoms};
use crate::repo::idempotency::{Answer, Guarded, run};

/// Why a fast could not be started.
pub enum StartOutcome {
    Started(Box<FastRow>),
    /// A fast is running (also one started a moment ago in parallel).
    AlreadyRunning,
    /// `started_at` lies before the end of the user's previous fast.
    Overlaps,
    /// [`MAX_FASTS_PER_DAY`] fasts already started on that day.
    DailyLimit,
    /// No protocol was given and none is preferred.
    NoProtocol,
}

/// Starts a fast. In one transaction under the user's lock (see [`crate::repo::lock_user`]), so
/// that a parallel end or start is either wholly before this one or wholly after it: the end of
/// the previous fast is read and the new one inserted with nothing in between. The partial unique
/// index is the last word on "one running fast".
pub(crate) async fn start_in(
    conn: &mut Conn,
    user_id: &UserId,
    protocol: Protocol,
    started_at: DateTime<Utc>,
    auto_started: bool,
) -> QueryResult<StartOutcome> {
    conn.transaction(async |conn| {
        crate::repo::lock_user(conn, user_id).await?;
        if last_end(conn, user_id)
            .await?
            .is_some_and(|end| end > started_at)
        {
            return Ok(StartOutcome::Overlaps);
        }
        let (day_start, day_end) = domain::rome::day_range(domain::rome::local_date(started_at));
        let that_day: i64 = fast_event::table
            .filter(fast_event::user_id.eq(user_id))
            .filter(fast_event::started_at.ge(day_start))
            .filter(fast_event::started_at.lt(day_end))
            .count()
            .get_result(conn)
            .await?;
        if that_day >= MAX_FASTS_PER_DAY {
            return Ok(StartOutcome::DailyLimit);
        }
        let now = Utc::now();
        let planned_end = started_at + protocol.planned_duration();
        let row = diesel::insert_into(fast_event::table)
            .values((
                fast_event::id.eq(session::ids::id()),
                fast_event::user_id.eq(user_id),
                fast_event::status.eq(FastStatus::InProgress.as_str()),
                fast_event::protocol.eq(protocol.to_string()),
                fast_event::started_at.eq(started_at),
                fast_event::planned_end_at.eq(planned_end),
                fast_event::next_milestone_at.eq(next_milestone_at(
                    started_at,
                    planned_end,
                    &[],
                    None,
                )),
                fast_event::auto_started.eq(auto_started),
                fast_event::created_at.eq(now),
                fast_event::updated_at.eq(now),
            ))
            .on_conflict_do_nothing()
            .returning(FastRow::as_returning())
            .get_result(conn)
            .await
            .optional()?;
        Ok(row.map_or(StartOutcome::AlreadyRunning, |r| {
            StartOutcome::Started(Box::new(r))
        }))
    })
    .await
}

/// When the user's latest ended fast ended.
async fn last_end(conn: &mut Conn, user_id: &UserId) -> QueryResult<Option<DateTime<Utc>>> {
    fast_event::table
        .filter(fast_event::user_id.eq(user_id))
        .select(diesel::dsl::max(fast_event::ended_at))
        .first(conn)
        .await
}

pub(crate) async fn get_in(
    conn: &mut Conn,
    user_id: &UserId,
    id: &str,
) -> QueryResult<Option<FastRow>> {
    fast_event::table
        .filter(fast_event::id.eq(id))
        .filter(fast_event::user_id.eq(user_id))
        .select(FastRow::as_select())
        .first(conn)
        .await
        .optional()
}

pub(crate) async fn current_in(conn: &mut Conn, user_id: &UserId) -> QueryResult<Option<FastRow>> {
    fast_event::table
        .filter(fast_event::user_id.eq(user_id))
        .filter(fast_event::status.eq(FastStatus::InProgress.as_str()))
        .select(FastRow::as_select())
        .first(conn)
        .await
        .optional()
}

/// The user's fasts started before `before`, newest first.
pub(crate) async fn list_in(
    conn: &mut Conn,
    user_id: &UserId,
    before: Option<DateTime<Utc>>,
    limit: i64,
) -> QueryResult<Vec<FastRow>> {
    let mut q = fast_event::table
        .filter(fast_event::user_id.eq(user_id))
        .select(FastRow::as_select())
        .order((fast_event::started_at.desc(), fast_event::id.desc()))
        .limit(limit)
        .into_boxed();
    if let Some(b) = before {
        q = q.filter(fast_event::started_at.lt(b));
    }
    q.load(conn).await
}

/// A fast's status, start and end.
pub type SpanRow = (String, DateTime<Utc>, Option<DateTime<Utc>>);

/// The status and times of every fast of the user, for statistics: nothing else (no diary), so
/// that a long history stays small in memory.
pub(crate) async fn spans_in(conn: &mut Conn, user_id: &UserId) -> QueryResult<Vec<SpanRow>> {
    fast_event::table
        .filter(fast_event::user_id.eq(user_id))
        .select((
            fast_event::status,
            fast_event::started_at,
            fast_event::ended_at,
        ))
        .load(conn)
        .await
}

/// Has the milestone run look at the user's running fast at its next tick. The run moves a
/// fast's next look past what it skipped for a pause (to the pause's end) or for milestones
/// switched off (to the next milestone); when either changes, what is due now must be pushed
/// now. The start is never later than the true next instant, and the run corrects it.
pub(crate) async fn recheck_milestones_in(conn: &mut Conn, user_id: &UserId) -> QueryResult<()> {
    diesel::update(
        fast_event::table
            .filter(fast_event::user_id.eq(user_id))
            .filter(fast_event::status.eq(FastStatus::InProgress.as_str())),
    )
    .set(fast_event::next_milestone_at.eq(fast_event::started_at.nullable()))
    .execute(conn)
    .await?;
    Ok(())
}

/// Why a fast could not be ended.
pub enum EndOutcome {
    Ended(Box<FastRow>),
    NotFound,
    NotRunning,
    BeforeStart,
}

/// Ends a running fast at `ended_at`; the status follows from its planned end. Under the user's
/// lock, like [`start`].
pub(crate) async fn end_in(
    conn: &mut Conn,
    user_id: &UserId,
    id: &str,
    ended_at: Option<DateTime<Utc>>,
) -> QueryResult<EndOutcome> {
    conn.transaction(async |conn| {
        crate::repo::lock_user(conn, user_id).await?;
        let Some(fast) = fast_event::table
            .filter(fast_event::id.eq(id))
            .filter(fast_event::user_id.eq(user_id))
            .select(FastRow::as_select())
            .for_update()
            .first(conn)
            .await
            .optional()?
        else {
            return Ok(EndOutcome::NotFound);
        };
        if fast.status != FastStatus::InProgress.as_str() {
            return Ok(EndOutcome::NotRunning);
        }
        let now = Utc::now();
        let ended_at = ended_at.unwrap_or(now);
        // A fast has a length: one ending where it started is refused.
        if ended_at <= fast.started_at {
            return Ok(EndOutcome::BeforeStart);
        }
        let status = FastStatus::on_end(fast.planned_end_at, ended_at);
        let row = diesel::update(fast_event::table.find(&fast.id))
            .set((
                fast_event::status.eq(status.as_str()),
                fast_event::ended_at.eq(ended_at),
                fast_event::next_milestone_at.eq(None::<DateTime<Utc>>),
                fast_event::updated_at.eq(now),
            ))
            .returning(FastRow::as_returning())
            .get_result(conn)
            .await?;
        Ok(EndOutcome::Ended(Box::new(row)))
    })
    .await
}

/// Why a fast could not be resumed.
pub enum ResumeOutcome {
    Resumed(Box<FastRow>),
    NotFound,
    /// This fast or another one is running.
    AlreadyRunning,
    /// It ended more than [`UNDO_WINDOW`] ago.
    TooLate,
    /// A later fast was started since: running on would overlap it.
    Overlaps,
}

/// Makes a fast ended within [`UNDO_WINDOW`] run again, as if it had never been ended: same
/// start, same planned end, the milestones already pushed stay pushed. Under the user's lock,
/// like [`start`] and [`end`], so that a parallel start or resume sees it running.
pub(crate) async fn resume_in(
    conn: &mut Conn,
    user_id: &UserId,
    id: &str,
    now: DateTime<Utc>,
) -> QueryResult<ResumeOutcome> {
    conn.transaction(async |conn| {
        crate::repo::lock_user(conn, user_id).await?;
        let Some(fast) = get_in(conn, user_id, id).await? else {
            return Ok(ResumeOutcome::NotFound);
        };
        let Some(ended_at) = fast.ended_at else {
            return Ok(ResumeOutcome::AlreadyRunning);
        };
        if current_in(conn, user_id).await?.is_some() {
            return Ok(ResumeOutcome::AlreadyRunning);
        }
        if now - ended_at > UNDO_WINDOW {
            return Ok(ResumeOutcome::TooLate);
        }
        let later: i64 = fast_event::table
            .filter(fast_event::user_id.eq(user_id))
            .filter(fast_event::id.ne(&fast.id))
            .filter(fast_event::started_at.ge(fast.started_at))
            .count()
            .get_result(conn)
            .await?;
        if later > 0 {
            return Ok(ResumeOutcome::Overlaps);
        }
        let row = diesel::update(fast_event::table.find(&fast.id))
            .set((
                fast_event::status.eq(FastStatus::InProgress.as_str()),
                fast_event::ended_at.eq(None::<DateTime<Utc>>),
                fast_event::next_milestone_at.eq(next_milestone_at(
                    fast.started_at,
                    fast.planned_end_at,
                    &fast.notified_milestones,
                    None,
                )),
                fast_event::updated_at.eq(now),
            ))
            .returning(FastRow::as_returning())
            .get_result(conn)
            .await?;
        Ok(ResumeOutcome::Resumed(Box::new(row)))
    })
    .await
}

/// Deletes the running fast that consuming a meal at `consumed_at` started, if it still runs:
/// the auto-started fast begins at the very instant of its consumption. Its id, if one went.
pub(crate) async fn remove_auto_started_in(
    conn: &mut Conn,
    user_id: &UserId,
    consumed_at: DateTime<Utc>,
) -> QueryResult<Option<String>> {
    diesel::delete(
        fast_event::table
            .filter(fast_event::user_id.eq(user_id))
            .filter(fast_event::auto_started.eq(true))
            .filter(fast_event::status.eq(FastStatus::InProgress.as_str()))
            .filter(fast_event::started_at.eq(consumed_at)),
    )
    .returning(fast_event::id)
    .get_result(conn)
    .await
    .optional()
}

/// Merges `patch` into the symptom diary (given fields replace stored ones); status and timer
/// are untouched. The row is locked so that two diary edits cannot lose each other's fields.
pub(crate) async fn patch_symptoms_in(
    conn: &mut Conn,
    user_id: &UserId,
    id: &str,
    patch: &Symptoms,
) -> QueryResult<Option<FastRow>> {
    conn.transaction(async |conn| {
        let Some(stored) = fast_event::table
            .filter(fast_event::id.eq(id))
            .filter(fast_event::user_id.eq(user_id))
            .select(fast_event::symptoms)
            .for_update()
            .first::<Option<serde_json::Value>>(conn)
            .await
            .optional()?
        else {
            return Ok(None);
        };
        let value = merge_symptoms(stored, patch)?;
        diesel::update(fast_event::table.find(id))
            .set((
                fast_event::symptoms.eq(value),
                fast_event::updated_at.eq(Utc::now()),
            ))
            .returning(FastRow::as_returning())
            .get_result(conn)
            .await
            .map(Some)
    })
    .await
}

/// The stored diary with the given fields of `patch` in place of the stored ones.
fn merge_symptoms(
    stored: Option<serde_json::Value>,
    patch: &Symptoms,
) -> QueryResult<serde_json::Value> {
    let mut merged: Symptoms = stored
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default();
    merged.headache = patch.headache.or(merged.headache);
    merged.energy = patch.energy.or(merged.energy);
    merged.hunger = patch.hunger.or(merged.hunger);
    merged.clarity = patch.clarity.or(merged.clarity);
    merged.note = patch.note.clone().or(merged.note);
    serde_json::to_value(&merged)
        .map_err(|e| diesel::result::Error::SerializationError(Box::new(e)))
}

/// [`start_in`] with the explicit protocol, or else the preferred one ([`StartOutcome::NoProtocol`]
/// when there is none).
pub async fn start(
    repo: &Repo,
    user_id: &UserId,
    explicit: Option<Protocol>,
    started_at: DateTime<Utc>,
    key: Option<&IdempotencyKey>,
) -> Result<Guarded<StartOutcome>, DbError> {
    run(
        repo,
        user_id,
        key,
        Utc::now(),
        async |conn| {
            let Some(protocol) = chosen(conn, user_id, explicit).await? else {
                return Ok(StartOutcome::NoProtocol);
            };
            start_in(conn, user_id, protocol, started_at, false).await
        },
        |o| match o {
            StartOutcome::Started(row) => Some(Answer::json(201, &Fast::from((**row).clone()))),
            _ => None,
        },
    )
    .await
}

/// The explicit protocol, or else the preferred one.
async fn chosen(
    conn: &mut Conn,
    user_id: &UserId,
    explicit: Option<Protocol>,
) -> QueryResult<Option<Protocol>> {
    Ok(match explicit {
        Some(p) => Some(p),
        None => crate::repo::profile::get_in(conn, user_id)
            .await?
            .fasting_protocol
            .and_then(|p| p.parse().ok()),
    })
}

/// [`record_in`] with the explicit protocol or else the preferred one (`None` when neither).
pub async fn record(
    repo: &Repo,
    user_id: &UserId,
    explicit: Option<Protocol>,
    started_at: DateTime<Utc>,
    ended_at: DateTime<Utc>,
    key: Option<&IdempotencyKey>,
) -> Result<Guarded<Option<RecordOutcome>>, DbError> {
    let now = Utc::now();
    run(
        repo,
        user_id,
        key,
        now,
        async |conn| match chosen(conn, user_id, explicit).await? {
            Some(protocol) => record_in(conn, user_id, protocol, started_at, ended_at, now)
                .await
                .map(Some),
            None => Ok(None),
        },
        |o| match o {
            Some(RecordOutcome::Recorded(row)) => {
                Some(Answer::json(201, &Fast::from((**row).clone())))
            }
            _ => None,
        },
    )
    .await
}

/// Corrects a fast ([`correct_in`]); a change of the diary alone leaves status, timer and
/// milestones as they are.
pub async fn correct(
    repo: &Repo,
    user_id: &UserId,
    id: &str,
    c: Correction,
    key: Option<&IdempotencyKey>,
) -> Result<Guarded<CorrectOutcome>, DbError> {
    let now = Utc::now();
    run(
        repo,
        user_id,
        key,
        now,
        async |conn| {
            if c.started_at.is_none() && c.ended_at.is_none() && c.protocol.is_none() {
                let Some(patch) = &c.symptoms else {
                    return get_in(conn, user_id, id).await.map(|r| {
                        r.map_or(CorrectOutcome::NotFound, |r| {
                            CorrectOutcome::Corrected(Box::new(r))
                        })
                    });
                };
                return patch_symptoms_in(conn, user_id, id, patch).await.map(|r| {
                    r.map_or(CorrectOutcome::NotFound, |r| {
                        CorrectOutcome::Corrected(Box::new(r))
                    })
                });
            }
            correct_in(conn, user_id, id, c, now).await
        },
        |o| match o {
            CorrectOutcome::Corrected(row) => Some(Answer::json(200, &Fast::from((**row).clone()))),
            _ => None,
        },
    )
    .await
}

pub async fn end(
    repo: &Repo,
    user_id: &UserId,
    id: &str,
    ended_at: Option<DateTime<Utc>>,
    key: Option<&IdempotencyKey>,
) -> Result<Guarded<EndOutcome>, DbError> {
    run(
        repo,
        user_id,
        key,
        Utc::now(),
        async |conn| end_in(conn, user_id, id, ended_at).await,
        |o| match o {
            EndOutcome::Ended(row) => Some(Answer::json(200, &Fast::from((**row).clone()))),
            _ => None,
        },
    )
    .await
}

pub async fn resume(
    repo: &Repo,
    user_id: &UserId,
    id: &str,
    now: DateTime<Utc>,
) -> Result<ResumeOutcome, DbError> {
    repo.with(async |conn| resume_in(conn, user_id, id, now).await)
        .await
}

pub async fn get(repo: &Repo, user_id: &UserId, id: &str) -> Result<Option<FastRow>, DbError> {
    repo.with(async |conn| get_in(conn, user_id, id).await)
        .await
}

pub async fn current(repo: &Repo, user_id: &UserId) -> Result<Option<FastRow>, DbError> {
    repo.with(async |conn| current_in(conn, user_id).await)
        .await
}

pub async fn list(
    repo: &Repo,
    user_id: &UserId,
    before: Option<DateTime<Utc>>,
    limit: i64,
) -> Result<Vec<FastRow>, DbError> {
    repo.with(async |conn| list_in(conn, user_id, before, limit).await)
        .await
}

/// What statistics read: every fast's status and times, and the pause history.
pub async fn history(
    repo: &Repo,
    user_id: &UserId,
) -> Result<(Vec<SpanRow>, Vec<domain::stats::PauseSpan>), DbError> {
    repo.with(async |conn| {
        Ok((
            spans_in(conn, user_id).await?,
            crate::repo::profile::pauses_in(conn, user_id).await?,
        ))
    })
    .await
}

/// Whether another fast of the user shares time with `[start, end)` (`end` `None`: running on).
/// Fasts are half-open: one may start at the instant another ended.
async fn overlaps_in(
    conn: &mut Conn,
    user_id: &UserId,
    except: Option<&str>,
    start: DateTime<Utc>,
    end: Option<DateTime<Utc>>,
) -> QueryResult<bool> {
    let mut q = fast_event::table
        .filter(fast_event::user_id.eq(user_id))
        .filter(
            fast_event::ended_at
                .is_null()
                .or(fast_event::ended_at.gt(start)),
        )
        .select(fast_event::id)
        .into_boxed();
    if let Some(end) = end {
        q = q.filter(fast_event::started_at.lt(end));
    }
    if let Some(id) = except {
        q = q.filter(fast_event::id.ne(id.to_owned()));
    }
    Ok(q.first::<String>(conn).await.optional()?.is_some())
}

/// Why a past fast could not be recorded.
pub enum RecordOutcome {
    Recorded(Box<FastRow>),
    Invalid(SpanError),
    Overlaps,
    DailyLimit,
}

/// Records a fast that has already ended. Under the user's lock, like [`start_in`].
pub(crate) async fn record_in(
    conn: &mut Conn,
    user_id: &UserId,
    protocol: Protocol,
    started_at: DateTime<Utc>,
    ended_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> QueryResult<RecordOutcome> {
    if let Err(e) = check_span(started_at, Some(ended_at), now, false) {
        return Ok(RecordOutcome::Invalid(e));
    }
    conn.transaction(async |conn| {
        crate::repo::lock_user(conn, user_id).await?;
        if overlaps_in(conn, user_id, None, started_at, Some(ended_at)).await? {
            return Ok(RecordOutcome::Overlaps);
        }
        if started_that_day(conn, user_id, started_at).await? >= MAX_FASTS_PER_DAY {
            return Ok(RecordOutcome::DailyLimit);
        }
        let row = insert_ended(conn, user_id, protocol, started_at, ended_at, None, now).await?;
        Ok(RecordOutcome::Recorded(Box::new(row)))
    })
    .await
}

/// How many fasts of the user start on the Rome day of `at`.
async fn started_that_day(
    conn: &mut Conn,
    user_id: &UserId,
    at: DateTime<Utc>,
) -> QueryResult<i64> {
    let (day_start, day_end) = domain::rome::day_range(domain::rome::local_date(at));
    fast_event::table
        .filter(fast_event::user_id.eq(user_id))
        .filter(fast_event::started_at.ge(day_start))
        .filter(fast_event::started_at.lt(day_end))
        .count()
        .get_result(conn)
        .await
}

/// Inserts an ended fast: no milestone is ever pushed for it.
async fn insert_ended(
    conn: &mut Conn,
    user_id: &UserId,
    protocol: Protocol,
    started_at: DateTime<Utc>,
    ended_at: DateTime<Utc>,
    symptoms: Option<serde_json::Value>,
    now: DateTime<Utc>,
) -> QueryResult<FastRow> {
    let planned_end = started_at + protocol.planned_duration();
    diesel::insert_into(fast_event::table)
        .values((
            fast_event::id.eq(session::ids::id()),
            fast_event::user_id.eq(user_id),
            fast_event::status.eq(FastStatus::on_end(planned_end, ended_at).as_str()),
            fast_event::protocol.eq(protocol.to_string()),
            fast_event::started_at.eq(started_at),
            fast_event::planned_end_at.eq(planned_end),
            fast_event::ended_at.eq(ended_at),
            fast_event::symptoms.eq(symptoms),
            fast_event::next_milestone_at.eq(None::<DateTime<Utc>>),
            fast_event::created_at.eq(now),
            fast_event::updated_at.eq(now),
        ))
        .returning(FastRow::as_returning())
        .get_result(conn)
        .await
}

/// A correction of a fast: what is given replaces what is stored.
#[derive(Debug, Default)]
pub struct Correction {
    pub started_at: Option<DateTime<Utc>>,
    pub ended_at: Option<DateTime<Utc>>,
    pub protocol: Option<Protocol>,
    pub symptoms: Option<Symptoms>,
}

/// Why a fast could not be corrected.
pub enum CorrectOutcome {
    Corrected(Box<FastRow>),
    NotFound,
    /// An end was given for a fast that is still running.
    StillRunning,
    Invalid(SpanError),
    Overlaps,
}

/// Corrects a fast's start, end or protocol (and its diary), and computes its status again. A
/// running fast keeps running: its planned end follows the start and protocol, and milestones
/// that the correction puts in the past are marked as sent without being sent. Under the user's
/// lock, like every change of a fast's times.
pub(crate) async fn correct_in(
    conn: &mut Conn,
    user_id: &UserId,
    id: &str,
    c: Correction,
    now: DateTime<Utc>,
) -> QueryResult<CorrectOutcome> {
    conn.transaction(async |conn| {
        crate::repo::lock_user(conn, user_id).await?;
        let Some(fast) = fast_event::table
            .filter(fast_event::id.eq(id))
            .filter(fast_event::user_id.eq(user_id))
            .select(FastRow::as_select())
            .for_update()
            .first(conn)
            .await
            .optional()?
        else {
            return Ok(CorrectOutcome::NotFound);
        };
        if c.ended_at.is_some() && fast.ended_at.is_none() {
            return Ok(CorrectOutcome::StillRunning);
        }
        let start = c.started_at.unwrap_or(fast.started_at);
        let end = c.ended_at.or(fast.ended_at);
        let protocol = match c.protocol {
            Some(p) => p,
            None => fast
                .protocol
                .parse::<Protocol>()
                .map_err(|e| diesel::result::Error::DeserializationError(Box::new(e)))?,
        };
        if c.started_at.is_some() || c.ended_at.is_some() {
            if let Err(e) = check_span(start, end, now, false) {
                return Ok(CorrectOutcome::Invalid(e));
            }
            if overlaps_in(conn, user_id, Some(&fast.id), start, end).await? {
                return Ok(CorrectOutcome::Overlaps);
            }
        }
        let planned_end = start + protocol.planned_duration();
        let (status, notified, next) = match end {
            Some(end) => (
                FastStatus::on_end(planned_end, end),
                fast.notified_milestones,
                None,
            ),
            None => {
                let mut notified = fast.notified_milestones;
                notified.extend(
                    due_milestones(start, planned_end, now, &notified)
                        .into_iter()
                        .map(|m| m.key().to_owned()),
                );
                let next = next_milestone_at(start, planned_end, &notified, None);
                (FastStatus::InProgress, notified, next)
            }
        };
        let symptoms = match c.symptoms {
            Some(patch) => Some(merge_symptoms(fast.symptoms, &patch)?),
            None => fast.symptoms,
        };
        let row = diesel::update(fast_event::table.find(&fast.id))
            .set((
                fast_event::status.eq(status.as_str()),
                fast_event::protocol.eq(protocol.to_string()),
                fast_event::started_at.eq(start),
                fast_event::planned_end_at.eq(planned_end),
                fast_event::ended_at.eq(end),
                fast_event::notified_milestones.eq(notified),
                fast_event::next_milestone_at.eq(next),
                fast_event::symptoms.eq(symptoms),
                fast_event::updated_at.eq(now),
            ))
            .returning(FastRow::as_returning())
            .get_result(conn)
            .await?;
        Ok(CorrectOutcome::Corrected(Box::new(row)))
    })
    .await
}

/// Deletes a fast of the user; whether there was one.
pub async fn delete(repo: &Repo, user_id: &UserId, id: &str) -> Result<bool, DbError> {
    repo.with(async |conn| {
        conn.transaction(async |conn| {
            crate::repo::lock_user(conn, user_id).await?;
            let gone = diesel::delete(
                fast_event::table
                    .filter(fast_event::id.eq(id))
                    .filter(fast_event::user_id.eq(user_id)),
            )
            .execute(conn)
            .await?;
            Ok(gone > 0)
        })
        .await
    })
    .await
}

/// One fast of an imported file: its line in the file and its times.
#[derive(Debug, Clone)]
pub struct ImportRow {
    pub line: usize,
    pub protocol: Protocol,
    pub started_at: DateTime<Utc>,
    pub ended_at: DateTime<Utc>,
}

/// Why a line of an imported file was not imported.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct Skipped {
    pub line: usize,
    pub reason: String,
}

/// Imports ended fasts: a row already recorded (same start and end) or overlapping another fast
/// (recorded before or earlier in the file) is skipped with its reason, as is one over the daily
/// limit. One transaction under the user's lock: the whole file or, on a failure, nothing.
pub async fn import(
    repo: &Repo,
    user_id: &UserId,
    rows: Vec<ImportRow>,
    mut skipped: Vec<Skipped>,
    now: DateTime<Utc>,
) -> Result<(usize, Vec<Skipped>), DbError> {
    repo.with(async |conn| {
        conn.transaction(async |conn| {
            crate::repo::lock_user(conn, user_id).await?;
            let mut known: Vec<(DateTime<Utc>, Option<DateTime<Utc>>)> = fast_event::table
                .filter(fast_event::user_id.eq(user_id))
                .select((fast_event::started_at, fast_event::ended_at))
                .load(conn)
                .await?;
            let mut per_day: std::collections::HashMap<chrono::NaiveDate, i64> =
                std::collections::HashMap::new();
            for (start, _) in &known {
                *per_day.entry(domain::rome::local_date(*start)).or_default() += 1;
            }
            let mut imported = 0;
            for row in rows {
                let (start, end) = (row.started_at, row.ended_at);
                let reason = if known.iter().any(|(s, e)| *s == start && *e == Some(end)) {
                    Some("already recorded")
                } else if known
                    .iter()
                    .any(|(s, e)| *s < end && e.is_none_or(|e| e > start))
                {
                    Some("overlaps another fast")
                } else if per_day
                    .get(&domain::rome::local_date(start))
                    .is_some_and(|n| *n >= MAX_FASTS_PER_DAY)
                {
                    Some("more than 20 fasts start on that day")
                } else {
                    None
                };
                if let Some(reason) = reason {
                    skipped.push(Skipped {
                        line: row.line,
                        reason: reason.to_owned(),
                    });
                    continue;
                }
                insert_ended(conn, user_id, row.protocol, start, end, None, now).await?;
                known.push((start, Some(end)));
                *per_day.entry(domain::rome::local_date(start)).or_default() += 1;
                imported += 1;
            }
            skipped.sort_by_key(|s| s.line);
            Ok((imported, skipped))
        })
        .await
    })
    .await
}
