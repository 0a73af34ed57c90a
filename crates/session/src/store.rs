//! Session rows in Postgres: creation, lookup with expiry and rolling refresh, deletion.

use chrono::{DateTime, Duration, SubsecRound, Utc};
use diesel::dsl;
use diesel::pg::Pg;
use diesel::prelude::*;
use pg_store::schema::auth::{session, user};

use crate::ids;
use crate::model::{Session, User};
use pg_store::ids::{SessionId, UserId};

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
    user_id: &UserId,
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
            session::id.eq(SessionId::from(ids::id())),
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

/// Records that the owner of session `id` proved who they are on it just now (a password or an
/// e-mailed code), which keeps it fresh for [`crate::model::PROOF_WINDOW`].
pub fn prove(conn: &mut PgConnection, id: &SessionId, now: DateTime<Utc>) -> QueryResult<usize> {
    diesel::update(session::table.find(id))
        .set(session::proven_at.eq(now))
        .execute(conn)
}

/// The lookup of a session by its token, joined with its user.
pub type Lookup<'a> = dsl::Select<
    dsl::Filter<dsl::InnerJoin<session::table, user::table>, dsl::Eq<session::token, &'a str>>,
    (dsl::AsSelect<Session, Pg>, dsl::AsSelect<User, Pg>),
>;

/// The statement that finds the session of `token` and its user: every service runs this one,
/// on its own kind of connection, and hands what it finds to [`settle`] or [`plan`].
pub fn lookup(token: &str) -> Lookup<'_> {
    session::table
        .inner_join(user::table)
        .filter(session::token.eq(token))
        .select((Session::as_select(), User::as_select()))
}

/// Looks `token` up. An expired session is deleted and reported as none; a session last
/// refreshed [`REFRESH_AGE`] or more ago is extended to now + [`SESSION_LIFETIME`].
pub fn verify(
    conn: &mut PgConnection,
    token: &str,
    now: DateTime<Utc>,
) -> QueryResult<Option<Verified>> {
    let found: Option<(Session, User)> = lookup(token).first(conn).optional()?;
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

/// Deletes one expired session.
pub type Expire = diesel::query_builder::DeleteStatement<
    session::table,
    <dsl::Filter<session::table, dsl::Eq<session::id, SessionId>> as diesel::query_builder::IntoUpdateTarget>::WhereClause,
>;

/// Extends one session, on condition that it was not extended meanwhile.
pub type Refresh = dsl::Update<
    dsl::Filter<
        dsl::Filter<session::table, dsl::Eq<session::id, SessionId>>,
        dsl::Eq<session::updated_at, DateTime<Utc>>,
    >,
    (
        dsl::Eq<session::expires_at, DateTime<Utc>>,
        dsl::Eq<session::updated_at, DateTime<Utc>>,
    ),
>;

/// What a found session needs before the request may use it, decided once for every service:
/// each runs the statement on its own kind of connection.
pub enum Settle {
    /// Neither expired nor due for the refresh: no statement.
    Steady(Verified),
    /// Expired: run the deletion; the request has no session.
    Expire(Expire),
    /// Due for the rolling refresh: run the update and hand the rows it changed to
    /// [`Refreshing::outcome`].
    Refresh(Refresh, Refreshing),
}

/// A session whose refresh statement is under way.
pub struct Refreshing {
    current: Session,
    user: User,
    now: DateTime<Utc>,
}

impl Refreshing {
    /// The verified session once the refresh changed `updated` rows: none means that a parallel
    /// request extended it first, which leaves this one with the session as it was read.
    pub fn outcome(self, updated: usize) -> Verified {
        let Self {
            mut current,
            user,
            now,
        } = self;
        let refreshed = updated > 0;
        if refreshed {
            current.expires_at = now + SESSION_LIFETIME;
            current.updated_at = now;
        }
        Verified {
            user,
            session: current,
            refreshed,
        }
    }
}

/// The rules of [`settle`] for `current` at `now`, without running anything.
pub fn plan(current: Session, user: User, now: DateTime<Utc>) -> Settle {
    if is_expired(&current, now) {
        return Settle::Expire(diesel::delete(
            session::table.filter(session::id.eq(current.id)),
        ));
    }
    if !is_due_for_refresh(&current, now) {
        return Settle::Steady(Verified {
            user,
            session: current,
            refreshed: false,
        });
    }
    // Postgres keeps microseconds: the session answered carries what the row then holds.
    let now = now.trunc_subsecs(6);
    // Conditional on the old value: of two parallel requests only one extends.
    let refresh = diesel::update(
        session::table
            .filter(session::id.eq(current.id.clone()))
            .filter(session::updated_at.eq(current.updated_at)),
    )
    .set((
        session::expires_at.eq(now + SESSION_LIFETIME),
        session::updated_at.eq(now),
    ));
    Settle::Refresh(refresh, Refreshing { current, user, now })
}

/// The rest of [`verify`] once the session row and its user are read, for routes that read them
/// together with rows of their own in one statement: deletes an expired session (reported as
/// none) and extends one last refreshed [`REFRESH_AGE`] or more ago. A session that is neither
/// costs no statement.
pub fn settle(
    conn: &mut PgConnection,
    current: Session,
    user: User,
    now: DateTime<Utc>,
) -> QueryResult<Option<Verified>> {
    match plan(current, user, now) {
        Settle::Steady(verified) => Ok(Some(verified)),
        Settle::Expire(delete) => delete.execute(conn).map(|_| None),
        Settle::Refresh(update, refreshing) => {
            update.execute(conn).map(|n| Some(refreshing.outcome(n)))
        }
    }
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
            two_factor_enabled: false,
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
            proven_at: None,
        }
    }

    #[test]
    fn fresh_is_young_or_recently_proven() {
        let now = Utc::now();
        let mut s = session(Duration::days(6), Duration::hours(1), now);
        s.created_at = now - Duration::hours(23);
        assert!(s.is_fresh(now), "created 23 h ago");
        s.created_at = now - Duration::hours(24);
        assert!(!s.is_fresh(now), "created a day ago");
        s.proven_at = Some(now - Duration::minutes(4));
        assert!(s.is_fresh(now), "proven 4 minutes ago");
        s.proven_at = Some(now - Duration::minutes(5));
        assert!(!s.is_fresh(now), "proven 5 minutes ago");
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
