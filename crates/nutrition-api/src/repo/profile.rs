//! The per-user profile row: preferences, pause and notification settings.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use domain::stats::PauseSpan;
use nutrition_store::schema::nutrition::{pause_period, profile};

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

pub fn get(conn: &mut PgConnection, user_id: &str) -> QueryResult<Profile> {
    Ok(profile::table
        .find(user_id)
        .select(Profile::as_select())
        .first(conn)
        .optional()?
        .unwrap_or_default())
}

/// Makes sure the row exists, so that updates can be plain UPDATEs.
fn ensure(conn: &mut PgConnection, user_id: &str) -> QueryResult<()> {
    diesel::insert_into(profile::table)
        .values(profile::user_id.eq(user_id))
        .on_conflict_do_nothing()
        .execute(conn)?;
    Ok(())
}

/// Sets what is given: `protocol` `Some(None)` clears the preferred protocol.
pub fn set_preferences(
    conn: &mut PgConnection,
    user_id: &str,
    protocol: Option<Option<String>>,
    milestones: Option<bool>,
) -> QueryResult<Profile> {
    ensure(conn, user_id)?;
    let target = profile::table.find(user_id);
    if let Some(p) = protocol {
        diesel::update(target)
            .set(profile::fasting_protocol.eq(p))
            .execute(conn)?;
    }
    if let Some(m) = milestones {
        diesel::update(target)
            .set(profile::fasting_milestones.eq(m))
            .execute(conn)?;
        if m {
            crate::repo::fasts::recheck_milestones(conn, user_id)?;
        }
    }
    diesel::update(target)
        .set(profile::updated_at.eq(Utc::now()))
        .execute(conn)?;
    get(conn, user_id)
}

/// Starts a pause until `until`, or ends the current one (`None`), recording the history that
/// streaks need.
///
/// Streaks only ask which Rome days a pause touched, so a pause set while the latest recorded one
/// still touches today extends that span instead of adding one: the days covered are the same,
/// and the history grows by at most one row per calendar day, however often the pause is set.
pub fn set_pause(
    conn: &mut PgConnection,
    user_id: &str,
    until: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> QueryResult<Profile> {
    conn.transaction(|conn| {
        ensure(conn, user_id)?;
        crate::repo::lock_user(conn, user_id)?;
        let latest: Option<(i64, DateTime<Utc>)> = pause_period::table
            .filter(pause_period::user_id.eq(user_id))
            .order((pause_period::starts_at.desc(), pause_period::id.desc()))
            .select((pause_period::id, pause_period::ends_at))
            .first(conn)
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
                    .execute(conn)?;
            }
            (_, Some(until)) => {
                diesel::insert_into(pause_period::table)
                    .values((
                        pause_period::user_id.eq(user_id),
                        pause_period::starts_at.eq(now),
                        pause_period::ends_at.eq(until),
                    ))
                    .execute(conn)?;
            }
            // A pause that is still running ends now.
            (Some((id, end)), None) if end > now => {
                diesel::update(pause_period::table.find(id))
                    .set(pause_period::ends_at.eq(now))
                    .execute(conn)?;
            }
            (_, None) => {}
        }
        diesel::update(profile::table.find(user_id))
            .set((
                profile::fasting_paused_until.eq(until),
                profile::updated_at.eq(now),
            ))
            .execute(conn)?;
        crate::repo::fasts::recheck_milestones(conn, user_id)?;
        get(conn, user_id)
    })
}

/// Sets the notification toggles that are given.
pub fn set_notifications(
    conn: &mut PgConnection,
    user_id: &str,
    meal_reminders: Option<bool>,
    weekly_weigh_in: Option<bool>,
) -> QueryResult<Profile> {
    ensure(conn, user_id)?;
    let target = profile::table.find(user_id);
    if let Some(v) = meal_reminders {
        diesel::update(target)
            .set(profile::meal_reminders.eq(v))
            .execute(conn)?;
    }
    if let Some(v) = weekly_weigh_in {
        diesel::update(target)
            .set(profile::weekly_weigh_in.eq(v))
            .execute(conn)?;
    }
    diesel::update(target)
        .set(profile::updated_at.eq(Utc::now()))
        .execute(conn)?;
    get(conn, user_id)
}

pub fn pauses(conn: &mut PgConnection, user_id: &str) -> QueryResult<Vec<PauseSpan>> {
    let rows: Vec<(DateTime<Utc>, DateTime<Utc>)> = pause_period::table
        .filter(pause_period::user_id.eq(user_id))
        .select((pause_period::starts_at, pause_period::ends_at))
        .load(conn)?;
    Ok(rows
        .into_iter()
        .map(|(start, end)| PauseSpan { start, end })
        .collect())
}
