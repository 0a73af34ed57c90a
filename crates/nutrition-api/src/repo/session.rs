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

/// The profile columns `GET /me` answers with: protocol, milestones, paused until.
pub type ProfileColumns = (Option<String>, bool, Option<DateTime<Utc>>);

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

/// `GET /me`'s read: the session of `token`, its user and the user's profile columns in one
/// statement, then what [`session::store::plan`] asks of the session.
pub async fn me(
    repo: &Repo,
    token: &str,
    now: DateTime<Utc>,
) -> Result<Option<(Verified, Option<ProfileColumns>)>, DbError> {
    let row: Option<(Session, User, Option<ProfileColumns>)> = repo
        .shared(async |mut conn| {
            session_table::table
                .inner_join(user::table)
                .left_join(profile::table.on(profile::user_id.eq(session_table::user_id)))
                .filter(session_table::token.eq(token))
                .select((
                    Session::as_select(),
                    User::as_select(),
                    (
                        profile::fasting_protocol,
                        profile::fasting_milestones,
                        profile::fasting_paused_until,
                    )
                        .nullable(),
                ))
                .first(&mut conn)
                .await
                .optional()
                .map_err(DbError::from)
        })
        .await?;
    let Some((current, user, profile)) = row else {
        return Ok(None);
    };
    let settled = settle(repo, current, user, now).await?;
    Ok(settled.map(|verified| (verified, profile)))
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
