//! The `activation` table and the activation flow, whose limit holds under concurrent requests.

use chrono::NaiveDateTime;
use diesel::mysql::MysqlConnection;
use diesel::prelude::*;
use domain::licensing::ACTIVATION_LIMIT;

use super::licences::{self, LicenceRow};
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

/// What a request from an installation needs to know, read in one statement: the licence,
/// the installation's activation on it (`None` when it holds no seat) and, when `counted`, how
/// many seats the licence has taken (0 otherwise). `None` when there is no such licence.
pub fn seat(
    conn: &mut MysqlConnection,
    by: LicenceBy<'_>,
    instance_id: &str,
    counted: bool,
) -> QueryResult<Option<(LicenceRow, Option<ActivationRow>, u32)>> {
    use crate::schema::licence;
    use diesel::dsl::sql;
    use diesel::sql_types::BigInt;

    // A correlated count against the `(licence_id, instance_id)` key: an index range of at
    // most ACTIVATION_LIMIT entries, cheaper than a second round trip.
    let usage = if counted {
        "(SELECT COUNT(*) FROM activation AS seats WHERE seats.licence_id = licence.id)"
    } else {
        "0"
    };
    let query = licence::table
        .left_join(
            activation::table.on(activation::licence_id
                .eq(licence::id)
                .and(activation::instance_id.eq(instance_id))),
        )
        .select((
            LicenceRow::as_select(),
            Option::<ActivationRow>::as_select(),
            sql::<BigInt>(usage),
        ))
        .into_boxed();
    let query = match by {
        LicenceBy::Id(id) => query.filter(licence::id.eq(id)),
        LicenceBy::Key(key) => query.filter(licence::license_key.eq(key)),
    };
    let row: Option<(LicenceRow, Option<ActivationRow>, i64)> = query.first(conn).optional()?;
    Ok(row.map(|(licence, activation, n)| {
        (licence, activation, u32::try_from(n).unwrap_or(u32::MAX))
    }))
}

/// Records a successful validation.
pub fn touch(conn: &mut MysqlConnection, id: &str, at: NaiveDateTime) -> QueryResult<()> {
    diesel::update(activation::table.find(id))
        .set(activation::last_validated_at.eq(at))
        .execute(conn)?;
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
