//! The session rules of the `session` crate, run through this service's door: its lookup and
//! its deletion or rolling refresh ([`session::store::plan`]) are the crate's statements, sent on
//! the worker's shared connection.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use pg_store::schema::auth::{session as session_table, user};
use pg_store::schema::nutrition::profile;
use service_kit::db::DbError;
use session::store::{Settle, Verified};
use session::{Session, User};

use super::Repo;
use super::profile::Profile;
use domain::locale::Locale;

/// The profile columns `GET /me` answers with (see [`Profile`]).
type ProfileColumns = (
    Option<String>,
    bool,
    Option<DateTime<Utc>>,
    bool,
    bool,
    Option<i32>,
    Option<i16>,
    i32,
    bool,
);

fn profile_of(c: ProfileColumns) -> Profile {
    Profile {
        fasting_protocol: c.0,
        fasting_milestones: c.1,
        fasting_paused_until: c.2,
        meal_reminders: c.3,
        weekly_weigh_in: c.4,
        weight_goal_hg: c.5,
        height_cm: c.6,
        water_goal_ml: c.7,
        long_fast_acknowledged: c.8,
    }
}

/// The session of `token` verified at `now` (deleted when expired, extended when due), or none.
pub async fn verify(
    repo: &Repo,
    token: &str,
    now: DateTime<Utc>,
) -> Result<Option<Verified>, DbError> {
    let found: Option<(Session, User)> = repo
        .shared(async |mut conn| {
            session::store::lookup(token)
                .first(&mut conn)
                .await
                .optional()
                .map_err(DbError::from)
        })
        .await?;
    match found {
        Some((current, user)) => settle(repo, current, user, now).await,
        None => Ok(None),
    }
}

/// `GET /me`'s read: the session of `token`, its user, the user's language and profile in one
/// statement, then what [`session::store::plan`] asks of the session. A user who never changed
/// a preference has no profile row: the defaults.
pub async fn me(
    repo: &Repo,
    token: &str,
    now: DateTime<Utc>,
) -> Result<Option<(Verified, Profile, Locale)>, DbError> {
    let row: Option<(Session, User, String, Option<ProfileColumns>)> = repo
        .shared(async |mut conn| {
            session_table::table
                .inner_join(user::table)
                .left_join(profile::table.on(profile::user_id.eq(session_table::user_id)))
                .filter(session_table::token.eq(token))
                .select((
                    Session::as_select(),
                    User::as_select(),
                    user::locale,
                    (
                        profile::fasting_protocol,
                        profile::fasting_milestones,
                        profile::fasting_paused_until,
                        profile::meal_reminders,
                        profile::weekly_weigh_in,
                        profile::weight_goal_hg,
                        profile::height_cm,
                        profile::water_goal_ml,
                        profile::long_fast_acknowledged,
                    )
                        .nullable(),
                ))
                .first(&mut conn)
                .await
                .optional()
                .map_err(DbError::from)
        })
        .await?;
    let Some((current, user, locale, profile)) = row else {
        return Ok(None);
    };
    let settled = settle(repo, current, user, now).await?;
    let profile = profile.map(profile_of).unwrap_or_default();
    let locale = locale.parse().unwrap_or_default();
    Ok(settled.map(|verified| (verified, profile, locale)))
}

async fn settle(
    repo: &Repo,
    current: Session,
    user: User,
    now: DateTime<Utc>,
) -> Result<Option<Verified>, DbError> {
    match session::store::plan(current, user, now) {
        Settle::Steady(verified) => Ok(Some(verified)),
        Settle::Expire(delete) => {
            repo.shared(async |mut conn| delete.execute(&mut conn).await.map_err(DbError::from))
                .await?;
            Ok(None)
        }
        Settle::Refresh(update, refreshing) => {
            let updated = repo
                .shared(async |mut conn| update.execute(&mut conn).await.map_err(DbError::from))
                .await?;
            Ok(Some(refreshing.outcome(updated)))
        }
    }
}
