//! The `activation` table and the activation flow, whose limit holds under concurrent requests.

use chrono::NaiveDateTime;
use diesel::mysql::MysqlConnection;
use diesel::prelude::*;
use domain::licensing::{ACTIVATION_LIMIT, Plan};

use diesel::sql_types::{BigInt, Datetime, Integer, Nullable, Text};

use super::fixed::{Bind, fixed};
use super::licences::{self, LicenceAccess, LicenceRow};
use crate::schema::activation;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = activation, check_for_backend(diesel::mysql::Mysql))]
pub struct ActivationRow {
    pub id: String,
    pub licence_id: String,
    pub instance_id: String,
    pub instance_name: Option<String>,
    pub created_at: NaiveDateTime,
    pub last_validated_at: NaiveDateTime,
}

pub fn list(conn: &mut MysqlConnection, licence_id: &str) -> QueryResult<Vec<ActivationRow>> {
    activation::table
        .filter(activation::licence_id.eq(licence_id))
        .order((activation::created_at.asc(), activation::instance_id.asc()))
        .select(ActivationRow::as_select())
        .load(conn)
}

pub fn count(conn: &mut MysqlConnection, licence_id: &str) -> QueryResult<u32> {
    let n: i64 = activation::table
        .filter(activation::licence_id.eq(licence_id))
        .count()
        .get_result(conn)?;
    Ok(u32::try_from(n).unwrap_or(u32::MAX))
}

pub fn find(
    conn: &mut MysqlConnection,
    licence_id: &str,
    instance_id: &str,
) -> QueryResult<Option<ActivationRow>> {
    activation::table
        .filter(activation::licence_id.eq(licence_id))
        .filter(activation::instance_id.eq(instance_id))
        .select(ActivationRow::as_select())
        .first(conn)
        .optional()
}

/// How a request names its licence.
#[derive(Debug, Clone, Copy)]
pub enum LicenceBy<'a> {
    Id(&'a str),
    Key(&'a str),
}

/// The columns a request from an installation reads: the licence and, as `a_*`, the
/// installation's activation on it (all `NULL` when it holds no seat).
macro_rules! seat_columns {
    () => {
        "l.id, l.license_key, l.status, l.plan, l.expires_at, l.disabled_at, \
         a.id AS a_id, a.instance_name AS a_instance_name, \
         a.created_at AS a_created_at, a.last_validated_at AS a_last_validated_at"
    };
}

/// The licence joined with the seat of the instance bound first.
macro_rules! seat_join {
    () => {
        " FROM licence l \
         LEFT JOIN activation a ON a.licence_id = l.id AND a.instance_id = ? "
    };
}

/// The seat and the seat count of the licence chosen by `$filter`. The count is the licence's
/// own `seats` column, which triggers keep with every insert and delete of an activation
/// (migration `2026-11-26-001100_licence_seat_count`): a correlated count of the activations
/// cost this statement about a third of its throughput.
macro_rules! seat_sql {
    ($filter:literal) => {
        concat!(
            "SELECT ",
            seat_columns!(),
            ", l.seats",
            seat_join!(),
            "WHERE ",
            $filter,
            " LIMIT 1"
        )
    };
}

pub(crate) const SEAT_BY_ID: &str = seat_sql!("l.id = ?");
pub(crate) const SEAT_BY_KEY: &str = seat_sql!("l.license_key = ?");

/// [`SEAT_BY_ID`] for `n` licences at once (2 to [`crate::repo::usage::MAX_TAKEN_AT_ONCE`]),
/// indexed by `n`: each licence with the seat of its own installation, one row per licence found,
/// which names it in its first column. Each licence appears at most once.
///
/// Placeholders: `n` times (licence id, instance id), then the `n` licence ids.
pub(crate) static SEATS_BY_ID: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| {
    (0..=crate::repo::usage::MAX_TAKEN_AT_ONCE)
        .map(|n| {
            format!(
                "SELECT {}, l.seats FROM licence l LEFT JOIN activation a ON a.licence_id = l.id \
                 AND (a.licence_id, a.instance_id) IN ({}) WHERE l.id IN ({})",
                seat_columns!(),
                vec!["(?, ?)"; n].join(", "),
                vec!["?"; n].join(", ")
            )
        })
        .collect()
});

