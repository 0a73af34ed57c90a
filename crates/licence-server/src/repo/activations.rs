//! The `activation` table and the activation flow, whose limit holds under concurrent requests.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use domain::licensing::{ACTIVATION_LIMIT, Plan, Status};

use diesel::sql_types::{Datetime, Integer, Nullable, Text};

use super::fixed::{Bind, fixed};
use super::licences::{self, LicenceAccess, LicenceRow};
use super::{Conn, Db, DbError, LicenceId, Pool};
use crate::schema::activation;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = activation, check_for_backend(diesel::mysql::Mysql))]
pub struct ActivationRow {
    pub id: String,
    pub licence_id: LicenceId,
    pub instance_id: String,
    pub instance_name: Option<String>,
    pub created_at: NaiveDateTime,
    pub last_validated_at: NaiveDateTime,
}

/// The installations of a licence, oldest first.
pub async fn list(db: &Db, licence_id: &LicenceId) -> Result<Vec<ActivationRow>, DbError> {
    db.run(async |conn| list_on(conn, licence_id).await).await
}

pub(crate) async fn list_on(
    conn: &mut Conn,
    licence_id: &LicenceId,
) -> QueryResult<Vec<ActivationRow>> {
    activation::table
        .filter(activation::licence_id.eq(licence_id))
        .order((activation::created_at.asc(), activation::instance_id.asc()))
        .select(ActivationRow::as_select())
        .load(conn)
        .await
}

/// How many seats a licence has taken.
pub async fn count(db: &Db, licence_id: &LicenceId) -> Result<u32, DbError> {
    db.run(async |conn| count_on(conn, licence_id).await).await
}

pub(crate) async fn count_on(conn: &mut Conn, licence_id: &LicenceId) -> QueryResult<u32> {
    let n: i64 = activation::table
        .filter(activation::licence_id.eq(licence_id))
        .count()
        .get_result(conn)
        .await?;
    Ok(u32::try_from(n).unwrap_or(u32::MAX))
}

pub(crate) async fn find(
    conn: &mut Conn,
    licence_id: &LicenceId,
    instance_id: &str,
) -> QueryResult<Option<ActivationRow>> {
    activation::table
        .filter(activation::licence_id.eq(licence_id))
        .filter(activation::instance_id.eq(instance_id))
        .select(ActivationRow::as_select())
        .first(conn)
        .await
        .optional()
}

