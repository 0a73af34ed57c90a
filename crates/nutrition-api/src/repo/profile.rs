//! The per-user profile row: preferences, pause and notification settings.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use session::UserId;

use crate::repo::Conn;
use service_kit::db::DbError;

use crate::repo::Repo;

use domain::locale::Locale;
use domain::stats::PauseSpan;
use pg_store::schema::auth::user;
use pg_store::schema::nutrition::{pause_period, profile};

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = profile, check_for_backend(diesel::pg::Pg))]
pub struct Profile {
    pub fasting_protocol: Option<String>,
    pub fasting_milestones: bool,
    pub fasting_paused_until: Option<DateTime<Utc>>,
    pub meal_reminders: bool,
    pub weekly_weigh_in: bool,
    pub weight_goal_hg: Option<i32>,
    pub height_cm: Option<i16>,
    pub water_goal_ml: i32,
    pub long_fast_acknowledged: bool,
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
            weight_goal_hg: None,
            height_cm: None,
            water_goal_ml: 2000,
            long_fast_acknowledged: false,
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

/// The preferences a `PATCH` gives; `None` leaves a value as it is, `Some(None)` clears it.
#[derive(Debug, Default, AsChangeset)]
#[diesel(table_name = profile)]
pub struct PreferencesPatch {
    pub fasting_protocol: Option<Option<String>>,
    pub fasting_milestones: Option<bool>,
    pub weight_goal_hg: Option<Option<i32>>,
    pub height_cm: Option<Option<i16>>,
    pub water_goal_ml: Option<i32>,
    pub long_fast_acknowledged: Option<bool>,
    pub updated_at: Option<DateTime<Utc>>,
}

/// Sets what is given, the language on the user's row and the rest on the profile.
pub(crate) async fn set_preferences_in(
    conn: &mut Conn,
    user_id: &UserId,
    mut patch: PreferencesPatch,
    locale: Option<Locale>,
) -> QueryResult<(Profile, Locale)> {
    conn.transaction(async |conn| {
        ensure(conn, user_id).await?;
        let now = Utc::now();
        let milestones_on = patch.fasting_milestones == Some(true);
        patch.updated_at = Some(now);
        diesel::update(profile::table.find(user_id))
            .set(&patch)
            .execute(conn)
            .await?;
        if milestones_on {
            crate::repo::fasts::recheck_milestones_in(conn, user_id).await?;
        }
        if let Some(locale) = locale {
            diesel::update(user::table.find(user_id))
                .set((user::locale.eq(locale.as_str()), user::updated_at.eq(now)))
                .execute(conn)
                .await?;
        }
        Ok((
            get_in(conn, user_id).await?,
            locale_in(conn, user_id).await?,
        ))
    })
    .await
}

/// The user's language.
pub(crate) async fn locale_in(conn: &mut Conn, user_id: &UserId) -> QueryResult<Locale> {
    let stored: Option<String> = user::table
        .find(user_id)
        .select(user::locale)
        .first(conn)
        .await
        .optional()?;
    Ok(stored.and_then(|l| l.parse().ok()).unwrap_or_default())
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
    patch: PreferencesPatch,
    locale: Option<Locale>,
) -> Result<(Profile, Locale), DbError> {
    repo.with(async |conn| set_preferences_in(conn, user_id, patch, locale).await)
        .await
}

/// The preferences and the language.
pub async fn preferences(repo: &Repo, user_id: &UserId) -> Result<(Profile, Locale), DbError> {
    repo.with(async |conn| {
        Ok((
            get_in(conn, user_id).await?,
            locale_in(conn, user_id).await?,
        ))
    })
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