/// The licence, the installation's activation on it (`None` when it holds no seat) and how many
/// seats the licence has taken.
pub type SeatFound = (LicenceAccess, Option<ActivationRow>, u32);

/// What a request from an installation needs to know, read in one statement. `None` when there
/// is no such licence.
pub fn seat(
    conn: &mut MysqlConnection,
    by: LicenceBy<'_>,
    instance_id: &str,
) -> QueryResult<Option<SeatFound>> {
    let (sql, value) = match by {
        LicenceBy::Id(id) => (SEAT_BY_ID, id),
        LicenceBy::Key(key) => (SEAT_BY_KEY, key),
    };
    let row: Option<SeatRow> = fixed(
        sql,
        vec![
            Bind::Text(instance_id.to_owned()),
            Bind::Text(value.to_owned()),
        ],
    )
    .get_result(conn)
    .optional()?;
    Ok(row.map(|r| {
        let (licence, activation) = r.seat.split(instance_id);
        (
            licence,
            activation,
            u32::try_from(r.seats).unwrap_or(u32::MAX),
        )
    }))
}

/// What [`seat_and_take`] read, and the unit it took on the way.
#[derive(Debug)]
pub struct SeatAndTake {
    pub licence: LicenceAccess,
    pub activation: Option<ActivationRow>,
    /// Whether a unit was taken and the day's count, when the statement could decide on its own
    /// that the installation may consume (see [`seat_and_take`]); `None` when it left the count
    /// alone.
    pub taken: Option<(bool, u32)>,
}

// The plans' names are the only values the column's CHECK constraint admits; the quotas
// come from `Plan::daily_quota`, bound in the order of `Plan::ALL` (a test holds the two
// lists together). Any other name takes nothing here.
pub(crate) const SEAT_AND_TAKE: &str = concat!(
    "SELECT ",
    seat_columns!(),
    ", IF(a.id IS NOT NULL AND l.status = 'active' AND l.disabled_at IS NULL \
         AND (l.expires_at IS NULL OR l.expires_at > ?) \
         AND l.plan IN ('basic', 'pro', 'premium', 'annual'), \
       licence_usage_take(l.id, ?, CASE l.plan WHEN 'basic' THEN ? WHEN 'pro' THEN ? \
         WHEN 'premium' THEN ? WHEN 'annual' THEN ? END), \
       NULL) AS taken",
    seat_join!(),
    "WHERE l.id = ? LIMIT 1"
);

/// The seat of `instance_id` on licence `licence_id` and, in the same statement, one unit of
/// `day`'s quota when the licence plainly grants access: status `active`, not disabled, not
/// past its `expires_at` at `now`, and the installation holds a seat. That condition implies
/// [`domain::licensing::has_access`], so a request the caller then refuses never took a unit;
/// a licence with access on other grounds (on trial, past due, cancelled with a paid end)
/// comes back with `taken: None` and consumes with a statement of its own. One round trip
/// instead of two for nearly every consumption. `None` when there is no such licence.
pub fn seat_and_take(
    conn: &mut MysqlConnection,
    licence_id: &str,
    instance_id: &str,
    day: chrono::NaiveDate,
    now: NaiveDateTime,
) -> QueryResult<Option<SeatAndTake>> {
    let binds = seat_and_take_binds(licence_id, instance_id, day, now);
    let row: Option<SeatTakeRow> = fixed(SEAT_AND_TAKE, binds).get_result(conn).optional()?;
    Ok(row.map(|r| {
        let (licence, activation) = r.seat.split(instance_id);
        SeatAndTake {
            licence,
            activation,
            taken: r.taken.map(super::usage::outcome),
        }
    }))
}