/// How a request names its licence.
#[derive(Debug, Clone, Copy)]
pub enum LicenceBy<'a> {
    Id(&'a LicenceId),
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
/// indexed by `n`: each licence with the seat of its own installation, one row per licence found.
/// Each licence appears at most once.
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
/// is no such licence. By licence id, the reads of a worker that arrive while it has one in
/// flight are sent together ([`SeatsById`]).
pub async fn seat(
    db: &Db,
    by: LicenceBy<'_>,
    instance_id: &str,
) -> Result<Option<SeatFound>, DbError> {
    match by {
        LicenceBy::Id(id) => {
            let row = db
                .seats
                .submit((id.to_string(), instance_id.to_owned()))
                .await?;
            Ok(row.map(|row| row.found(instance_id)))
        }
        LicenceBy::Key(key) => {
            let row = db
                .run(async |conn| seat_row(conn, SEAT_BY_KEY, key, instance_id).await)
                .await?;
            Ok(row.map(|row| row.found(instance_id)))
        }
    }
}

/// [`seat`] by licence id on a connection the caller holds (in a transaction).
pub(crate) async fn seat_on(
    conn: &mut Conn,
    licence_id: &LicenceId,
    instance_id: &str,
) -> QueryResult<Option<SeatFound>> {
    let row = seat_row(conn, SEAT_BY_ID, licence_id.as_str(), instance_id).await?;
    Ok(row.map(|row| row.found(instance_id)))
}

async fn seat_row(
    conn: &mut Conn,
    sql: &'static str,
    licence: &str,
    instance_id: &str,
) -> QueryResult<Option<SeatRow>> {
    let binds = vec![
        Bind::Text(instance_id.to_owned()),
        Bind::Text(licence.to_owned()),
    ];
    fixed(sql, binds).get_result(conn).await.optional()
}

/// Seat reads by licence id and installation, sent together: [`SEAT_BY_ID`] for one,
/// [`SEATS_BY_ID`] for several. One answer per request: its licence's row, if any.
pub(crate) struct SeatsById(pub(crate) Pool<Conn>);

impl service_kit::adb::Batch for SeatsById {
    /// The licence id and the installation.
    type Item = (String, String);
    type Answer = Option<SeatRow>;
    const KIND: &'static str = "validate";
    const MAX: usize = crate::repo::usage::MAX_TAKEN_AT_ONCE;
    /// One: the seat is a consistent read, which waits on no lock, so a second statement in
    /// flight would only split the waiting requests in two. Held on two cores with one worker
    /// per core, one and two per worker answered 17,700–19,900 and 17,200–18,700 validates/s,
    /// the same build restarted with each setting in turn, five times each.
    const SENDERS: usize = 1;

    fn fits(batch: &[(String, String)], item: &(String, String)) -> bool {
        batch.iter().all(|(id, _)| *id != item.0)
    }

    async fn send(&self, batch: &[(String, String)]) -> Result<Vec<Option<SeatRow>>, DbError> {
        if let [(id, instance_id)] = batch {
            let row = self
                .0
                .run(async |conn| seat_row(conn, SEAT_BY_ID, id, instance_id).await)
                .await?;
            return Ok(vec![row]);
        }
        let mut binds = Vec::with_capacity(3 * batch.len());
        for (id, instance_id) in batch {
            binds.push(Bind::Text(id.clone()));
            binds.push(Bind::Text(instance_id.clone()));
        }
        binds.extend(batch.iter().map(|(id, _)| Bind::Text(id.clone())));
        let sql = SEATS_BY_ID[batch.len()].as_str();
        let mut rows: Vec<SeatRow> = self
            .0
            .run(async |conn| fixed(sql, binds).load(conn).await)
            .await?;
        Ok(batch
            .iter()
            .map(|(id, _)| {
                let i = rows.iter().position(|r| r.seat.id == **id)?;
                Some(rows.swap_remove(i))
            })
            .collect())
    }
}

/// The columns of [`seat_columns`], in its order.
#[derive(QueryableByName)]
pub(crate) struct SeatCols {
    #[diesel(sql_type = Text)]
    pub(crate) id: LicenceId,
    #[diesel(sql_type = Text)]
    pub(crate) license_key: String,
    #[diesel(sql_type = Text, deserialize_as = super::Known<Status>)]
    pub(crate) status: Status,
    #[diesel(sql_type = Text, deserialize_as = super::Known<Plan>)]
    pub(crate) plan: Plan,
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

/// A row of the seat statements.
#[derive(QueryableByName)]
pub(crate) struct SeatRow {
    #[diesel(embed)]
    seat: SeatCols,
    #[diesel(sql_type = Integer)]
    seats: i32,
}

impl SeatRow {
    fn found(self, instance_id: &str) -> SeatFound {
        let (licence, activation) = self.seat.split(instance_id);
        (
            licence,
            activation,
            u32::try_from(self.seats).unwrap_or(u32::MAX),
        )
    }
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
pub async fn touch(db: &Db, id: &str, at: NaiveDateTime) -> Result<(), DbError> {
    let binds = vec![Bind::Datetime(at), Bind::Text(id.to_owned())];
    db.run(async |conn| fixed(TOUCH, binds).execute(conn).await)
        .await?;
    Ok(())
}

/// Frees the slot of `instance_id`; the number of rows removed (0 or 1).
pub(crate) async fn delete(
    conn: &mut Conn,
    licence_id: &LicenceId,
    instance_id: &str,
) -> QueryResult<usize> {
    diesel::delete(
        activation::table
            .filter(activation::licence_id.eq(licence_id))
            .filter(activation::instance_id.eq(instance_id)),
    )
    .execute(conn)
    .await
}

/// Frees the slot of `instance_id` on the licence `key`, as an operator asks; the number of
/// rows removed (0 or 1). The licence row first, as activate and deactivate lock it: the
/// trigger that counts the seat updates that row, and the same order everywhere deadlocks
/// nowhere.
pub async fn release(db: &Db, key: &str, instance_id: &str) -> Result<usize, DbError> {
    db.transaction(async |conn| {
        let Some(licence) = licences::find_by_key_for_update(conn, key).await? else {
            return Ok(0);
        };
        delete(conn, &licence.id, instance_id).await
    })
    .await
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
pub async fn activate(
    db: &Db,
    key: &str,
    instance_id: &str,
    instance_name: Option<&str>,
    now: chrono::DateTime<chrono::Utc>,
    stale_after: chrono::Duration,
) -> Result<Activated, DbError> {
    db.transaction(async |conn| {
        activate_on(conn, key, instance_id, instance_name, now, stale_after).await
    })
    .await
}

async fn activate_on(
    conn: &mut Conn,
    key: &str,
    instance_id: &str,
    instance_name: Option<&str>,
    now: chrono::DateTime<chrono::Utc>,
    stale_after: chrono::Duration,
) -> QueryResult<Activated> {
    let Some(licence) = licences::find_by_key_for_update(conn, key).await? else {
        return Ok(Activated::LicenceNotFound);
    };
    if !licence.has_access(now) {
        return Ok(Activated::Inactive);
    }
    let at = now.naive_utc();
    if let Some(existing) = find(conn, &licence.id, instance_id).await? {
        let name = instance_name.map(str::to_owned).or(existing.instance_name);
        diesel::update(activation::table.find(&existing.id))
            .set((
                activation::instance_name.eq(&name),
                activation::last_validated_at.eq(at),
            ))
            .execute(conn)
            .await?;
    } else {
        if count_on(conn, &licence.id).await? >= ACTIVATION_LIMIT {
            let stale: Option<ActivationRow> = activation::table
                .filter(activation::licence_id.eq(&licence.id))
                .filter(activation::last_validated_at.le((now - stale_after).naive_utc()))
                .order((
                    activation::last_validated_at.asc(),
                    activation::created_at.asc(),
                ))
                .select(ActivationRow::as_select())
                .first(conn)
                .await
                .optional()?;
            let Some(stale) = stale else {
                return Ok(Activated::LimitReached);
            };
            diesel::delete(activation::table.find(&stale.id))
                .execute(conn)
                .await?;
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
            .execute(conn)
            .await?;
    }
    let activation = find(conn, &licence.id, instance_id)
        .await?
        .ok_or(diesel::NotFound)?;
    let usage = count_on(conn, &licence.id).await?;
    Ok(Activated::Done {
        licence: Box::new(licence),
        activation,
        usage,
    })
}
