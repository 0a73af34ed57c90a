//! The `licence` table.

use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::mysql::MysqlConnection;
use diesel::prelude::*;
use domain::licensing::{self, AccessFacts, Plan, Status};

use crate::schema::licence;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = licence, check_for_backend(diesel::mysql::Mysql))]
pub struct LicenceRow {
    pub id: String,
    pub license_key: String,
    pub status: String,
    pub plan: String,
    pub customer_email: String,
    pub customer_name: Option<String>,
    pub order_id: Option<String>,
    pub subscription_id: Option<String>,
    pub variant_id: Option<String>,
    pub subscription_synced_at: Option<NaiveDateTime>,
    pub expires_at: Option<NaiveDateTime>,
    pub disabled_at: Option<NaiveDateTime>,
    pub created_at: NaiveDateTime,
    pub updated_at: NaiveDateTime,
}

impl LicenceRow {
    /// The plan. The table's CHECK constraint admits only known names; were it ever bypassed,
    /// the least generous plan is assumed.
    pub fn plan(&self) -> Plan {
        plan_named(&self.plan)
    }

    /// The status; an unknown value (impossible under the CHECK constraint) grants nothing.
    pub fn status(&self) -> Status {
        status_named(&self.status)
    }

    pub fn has_access(&self, now: DateTime<Utc>) -> bool {
        access_now(self.status(), self.expires_at, self.disabled_at, now)
    }

    /// The columns an installation's requests read.
    pub fn access(&self) -> LicenceAccess {
        LicenceAccess {
            id: self.id.clone(),
            license_key: self.license_key.clone(),
            status: self.status.clone(),
            plan: self.plan.clone(),
            expires_at: self.expires_at,
            disabled_at: self.disabled_at,
        }
    }
}

/// What the requests of an installation (validate, consume, the seat list, the usage report,
/// the latest release) read of a licence: whether it grants access, and what their answers show.
/// The buyer's columns stay in the database: reading them cost validate's statement about a
/// tenth of MariaDB's time.
#[derive(Debug, Clone)]
pub struct LicenceAccess {
    pub id: String,
    pub license_key: String,
    pub status: String,
    pub plan: String,
    pub expires_at: Option<NaiveDateTime>,
    pub disabled_at: Option<NaiveDateTime>,
}

impl LicenceAccess {
    /// See [`LicenceRow::plan`].
    pub fn plan(&self) -> Plan {
        plan_named(&self.plan)
    }

    /// See [`LicenceRow::status`].
    pub fn status(&self) -> Status {
        status_named(&self.status)
    }

    pub fn has_access(&self, now: DateTime<Utc>) -> bool {
        access_now(self.status(), self.expires_at, self.disabled_at, now)
    }
}

fn plan_named(name: &str) -> Plan {
    name.parse().unwrap_or(Plan::Basic)
}

fn status_named(name: &str) -> Status {
    name.parse().unwrap_or(Status::Expired)
}

fn access_now(
    status: Status,
    expires_at: Option<NaiveDateTime>,
    disabled_at: Option<NaiveDateTime>,
    now: DateTime<Utc>,
) -> bool {
    licensing::has_access(
        AccessFacts {
            status,
            expires_at: expires_at.map(|t| t.and_utc()),
            disabled: disabled_at.is_some(),
        },
        now,
    )
}

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = licence)]
pub struct NewLicence {
    pub id: String,
    pub license_key: String,
    pub status: String,
    pub plan: String,
    pub customer_email: String,
    pub customer_name: Option<String>,
    pub order_id: Option<String>,
    pub subscription_id: Option<String>,
    pub variant_id: Option<String>,
    pub subscription_synced_at: Option<NaiveDateTime>,
    pub expires_at: Option<NaiveDateTime>,
}

pub fn insert(conn: &mut MysqlConnection, new: &NewLicence) -> QueryResult<LicenceRow> {
    diesel::insert_into(licence::table)
        .values(new)
        .execute(conn)?;
    by_id(conn, &new.id)
}