/// The values of [`SEAT_AND_TAKE`]'s placeholders.
pub(crate) fn seat_and_take_binds(
    licence_id: &str,
    instance_id: &str,
    day: chrono::NaiveDate,
    now: NaiveDateTime,
) -> Vec<Bind> {
    // Placeholders are filled in the order of the text: the select list's, the join's, then
    // the filter's.
    let mut binds = vec![Bind::Datetime(now), Bind::Date(day)];
    binds.extend(
        Plan::ALL
            .iter()
            .map(|plan| Bind::Int(i32::try_from(plan.daily_quota()).unwrap_or(i32::MAX))),
    );
    binds.push(Bind::Text(instance_id.to_owned()));
    binds.push(Bind::Text(licence_id.to_owned()));
    binds
}

/// The columns of [`seat_columns`], in its order (the direct path reads them by position).
#[derive(QueryableByName)]
pub(crate) struct SeatCols {
    #[diesel(sql_type = Text)]
    pub(crate) id: String,
    #[diesel(sql_type = Text)]
    pub(crate) license_key: String,
    #[diesel(sql_type = Text)]
    pub(crate) status: String,
    #[diesel(sql_type = Text)]
    pub(crate) plan: String,
    #[diesel(sql_type = Nullable<Datetime>)]
    pub(crate) expires_at: Option<NaiveDateTime>,
    #[diesel(sql_type = Nullable<Datetime>)]
    pub(crate) disabled_at: Option<NaiveDateTime>,
    #[diesel(sql_type = Nullable<Text>)]
    pub(crate) a_id: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub(crate) a_instance_name: Option<String>,
    #[diesel(sql_type = Nullable<Datetime>)]
    pub(crate) a_created_at: Option<NaiveDateTime>,
    #[diesel(sql_type = Nullable<Datetime>)]
    pub(crate) a_last_validated_at: Option<NaiveDateTime>,
}

#[derive(QueryableByName)]
struct SeatRow {
    #[diesel(embed)]
    seat: SeatCols,
    #[diesel(sql_type = Integer)]
    seats: i32,
}

#[derive(QueryableByName)]
struct SeatTakeRow {
    #[diesel(embed)]
    seat: SeatCols,
    #[diesel(sql_type = Nullable<BigInt>)]
    taken: Option<i64>,
}

impl SeatCols {
    pub(crate) fn split(self, instance_id: &str) -> (LicenceAccess, Option<ActivationRow>) {
        let activation = match (self.a_id, self.a_created_at, self.a_last_validated_at) {
            (Some(id), Some(created_at), Some(last_validated_at)) => Some(ActivationRow {
                id,
                licence_id: self.id.clone(),
                instance_id: instance_id.to_owned(),
                instance_name: self.a_instance_name,
                created_at,
                last_validated_at,
            }),
            _ => None,
        };
        let licence = LicenceAccess {
            id: self.id,
            license_key: self.license_key,
            status: self.status,
            plan: self.plan,
            expires_at: self.expires_at,
            disabled_at: self.disabled_at,
        };
        (licence, activation)
    }
}

/// Binds: the time, the activation's id.
pub(crate) const TOUCH: &str = "UPDATE activation SET last_validated_at = ? WHERE id = ?";

/// Records a successful validation.
pub fn touch(conn: &mut MysqlConnection, id: &str, at: NaiveDateTime) -> QueryResult<()> {
    fixed(TOUCH, vec![Bind::Datetime(at), Bind::Text(id.to_owned())]).execute(conn)?;
    Ok(())
}

