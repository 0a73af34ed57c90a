//! Deactivation with its limit: at most `max` per licence in any 30 days, counted in
//! `licence_deactivation` under the licence's row lock, so that parallel requests on any number
//! of replicas cannot pass the limit together.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;

use super::activations;
use super::licences::LicenceRow;
use super::{Db, DbError};
use crate::repo::LicenceId;
use crate::schema::{licence, licence_deactivation};

/// The window the limit counts over.
pub const WINDOW: chrono::Duration = chrono::Duration::days(30);

pub enum Deactivated {
    Done(Box<LicenceRow>),
    /// No such installation on the licence.
    NotFound,
    /// The caller's own installation no longer holds a seat, so it may not free another.
    CallerNotActive,
    /// The limit is reached; seconds until the oldest deactivation in the window leaves it.
    Limited {
        retry_after_secs: u64,
    },
}

/// Frees the seat of `instance_id` on `licence_id`. `caller` is the installation whose token
/// asks, when it is another one of the same licence.
pub async fn deactivate(
    db: &Db,
    licence_id: &LicenceId,
    instance_id: &str,
    caller: Option<&str>,
    max: u32,
    now: DateTime<Utc>,
) -> Result<Deactivated, DbError> {
    db.transaction(async |conn| {
        let Some(row) = licence::table
            .find(licence_id)
            .select(LicenceRow::as_select())
            .for_update()
            .first::<LicenceRow>(conn)
            .await
            .optional()?
        else {
            return Ok(Deactivated::NotFound);
        };
        if let Some(caller) = caller
            && caller != instance_id
            && activations::find(conn, licence_id, caller).await?.is_none()
        {
            return Ok(Deactivated::CallerNotActive);
        }
        if activations::find(conn, licence_id, instance_id)
            .await?
            .is_none()
        {
            return Ok(Deactivated::NotFound);
        }
        let since = (now - WINDOW).naive_utc();
        let recent: Vec<chrono::NaiveDateTime> = licence_deactivation::table
            .filter(licence_deactivation::licence_id.eq(licence_id))
            .filter(licence_deactivation::deactivated_at.gt(since))
            .order(licence_deactivation::deactivated_at.asc())
            .select(licence_deactivation::deactivated_at)
            .load(conn)
            .await?;
        if u32::try_from(recent.len()).unwrap_or(u32::MAX) >= max {
            // The oldest that must leave the window before one more fits.
            let idx = recent.len() - usize::try_from(max).unwrap_or(0).min(recent.len());
            let frees_at = recent[idx].and_utc() + WINDOW;
            // Rounded up: a client waiting the advertised time finds room.
            let secs = ((frees_at - now).num_milliseconds() + 999)
                .div_euclid(1000)
                .max(1);
            return Ok(Deactivated::Limited {
                retry_after_secs: u64::try_from(secs).unwrap_or(1),
            });
        }
        activations::delete(conn, licence_id, instance_id).await?;
        diesel::insert_into(licence_deactivation::table)
            .values((
                licence_deactivation::licence_id.eq(licence_id),
                licence_deactivation::instance_id.eq(instance_id),
                licence_deactivation::deactivated_at.eq(now.naive_utc()),
            ))
            .execute(conn)
            .await?;
        Ok(Deactivated::Done(Box::new(row)))
    })
    .await
}
