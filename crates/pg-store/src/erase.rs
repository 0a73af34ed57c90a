//! Erasure of one person from every schema of the database (GDPR art. 17), in one transaction.
//!
//! Rows are deleted table by table rather than left to `ON DELETE CASCADE`, so that tables
//! without a foreign key to the user (the scheduler's outbox, verification values, rate-limit
//! counters) are covered as well, and so that the list below is the one place that says what
//! erasure reaches. A table added later that holds personal data belongs here too; the deletion
//! test scans every table of every schema and fails otherwise.

use diesel::prelude::*;
use diesel::sql_types::Text;

use crate::schema::auth::{account, mail_outbox, passkey, rate_limit, session, two_factor, user};
use crate::schema::nutrition::{
    device_token, fast_event, idempotency, meal_plan, meal_slot, pause_period, profile,
    test_push_limit, water, weight,
};
use crate::schema::scheduler::outbox;

/// How many rows erasure removed, per table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Erased {
    pub tables: Vec<(&'static str, usize)>,
}

impl Erased {
    pub fn total(&self) -> usize {
        self.tables.iter().map(|(_, n)| n).sum()
    }
}

#[derive(QueryableByName)]
struct Found {
    #[diesel(sql_type = Text)]
    email: String,
}

#[derive(QueryableByName)]
struct Endpoint {
    #[diesel(sql_type = Text)]
    endpoint: String,
}

/// Erases the user `user_id` and everything that names them: the auth rows (user, sessions,
/// accounts, verification values naming the id or the address, and the rate-limit counters
/// `rate_limit_keys` that the caller derives from the address), every `nutrition` row and every
/// `scheduler` outbox row addressed to the user or to one of their push endpoints.
///
/// `Ok(None)` when there is no such user. Runs in a transaction (a savepoint when the caller
/// already holds one): either everything goes or nothing does.
pub fn erase_user(
    conn: &mut PgConnection,
    user_id: &crate::ids::UserId,
    rate_limit_keys: &[String],
) -> QueryResult<Option<Erased>> {
    conn.transaction(|conn| {
        // The row lock makes a parallel erasure wait and then find nothing; the advisory lock is
        // the one nutrition-api takes around a user's writes (`repo::lock_user`), so that no
        // fast, plan or device is being added while the rows go.
        let found: Option<Found> =
            diesel::sql_query("SELECT email FROM auth.\"user\" WHERE id = $1 FOR UPDATE")
                .bind::<Text, _>(user_id)
                .get_result(conn)
                .optional()?;
        let Some(Found { email }) = found else {
            return Ok(None);
        };
        diesel::sql_query(
            "SELECT pg_advisory_xact_lock(hashtextextended('nutrition.user:' || $1, 0))",
        )
        .bind::<Text, _>(user_id)
        .execute(conn)?;

        let endpoints: Vec<String> = diesel::sql_query(
            "SELECT endpoint FROM nutrition.device_token WHERE user_id = $1
             UNION SELECT endpoint FROM scheduler.outbox WHERE user_id = $1",
        )
        .bind::<Text, _>(user_id)
        .load::<Endpoint>(conn)?
        .into_iter()
        .map(|e| e.endpoint)
        .collect();

        let mut erased = Erased::default();
        let mut note = |table: &'static str, n: usize| erased.tables.push((table, n));

        note(
            "scheduler.outbox",
            diesel::delete(
                outbox::table.filter(
                    outbox::user_id
                        .eq(user_id)
                        .or(outbox::endpoint.eq_any(&endpoints)),
                ),
            )
            .execute(conn)?,
        );
        note(
            "nutrition.test_push_limit",
            diesel::delete(test_push_limit::table.filter(test_push_limit::user_id.eq(user_id)))
                .execute(conn)?,
        );
        note(
            "nutrition.pause_period",
            diesel::delete(pause_period::table.filter(pause_period::user_id.eq(user_id)))
                .execute(conn)?,
        );
        note(
            "nutrition.device_token",
            diesel::delete(
                device_token::table.filter(
                    device_token::user_id
                        .eq(user_id)
                        .or(device_token::endpoint.eq_any(&endpoints)),
                ),
            )
            .execute(conn)?,
        );
        note(
            "nutrition.meal_slot",
            diesel::delete(meal_slot::table.filter(meal_slot::user_id.eq(user_id)))
                .execute(conn)?,
        );
        note(
            "nutrition.meal_plan",
            diesel::delete(meal_plan::table.filter(meal_plan::user_id.eq(user_id)))
                .execute(conn)?,
        );
        note(
            "nutrition.fast_event",
            diesel::delete(fast_event::table.filter(fast_event::user_id.eq(user_id)))
                .execute(conn)?,
        );
        note(
            "nutrition.weight",
            diesel::delete(weight::table.filter(weight::user_id.eq(user_id))).execute(conn)?,
        );
        note(
            "nutrition.water",
            diesel::delete(water::table.filter(water::user_id.eq(user_id))).execute(conn)?,
        );
        note(
            "nutrition.idempotency",
            diesel::delete(idempotency::table.filter(idempotency::user_id.eq(user_id)))
                .execute(conn)?,
        );
        note(
            "nutrition.profile",
            diesel::delete(profile::table.filter(profile::user_id.eq(user_id))).execute(conn)?,
        );
        // Verification values name a person by address (as identifier or value) or by id (as
        // value, alone or inside a JSON document). Ids are random, so a substring match on them
        // hits nobody else; an address must match a whole value or a quoted JSON string, so that
        // `ann@x.org` never takes `joann@x.org`'s rows; an e-mailed code is `<kind>-otp-<address>`.
        note(
            "auth.verification",
            diesel::sql_query(
                "DELETE FROM auth.verification
                  WHERE identifier = $2 OR value = $2
                     OR right(identifier, length($2) + 5) = '-otp-' || $2
                     OR strpos(value, $1) > 0 OR strpos(identifier, $1) > 0
                     OR strpos(value, '\"' || $2 || '\"') > 0",
            )
            .bind::<Text, _>(user_id)
            .bind::<Text, _>(&email)
            .execute(conn)?,
        );
        // Reset and verification mails, sent or waiting: they carry the address, the name and a
        // link naming the user.
        note(
            "auth.mail_outbox",
            diesel::delete(mail_outbox::table.filter(mail_outbox::to_address.eq(&email)))
                .execute(conn)?,
        );
        note(
            "auth.rate_limit",
            diesel::delete(rate_limit::table.filter(rate_limit::key.eq_any(rate_limit_keys)))
                .execute(conn)?,
        );
        note(
            "auth.session",
            diesel::delete(session::table.filter(session::user_id.eq(user_id))).execute(conn)?,
        );
        note(
            "auth.two_factor",
            diesel::delete(two_factor::table.filter(two_factor::user_id.eq(user_id)))
                .execute(conn)?,
        );
        note(
            "auth.passkey",
            diesel::delete(passkey::table.filter(passkey::user_id.eq(user_id))).execute(conn)?,
        );
        note(
            "auth.account",
            diesel::delete(account::table.filter(account::user_id.eq(user_id))).execute(conn)?,
        );
        note(
            "auth.user",
            diesel::delete(user::table.filter(user::id.eq(user_id))).execute(conn)?,
        );
        Ok(Some(erased))
    })
}