/// Frees the slot of `instance_id`; the number of rows removed (0 or 1).
pub fn delete(
    conn: &mut MysqlConnection,
    licence_id: &str,
    instance_id: &str,
) -> QueryResult<usize> {
    diesel::delete(
        activation::table
            .filter(activation::licence_id.eq(licence_id))
            .filter(activation::instance_id.eq(instance_id)),
    )
    .execute(conn)
}

pub enum Activated {
    Done {
        licence: Box<LicenceRow>,
        activation: ActivationRow,
        usage: u32,
    },
    LicenceNotFound,
    Inactive,
    LimitReached,
}

/// Activates `instance_id` on the licence `key`. The licence row is locked first, so concurrent
/// activations of one licence run one after the other and each sees the others' slots; the same
/// instance again reuses its slot (and takes the new name, if one is given). When every seat is
/// taken, the installation that has not validated for the longest time gives up its seat if
/// that was `stale_after` ago or more.
pub fn activate(
    conn: &mut MysqlConnection,
    key: &str,
    instance_id: &str,
    instance_name: Option<&str>,
    now: chrono::DateTime<chrono::Utc>,
    stale_after: chrono::Duration,
) -> QueryResult<Activated> {
    conn.transaction(|conn| {
        let Some(licence) = licences::find_by_key_for_update(conn, key)? else {
            return Ok(Activated::LicenceNotFound);
        };
        if !licence.has_access(now) {
            return Ok(Activated::Inactive);
        }
        let at = now.naive_utc();
        if let Some(existing) = find(conn, &licence.id, instance_id)? {
            let name = instance_name.map(str::to_owned).or(existing.instance_name);
            diesel::update(activation::table.find(&existing.id))
                .set((
                    activation::instance_name.eq(&name),
                    activation::last_validated_at.eq(at),
                ))
                .execute(conn)?;
        } else {
            if count(conn, &licence.id)? >= ACTIVATION_LIMIT {
                let stale: Option<ActivationRow> = activation::table
                    .filter(activation::licence_id.eq(&licence.id))
                    .filter(activation::last_validated_at.le((now - stale_after).naive_utc()))
                    .order((
                        activation::last_validated_at.asc(),
                        activation::created_at.asc(),
                    ))
                    .select(ActivationRow::as_select())
                    .first(conn)
                    .optional()?;
                let Some(stale) = stale else {
                    return Ok(Activated::LimitReached);
                };
                diesel::delete(activation::table.find(&stale.id)).execute(conn)?;
                tracing::info!("a stale installation's seat went to a new one");
            }
            diesel::insert_into(activation::table)
                .values((
                    activation::id.eq(super::new_id()),
                    activation::licence_id.eq(&licence.id),
                    activation::instance_id.eq(instance_id),
                    activation::instance_name.eq(instance_name),
                    activation::created_at.eq(at),
                    activation::last_validated_at.eq(at),
                ))
                .execute(conn)?;
        }
        let activation = find(conn, &licence.id, instance_id)?.ok_or(diesel::NotFound)?;
        let usage = count(conn, &licence.id)?;
        Ok(Activated::Done {
            licence: Box::new(licence),
            activation,
            usage,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The statement's `CASE` names the plans in the order their quotas are bound, and the
    /// guard admits exactly those names.
    #[test]
    fn seat_and_take_binds_each_plan_its_own_quota() {
        let mut from = 0;
        for plan in Plan::ALL {
            let arm = format!("WHEN '{}' THEN ?", plan.as_str());
            let at = SEAT_AND_TAKE[from..]
                .find(&arm)
                .unwrap_or_else(|| panic!("{arm} missing or out of order"));
            from += at + arm.len();
        }
        assert_eq!(SEAT_AND_TAKE.matches(" WHEN '").count(), Plan::ALL.len());
        let names: Vec<String> = Plan::ALL
            .iter()
            .map(|p| format!("'{}'", p.as_str()))
            .collect();
        assert!(
            SEAT_AND_TAKE.contains(&format!("l.plan IN ({})", names.join(", "))),
            "the guard's plan list"
        );
    }
}
