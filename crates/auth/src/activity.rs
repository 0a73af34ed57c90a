//! The account events auth records (`session::activity` keeps the rules shared with
//! nutrition-api), the sign-in that records itself and warns of a new device, and the list of
//! `GET /api/auth/activity`.
//!
//! A new device is a browser (its user agent) and network (its /24 or /48) that the user has not
//! signed in from in the last 90 days, for a user who has signed in before: the first sign-in
//! of an account, its sign-up, warns of nothing. The pair, not each part, is what is new: the
//! server cannot tell the same laptop on a new network, or after a browser update, from someone
//! else, so the mail says what it saw and asks nothing of a person who recognises it.

use chrono::{DateTime, Utc};
use diesel::dsl::exists;
use diesel::expression::IntoSql;
use diesel::prelude::*;
use pg_store::schema::auth::activity;
use serde::Serialize;
use session::activity::{Client, KEEP, Kind, Listed};
use session::store::Origin;
use session::{Session, UserId};
use url::Url;
use utoipa::ToSchema;

use crate::links::{self, Purpose};
use crate::repo::{Tx, outbox};

pub use session::activity::record;

/// A new session for `user_id`, who just proved who they are, recorded as a `sign_in`; when it
/// comes from a new device the warning mail is queued in the same transaction. Returns the
/// session and whether a mail was queued (for waking the sender after the commit).
pub fn signed_in(
    conn: &mut Tx,
    user_id: &UserId,
    remember: bool,
    origin: &Origin,
    base_url: &Url,
    now: DateTime<Utc>,
) -> QueryResult<(Session, bool)> {
    let session = session::store::create(conn, user_id, remember, origin, now)?;
    let client = Client::from(origin);
    let new_device = is_new_device(conn, user_id, &client, now)?;
    record(conn, user_id, Kind::SignIn, &client, now)?;
    let user = match new_device {
        true => crate::repo::users::find_by_id(conn, user_id)?,
        false => None,
    };
    if let Some(user) = user {
        let token = links::issue(conn, Purpose::NotMe, &user.id, now)?;
        let link = links::not_me_link(base_url, &token);
        let locale = crate::i18n::user_locale(conn, &user.id)?;
        let mail = crate::mail::new_device(
            &link,
            &user.name,
            &device(client.user_agent.as_deref(), locale),
            client.network.as_deref(),
            locale,
        );
        outbox::enqueue(conn, &mail.to(&user.email))?;
    }
    Ok((session, new_device))
}

/// The browser and system a user agent names, in words the mail can show: the user agent itself
/// is whatever the client sent, and a mail of ours must not carry someone else's text or links.
pub fn device(user_agent: Option<&str>, locale: crate::i18n::Locale) -> String {
    let texts = crate::i18n::texts(locale);
    let Some(ua) = user_agent else {
        return texts.unknown_browser.to_owned();
    };
    let browser = [
        ("Firefox/", "Firefox"),
        ("Edg/", "Edge"),
        ("Chrome/", "Chrome"),
        ("Chromium/", "Chromium"),
        ("Safari/", "Safari"),
    ]
    .into_iter()
    .find(|(mark, _)| ua.contains(mark))
    .map_or(texts.some_browser, |(_, name)| name);
    let system = [
        ("Android", "Android"),
        ("iPhone", "iOS"),
        ("iPad", "iPadOS"),
        ("Mac OS X", "macOS"),
        ("Windows", "Windows"),
        ("Linux", "Linux"),
    ]
    .into_iter()
    .find(|(mark, _)| ua.contains(mark))
    .map(|(_, name)| name);
    match system {
        Some(system) => texts
            .browser_on_system
            .replace("{browser}", browser)
            .replace("{system}", system),
        None => browser.to_owned(),
    }
}

fn is_new_device(
    conn: &mut Tx,
    user_id: &UserId,
    client: &Client,
    now: DateTime<Utc>,
) -> QueryResult<bool> {
    let sign_ins = activity::table
        .filter(activity::user_id.eq(user_id))
        .filter(activity::kind.eq(Kind::SignIn.as_str()))
        .filter(activity::at.gt(now - KEEP));
    let (any, same): (bool, bool) = diesel::select((
        exists(sign_ins),
        exists(
            sign_ins
                .filter(activity::user_agent.is_not_distinct_from(client.user_agent.as_deref()))
                .filter(activity::ip.is_not_distinct_from(client.network.as_deref())),
        ),
    ))
    .get_result(conn)?;
    Ok(any && !same)
}

/// Records a failed sign-in for the account with `email`, in one statement that does the same
/// work whether or not there is one. A log already at [`session::activity::MAX_PER_USER`]
/// takes no more failures (anyone who knows the address can cause them) until the next
/// [`record`] trims it.
pub fn failed_sign_in(
    conn: &mut Tx,
    email: &str,
    client: &Client,
    now: DateTime<Utc>,
) -> QueryResult<usize> {
    use diesel::dsl::count_star;
    use diesel::sql_types::{Nullable, Text, Timestamptz};
    use pg_store::schema::auth::user;

    // The activity table a second time, for the count inside the insert's own select.
    let kept = diesel::alias!(activity as kept);
    let logged = kept
        .filter(kept.field(activity::user_id).eq(user::id))
        .select(count_star())
        .single_value();
    let rows = user::table
        .filter(user::email.eq(email))
        .filter(logged.lt(session::activity::MAX_PER_USER))
        .select((
            session::ids::id().into_sql::<Text>(),
            user::id,
            Kind::SignInFailed.as_str().into_sql::<Text>(),
            now.into_sql::<Timestamptz>(),
            client.user_agent.clone().into_sql::<Nullable<Text>>(),
            client.network.clone().into_sql::<Nullable<Text>>(),
        ));
    diesel::insert_into(activity::table)
        .values(rows)
        .into_columns((
            activity::id,
            activity::user_id,
            activity::kind,
            activity::at,
            activity::user_agent,
            activity::ip,
        ))
        .execute(conn)
}

/// The answer of `GET /api/auth/activity`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Activity {
    pub items: Vec<Listed>,
}

/// The user's events of the last 90 days, newest first.
pub fn list(conn: &mut Tx, user_id: &UserId, now: DateTime<Utc>) -> QueryResult<Vec<Listed>> {
    session::activity::listing(user_id, now).load(conn)
}

#[cfg(test)]
mod tests {
    use super::device;
    use crate::i18n::Locale::{En, It};

    #[test]
    fn devices_are_named_not_quoted() {
        let firefox = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0";
        assert_eq!(device(Some(firefox), It), "Firefox su Linux");
        let iphone = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 \
                      (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1";
        assert_eq!(device(Some(iphone), It), "Safari su iOS");
        let android =
            "Mozilla/5.0 (Linux; Android 15) AppleWebKit/537.36 Chrome/131.0 Mobile Safari/537.36";
        assert_eq!(device(Some(android), It), "Chrome su Android");
        assert_eq!(
            device(Some("Visit https://evil.example now"), It),
            "un browser"
        );
        assert_eq!(device(None, It), "un browser sconosciuto");
        assert_eq!(device(Some(firefox), En), "Firefox on Linux");
        assert_eq!(device(None, En), "an unknown browser");
    }
}
