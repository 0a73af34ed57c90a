//! Session rows in Postgres: creation, lookup with expiry and rolling refresh, deletion.

use chrono::{DateTime, Duration, Utc};
use diesel::prelude::*;
use nutrition_store::schema::auth::{session, user};

use crate::ids;
use crate::model::{Session, User};

/// Lifetime of a remembered session.
pub const SESSION_LIFETIME: Duration = Duration::days(7);
/// Lifetime of a session whose user asked not to be remembered (browser-session cookie).
pub const SHORT_SESSION_LIFETIME: Duration = Duration::days(1);
/// A session last refreshed this long ago is extended on its next verified request.
pub const REFRESH_AGE: Duration = Duration::hours(24);
/// Sessions one person may hold; a new one beyond ends the least recently used. Far above the
/// devices a person uses, it keeps listing and revoking sessions (which read them all) small.
pub const MAX_SESSIONS_PER_USER: i64 = 50;

/// What a verified request learns about its session.
#[derive(Debug, Clone)]
pub struct Verified {
    pub user: User,
    pub session: Session,
    /// The session was extended now; the cookie must be sent again.
    pub refreshed: bool,
}

/// Where a new session comes from.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    pub ip_address: Option<String>,
    pub user_agent: Option<String>,
}

/// Creates a session for `user_id`; returns it with its token.
pub fn create(
    conn: &mut PgConnection,
    user_id: &str,
    remember: bool,
    origin: &Origin,
    now: DateTime<Utc>,
) -> QueryResult<Session> {
    let lifetime = if remember {
        SESSION_LIFETIME
    } else {
        SHORT_SESSION_LIFETIME
    };
    let created = diesel::insert_into(session::table)
        .values((
            session::id.eq(ids::id()),
            session::token.eq(ids::session_token()),
            session::user_id.eq(user_id),
            session::expires_at.eq(now + lifetime),
            session::created_at.eq(now),
            session::updated_at.eq(now),
            session::ip_address.eq(origin.ip_address.as_deref()),
            session::user_agent.eq(origin.user_agent.as_deref()),
        ))
        .returning(Session::as_returning())
        .get_result(conn)?;
    let beyond: Vec<String> = session::table
        .filter(session::user_id.eq(user_id))
        .order((session::updated_at.desc(), session::created_at.desc()))
        .select(session::id)
        .offset(MAX_SESSIONS_PER_USER)
        .load(conn)?;
    if !beyond.is_empty() {
        diesel::delete(session::table.filter(session::id.eq_any(&beyond))).execute(conn)?;
    }
    Ok(created)
}

/// Looks `token` up. An expired session is deleted and reported as none; a session last
/// refreshed [`REFRESH_AGE`] or more ago is extended to now + [`SESSION_LIFETIME`].
pub fn verify(
    conn: &mut PgConnection,
    token: &str,
    now: DateTime<Utc>,
) -> QueryResult<Option<Verified>> {
    let found: Option<(Session, User)> = session::table
        .inner_join(user::table)
        .filter(session::token.eq(token))
        .select((Session::as_select(), User::as_select()))
        .first(conn)
        .optional()?;
    match found {
        Some((current, user)) => settle(conn, current, user, now),
        None => Ok(None),
    }
}

fn is_expired(current: &Session, now: DateTime<Utc>) -> bool {
    current.expires_at <= now
}

fn is_due_for_refresh(current: &Session, now: DateTime<Utc>) -> bool {
    current.updated_at <= now - REFRESH_AGE
}

/// The session verified as it is, when it is neither expired nor due for its rolling refresh at
/// `now`: [`settle`] would then change nothing, so a read-only path may accept it. `None` when
/// only [`settle`] can decide.
pub fn steady(current: Session, user: User, now: DateTime<Utc>) -> Option<Verified> {
    (!is_expired(&current, now) && !is_due_for_refresh(&current, now)).then_some(Verified {
        user,
        session: current,
        refreshed: false,
    })
}

/// The rest of [`verify`] once the session row and its user are read, for routes that read them
/// together with rows of their own in one statement: deletes an expired session (reported as
/// none) and extends one last refreshed [`REFRESH_AGE`] or more ago. A session that is neither
/// costs no statement.
pub fn settle(
    conn: &mut PgConnection,
    mut current: Session,
    user: User,
    now: DateTime<Utc>,
) -> QueryResult<Option<Verified>> {
    if is_expired(&current, now) {
        diesel::delete(session::table.filter(session::id.eq(&current.id))).execute(conn)?;
        return Ok(None);
    }
    let mut refreshed = false;
    if is_due_for_refresh(&current, now) {
        // Conditional on the old value: of two parallel requests only one extends.
        let updated = diesel::update(
            session::table
                .filter(session::id.eq(&current.id))
                .filter(session::updated_at.eq(current.updated_at)),
        )
        .set((
            session::expires_at.eq(now + SESSION_LIFETIME),
            session::updated_at.eq(now),
        ))
        .returning(Session::as_returning())
        .get_result(conn)
        .optional()?;
        if let Some(updated) = updated {
            current = updated;
            refreshed = true;
        }
    }
    Ok(Some(Verified {
        user,
        session: current,
        refreshed,
    }))
}

/// Deletes the session with `token`, if any.
pub fn delete_by_token(conn: &mut PgConnection, token: &str) -> QueryResult<usize> {
    diesel::delete(session::table.filter(session::token.eq(token))).execute(conn)
}

/// Deletes every expired session; returns how many.
pub fn delete_expired(conn: &mut PgConnection, now: DateTime<Utc>) -> QueryResult<usize> {
    diesel::delete(session::table.filter(session::expires_at.le(now))).execute(conn)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_steady(current: &Session, now: DateTime<Utc>) -> bool {
        let user = User {
            id: "u".into(),
            name: "U".into(),
            email: "u@example.com".into(),
            email_verified: false,
            image: None,
            created_at: now,
            updated_at: now,
        };
        steady(current.clone(), user, now).is_some_and(|v| !v.refreshed)
    }

    fn session(expires_in: Duration, refreshed_ago: Duration, now: DateTime<Utc>) -> Session {
        Session {
            id: "s".into(),
            token: "t".into(),
            user_id: "u".into(),
            expires_at: now + expires_in,
            created_at: now - Duration::days(3),
            updated_at: now - refreshed_ago,
            ip_address: None,
            user_agent: None,
        }
    }

    /// Steady means exactly what `settle` leaves alone: not expired, not due for a refresh.
    #[test]
    fn steady_sessions_are_neither_expired_nor_due() {
        let now = Utc::now();
        let second = Duration::seconds(1);
        assert!(is_steady(
            &session(Duration::days(6), Duration::hours(1), now),
            now
        ));
        assert!(is_steady(&session(second, REFRESH_AGE - second, now), now));
        assert!(!is_steady(
            &session(Duration::zero(), Duration::hours(1), now),
            now
        ));
        assert!(!is_steady(&session(-second, Duration::hours(1), now), now));
        assert!(!is_steady(
            &session(Duration::days(6), REFRESH_AGE, now),
            now
        ));
    }
}
