//! Fast events.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use session::UserId;

use crate::repo::Conn;
use service_kit::db::DbError;

use crate::repo::Repo;

use domain::fasting::{FastStatus, MAX_FASTS_PER_DAY, UNDO_WINDOW, next_milestone_at};
use domain::protocol::Protocol;
use pg_store::schema::nutrition::fast_event;

use crate::model::{FastRow, Symptoms};

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
        let mut merged: Symptoms = stored
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default();
        merged.headache = patch.headache.or(merged.headache);
        merged.energy = patch.energy.or(merged.energy);
        merged.hunger = patch.hunger.or(merged.hunger);
        merged.clarity = patch.clarity.or(merged.clarity);
        merged.note = patch.note.clone().or(merged.note);
        let value = serde_json::to_value(&merged)
            .map_err(|e| diesel::result::Error::SerializationError(Box::new(e)))?;
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

/// [`start_in`] with the explicit protocol, or else the preferred one ([`StartOutcome::NoProtocol`]
/// when there is none).
pub async fn start(
    repo: &Repo,
    user_id: &UserId,
    explicit: Option<Protocol>,
    started_at: DateTime<Utc>,
) -> Result<StartOutcome, DbError> {
    repo.with(async |conn| {
        let protocol = match explicit {
            Some(p) => p,
            None => match crate::repo::profile::get_in(conn, user_id)
                .await?
                .fasting_protocol
                .and_then(|p| p.parse().ok())
            {
                Some(p) => p,
                None => return Ok(StartOutcome::NoProtocol),
            },
        };
        start_in(conn, user_id, protocol, started_at, false).await
    })
    .await
}

pub async fn end(
    repo: &Repo,
    user_id: &UserId,
    id: &str,
    ended_at: Option<DateTime<Utc>>,
) -> Result<EndOutcome, DbError> {
    repo.with(async |conn| end_in(conn, user_id, id, ended_at).await)
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

pub async fn patch_symptoms(
    repo: &Repo,
    user_id: &UserId,
    id: &str,
    patch: &Symptoms,
) -> Result<Option<FastRow>, DbError> {
    repo.with(async |conn| patch_symptoms_in(conn, user_id, id, patch).await)
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
