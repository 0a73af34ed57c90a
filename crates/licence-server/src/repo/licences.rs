//! The `licence` table.

use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use domain::licensing::{self, AccessFacts, Plan, Status};

use super::{Conn, Db, DbError, LicenceId};
use crate::schema::licence;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = licence, check_for_backend(diesel::mysql::Mysql))]
pub struct LicenceRow {
    pub id: LicenceId,
    pub license_key: String,
    #[diesel(deserialize_as = super::Known<Status>)]
    pub status: Status,
    #[diesel(deserialize_as = super::Known<Plan>)]
    pub plan: Plan,
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
    /// The plan (a name the code does not know fails the row's decoding: [`super::Known`]).
    pub fn plan(&self) -> Plan {
        self.plan
    }

    /// The status, checked as the plan is.
    pub fn status(&self) -> Status {
        self.status
    }

    pub fn has_access(&self, now: DateTime<Utc>) -> bool {
        access_now(self.status(), self.expires_at, self.disabled_at, now)
    }

    /// The columns an installation's requests read.
    pub fn access(&self) -> LicenceAccess {
        LicenceAccess {
            id: self.id.clone(),
            license_key: self.license_key.clone(),
            status: self.status,
            plan: self.plan,
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
    pub id: LicenceId,
    pub license_key: String,
    pub status: Status,
    pub plan: Plan,
    pub expires_at: Option<NaiveDateTime>,
    pub disabled_at: Option<NaiveDateTime>,
}

impl LicenceAccess {
    /// See [`LicenceRow::plan`].
    pub fn plan(&self) -> Plan {
        self.plan
    }

    /// See [`LicenceRow::status`].
    pub fn status(&self) -> Status {
        self.status
    }

    pub fn has_access(&self, now: DateTime<Utc>) -> bool {
        access_now(self.status(), self.expires_at, self.disabled_at, now)
    }
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
    pub id: LicenceId,
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

pub async fn insert(conn: &mut Conn, new: &NewLicence) -> QueryResult<LicenceRow> {
    diesel::insert_into(licence::table)
        .values(new)
        .execute(conn)
        .await?;
    by_id(conn, &new.id).await
}

pub async fn by_id(conn: &mut Conn, id: &LicenceId) -> QueryResult<LicenceRow> {
    licence::table
        .find(id)
        .select(LicenceRow::as_select())
        .first(conn)
        .await
}

pub async fn find_by_id(conn: &mut Conn, id: &LicenceId) -> QueryResult<Option<LicenceRow>> {
    by_id(conn, id).await.optional()
}

pub async fn find_by_key(conn: &mut Conn, key: &str) -> QueryResult<Option<LicenceRow>> {
    licence::table
        .filter(licence::license_key.eq(key))
        .select(LicenceRow::as_select())
        .first(conn)
        .await
        .optional()
}

/// A new licence, with its e-mail queued in the same transaction when `email`; the e-mail
/// carries the seat page's address when `links` can sign it.
pub async fn create(
    db: &Db,
    new: &NewLicence,
    email: bool,
    links: Option<crate::seat_links::Links<'_>>,
    now: DateTime<Utc>,
) -> Result<LicenceRow, DbError> {
    db.transaction(async |conn| {
        let licence = insert(conn, new).await?;
        if email {
            let mail = crate::mail::licence_email(&licence, links, now);
            super::outbox::enqueue_on(conn, &mail).await?;
            if let Some(links) = links {
                super::updates::remember_mailed_feed(conn, &licence.id, links.secret).await?;
            }
        }
        Ok(licence)
    })
    .await
}

/// The licence with `id`, if there is one.
pub async fn find(db: &Db, id: &LicenceId) -> Result<Option<LicenceRow>, DbError> {
    db.run(async |conn| find_by_id(conn, id).await).await
}

/// The licence with `id`.
pub async fn get(db: &Db, id: &LicenceId) -> Result<LicenceRow, DbError> {
    db.run(async |conn| by_id(conn, id).await).await
}

/// Switches a licence back on; a refunded one becomes active again, as an operator re-enabling
/// it means.
pub async fn enable(db: &Db, id: &LicenceId, now: NaiveDateTime) -> Result<(), DbError> {
    db.transaction(async |conn| {
        set_disabled_on(conn, id, None, now).await?;
        reactivate_refunded(conn, id, now).await?;
        Ok(())
    })
    .await
}

/// The licence with `key`.
pub async fn by_key(db: &Db, key: &str) -> Result<Option<LicenceRow>, DbError> {
    db.run(async |conn| find_by_key(conn, key).await).await
}

/// The licence with `key`, its row locked until the transaction ends: activations of one
/// licence queue up here, which is what keeps the activation limit under concurrency.
pub async fn find_by_key_for_update(conn: &mut Conn, key: &str) -> QueryResult<Option<LicenceRow>> {
    licence::table
        .filter(licence::license_key.eq(key))
        .select(LicenceRow::as_select())
        .for_update()
        .first(conn)
        .await
        .optional()
}

pub async fn find_by_order_for_update(
    conn: &mut Conn,
    order_id: &str,
) -> QueryResult<Option<LicenceRow>> {
    licence::table
        .filter(licence::order_id.eq(order_id))
        .select(LicenceRow::as_select())
        .for_update()
        .first(conn)
        .await
        .optional()
}

pub async fn find_by_subscription_for_update(
    conn: &mut Conn,
    subscription_id: &str,
) -> QueryResult<Option<LicenceRow>> {
    licence::table
        .filter(licence::subscription_id.eq(subscription_id))
        .order(licence::created_at.asc())
        .select(LicenceRow::as_select())
        .for_update()
        .first(conn)
        .await
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

pub async fn apply_subscription(
    conn: &mut Conn,
    id: &LicenceId,
    change: &SubscriptionChange,
) -> QueryResult<()> {
    diesel::update(licence::table.find(id))
        .set(change)
        .execute(conn)
        .await?;
    Ok(())
}

/// Switches a licence off (`Some(at)`) or back on (`None`).
pub async fn set_disabled(
    db: &Db,
    id: &LicenceId,
    disabled_at: Option<NaiveDateTime>,
    now: NaiveDateTime,
) -> Result<usize, DbError> {
    db.run(async |conn| set_disabled_on(conn, id, disabled_at, now).await)
        .await
}

async fn set_disabled_on(
    conn: &mut Conn,
    id: &LicenceId,
    disabled_at: Option<NaiveDateTime>,
    now: NaiveDateTime,
) -> QueryResult<usize> {
    diesel::update(licence::table.find(id))
        .set((
            licence::disabled_at.eq(disabled_at),
            licence::updated_at.eq(now),
        ))
        .execute(conn)
        .await
}

/// A refund: the licence is disabled and marked refunded.
pub async fn refund(conn: &mut Conn, id: &LicenceId, now: NaiveDateTime) -> QueryResult<usize> {
    diesel::update(licence::table.find(id))
        .set((
            licence::status.eq(Status::Refunded.as_str()),
            licence::disabled_at.eq(now),
            licence::updated_at.eq(now),
        ))
        .execute(conn)
        .await
}

/// An operator re-enabling a refunded licence means it: it becomes active again.
pub async fn reactivate_refunded(
    conn: &mut Conn,
    id: &LicenceId,
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
    .await
}

/// Remembers a refund whose order was not seen yet, so that the order makes no licence.
pub async fn remember_refund(
    conn: &mut Conn,
    order_id: &str,
    at: NaiveDateTime,
) -> QueryResult<()> {
    use crate::schema::refunded_order;
    diesel::insert_into(refunded_order::table)
        .values((
            refunded_order::order_id.eq(order_id),
            refunded_order::refunded_at.eq(at),
        ))
        .on_conflict_do_nothing()
        .execute(conn)
        .await?;
    Ok(())
}

/// Whether a refund of `order_id` came before its order (its row locked until the transaction
/// ends).
pub async fn refunded_before(conn: &mut Conn, order_id: &str) -> QueryResult<bool> {
    use crate::schema::refunded_order;
    let refunded: Option<String> = refunded_order::table
        .find(order_id)
        .select(refunded_order::order_id)
        .for_update()
        .first(conn)
        .await
        .optional()?;
    Ok(refunded.is_some())
}
