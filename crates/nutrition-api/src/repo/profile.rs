//! The per-user profile row: preferences, pause and notification settings.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use session::UserId;

use crate::repo::Conn;
use service_kit::db::DbError;

use crate::repo::Repo;

use domain::stats::PauseSpan;
use pg_store::schema::nutrition::{pause_period, profile};

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = profile, check_for_backend(diesel::pg::Pg))]
pub struct Profile {
    pub fasting_protocol: Option<String>,
    pub fasting_milestones: bool,
    pub fasting_paused_until: Option<DateTime<Utc>>,
    pub meal_reminders: bool,
    pub weekly_weigh_in: bool,
}

impl Default for Profile {
    /// What a user who never changed anything has.
    fn default() -> Self {
        Self {
            fasting_protocol: None,
            fasting_milestones: false,
            fasting_paused_until: None,
            meal_reminders: false,
            weekly_weigh_in: true,
        }
    }
}

pub(crate) async fn get_in(conn: &mut Conn, user_id: &UserId) -> QueryResult<Profile> {
    Ok(profile::table
        .find(user_id)
        .select(Profile::as_select())
        .first(conn)
        .await
        .optional()?
        .unwrap_or_default())
}

/// Makes sure the row exists, so that updates can be plain UPDATEs.
async fn ensure(conn: &mut Conn, user_id: &UserId) -> QueryResult<()> {
    diesel::insert_into(profile::table)
        .values(profile::user_id.eq(user_id))
        .on_conflict_do_nothing()
        .execute(conn)
        .await?;
    Ok(())
}

/// Sets what is given: `protocol` `Some(None)` clears the preferred protocol.
pub(crate) async fn set_preferences_in(
    conn: &mut Conn,
    user_id: &UserId,
    protocol: Option<Option<String>>,
    milestones: Option<bool>,
) -> QueryResult<Profile> {
    ensure(conn, user_id).await?;
    let target = profile::table.find(user_id);
    if let Some(p) = protocol {
        diesel::update(target)
            .set(profile::fasting_protocol.eq(p))
            .execute(conn)
            .await?;
    }
    if let Some(m) = milestones {
        diesel::update(target)
            .set(profile::fasting_milestones.eq(m))
            .execute(conn)
            .await?;
        if m {
            crate::repo::fasts::recheck_milestones_in(conn, user_id).await?;
        }
    }
    diesel::update(target)
        .set(profile::updated_at.eq(Utc::now()))
        .execute(conn)
        .await?;
    get_in(conn, user_id).await
}

/// Starts a pause until `until`, or ends the current one (`None`), recording the history that
/// streaks need.
///
/// Streaks only ask which Rome days a pause touched, so a pause set while the latest recorded one
/// still touches today extends that span instead of adding one: the days covered are the same,
/// and the history grows by at most one row per calendar day, however often the pause is set.
pub(crate) async fn set_pause_in(
    conn: &mut Conn,
    user_id: &UserId,
    until: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> QueryResult<Profile> {
    conn.transaction(async |conn| {
        ensure(conn, user_id).await?;
        crate::repo::lock_user(conn, user_id).await?;
        let latest: Option<(i64, DateTime<Utc>)> = pause_period::table
            .filter(pause_period::user_id.eq(user_id))
            .order((pause_period::starts_at.desc(), pause_period::id.desc()))
            .select((pause_period::id, pause_period::ends_at))
            .first(conn)
            .await
            .optional()?;
        let today = domain::rome::local_date(now);
        // The last day a span touches is the day of its final instant.
        let touches_today = |end: DateTime<Utc>| {
            domain::rome::local_date(end - chrono::Duration::nanoseconds(1)) >= today
        };
        match (latest, until) {
            (Some((id, end)), Some(until)) if touches_today(end) => {
                diesel::update(pause_period::table.find(id))
                    .set(pause_period::ends_at.eq(until))
                    .execute(conn)
                    .await?;
            }
            (_, Some(until)) => {
                diesel::insert_into(pause_period::table)
                    .values((
                        pause_period::user_id.eq(user_id),
                        pause_period::starts_at.eq(now),
                        pause_period::ends_at.eq(until),
                    ))
                    .execute(conn)
                    .await?;
            }
            // A pause that is still running ends now.
            (Some((id, end)), None) if end > now => {
                diesel::update(pause_period::table.find(id))
                    .set(pause_period::ends_at.eq(now))
                    .execute(conn)
                    .await?;
            }
            (_, None) => {}
        }
        diesel::update(profile::table.find(user_id))
            .set((
                profile::fasting_paused_until.eq(until),
                profile::updated_at.eq(now),
            ))
            .execute(conn)
            .await?;
        crate::repo::fasts::recheck_milestones_in(conn, user_id).await?;
        get_in(conn, user_id).await
    })
    .await
}

/// Sets the notification toggles that are given.
pub(crate) async fn set_notifications_in(
    conn: &mut Conn,
    user_id: &UserId,
    meal_reminders: Option<bool>,
    weekly_weigh_in: Option<bool>,
) -> QueryResult<Profile> {
    ensure(conn, user_id).await?;
    let target = profile::table.find(user_id);
    if let Some(v) = meal_reminders {
        diesel::update(target)
            .set(profile::meal_reminders.eq(v))
            .execute(conn)
            .await?;
    }
    if let Some(v) = weekly_weigh_in {
        diesel::update(target)
            .set(profile::weekly_weigh_in.eq(v))
            .execute(conn)
            .await?;
    }
    diesel::update(target)
        .set(profile::updated_at.eq(Utc::now()))
        .execute(conn)
        .await?;
    get_in(conn, user_id).await
}

pub(crate) async fn pauses_in(conn: &mut Conn, user_id: &UserId) -> QueryResult<Vec<PauseSpan>> {
    let rows: Vec<(DateTime<Utc>, DateTime<Utc>)> = pause_period::table
        .filter(pause_period::user_id.eq(user_id))
        .select((pause_period::starts_at, pause_period::ends_at))
        .load(conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(start, end)| PauseSpan { start, end })
        .collect())
}

pub async fn get(repo: &Repo, user_id: &UserId) -> Result<Profile, DbError> {
    repo.with(async |conn| get_in(conn, user_id).await).await
}

pub async fn set_preferences(
    repo: &Repo,
    user_id: &UserId,
    protocol: Option<Option<String>>,
    milestones: Option<bool>,
) -> Result<Profile, DbError> {
    repo.with(async |conn| set_preferences_in(conn, user_id, protocol, milestones).await)
        .await
}

pub async fn set_pause(
    repo: &Repo,
    user_id: &UserId,
    until: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<Profile, DbError> {
    repo.with(async |conn| set_pause_in(conn, user_id, until, now).await)
        .await
}

pub async fn set_notifications(
    repo: &Repo,
    user_id: &UserId,
    meal_reminders: Option<bool>,
    weekly_weigh_in: Option<bool>,
) -> Result<Profile, DbError> {
    repo.with(async |conn| {
        set_notifications_in(conn, user_id, meal_reminders, weekly_weigh_in).await
    })
    .await
}