pub fn by_id(conn: &mut MysqlConnection, id: &str) -> QueryResult<LicenceRow> {
    licence::table
        .find(id)
        .select(LicenceRow::as_select())
        .first(conn)
}

pub fn find_by_id(conn: &mut MysqlConnection, id: &str) -> QueryResult<Option<LicenceRow>> {
    by_id(conn, id).optional()
}

pub fn find_by_key(conn: &mut MysqlConnection, key: &str) -> QueryResult<Option<LicenceRow>> {
    licence::table
        .filter(licence::license_key.eq(key))
        .select(LicenceRow::as_select())
        .first(conn)
        .optional()
}

/// The licence with `key`, its row locked until the transaction ends: activations of one
/// licence queue up here, which is what keeps the activation limit under concurrency.
pub fn find_by_key_for_update(
    conn: &mut MysqlConnection,
    key: &str,
) -> QueryResult<Option<LicenceRow>> {
    licence::table
        .filter(licence::license_key.eq(key))
        .select(LicenceRow::as_select())
        .for_update()
        .first(conn)
        .optional()
}

pub fn find_by_order_for_update(
    conn: &mut MysqlConnection,
    order_id: &str,
) -> QueryResult<Option<LicenceRow>> {
    licence::table
        .filter(licence::order_id.eq(order_id))
        .select(LicenceRow::as_select())
        .for_update()
        .first(conn)
        .optional()
}

pub fn find_by_subscription_for_update(
    conn: &mut MysqlConnection,
    subscription_id: &str,
) -> QueryResult<Option<LicenceRow>> {
    licence::table
        .filter(licence::subscription_id.eq(subscription_id))
        .order(licence::created_at.asc())
        .select(LicenceRow::as_select())
        .for_update()
        .first(conn)
        .optional()
}

/// What a subscription event sets on its licence.
#[derive(Debug, Clone, AsChangeset)]
#[diesel(table_name = licence, treat_none_as_null = true)]
pub struct SubscriptionChange {
    pub plan: String,
    pub status: String,
    pub subscription_id: Option<String>,
    pub variant_id: Option<String>,
    pub subscription_synced_at: Option<NaiveDateTime>,
    pub expires_at: Option<NaiveDateTime>,
    pub updated_at: NaiveDateTime,
}

pub fn apply_subscription(
    conn: &mut MysqlConnection,
    id: &str,
    change: &SubscriptionChange,
) -> QueryResult<()> {
    diesel::update(licence::table.find(id))
        .set(change)
        .execute(conn)?;
    Ok(())
}

/// Switches a licence off (`Some(at)`) or back on (`None`).
pub fn set_disabled(
    conn: &mut MysqlConnection,
    id: &str,
    disabled_at: Option<NaiveDateTime>,
    now: NaiveDateTime,
) -> QueryResult<usize> {
    diesel::update(licence::table.find(id))
        .set((
            licence::disabled_at.eq(disabled_at),
            licence::updated_at.eq(now),
        ))
        .execute(conn)
}

/// A refund: the licence is disabled and marked refunded.
pub fn refund(conn: &mut MysqlConnection, id: &str, now: NaiveDateTime) -> QueryResult<usize> {
    diesel::update(licence::table.find(id))
        .set((
            licence::status.eq(Status::Refunded.as_str()),
            licence::disabled_at.eq(now),
            licence::updated_at.eq(now),
        ))
        .execute(conn)
}

/// An operator re-enabling a refunded licence means it: it becomes active again.
pub fn reactivate_refunded(
    conn: &mut MysqlConnection,
    id: &str,
    now: NaiveDateTime,
) -> QueryResult<usize> {
    diesel::update(
        licence::table
            .find(id)
            .filter(licence::status.eq(Status::Refunded.as_str())),
    )
    .set((
        licence::status.eq(Status::Active.as_str()),
        licence::updated_at.eq(now),
    ))
    .execute(conn)
}
