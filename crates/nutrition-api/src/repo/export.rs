//! What `GET /me/export` reads: everything the service holds about one person, in one
//! read-only snapshot.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use pg_store::schema::auth::{account, activity, passkey, session as session_table, two_factor};
use pg_store::schema::nutrition::{device_token, fast_event, meal_plan, pause_period, water};
use serde::Serialize;
use service_kit::db::DbError;
use session::Session;
use session::UserId;

use crate::model::FastRow;
use crate::repo::water::Drink;
use crate::repo::{Conn, Repo, plans, profile};

/// An account link without its secrets (password hash, provider tokens).
#[derive(Serialize, Queryable)]
#[serde(rename_all = "camelCase")]
pub struct AccountView {
    pub id: String,
    pub provider_id: String,
    pub account_id: String,
    pub user_id: String,
    #[serde(skip)]
    pub scope: Option<String>,
    #[serde(serialize_with = "service_kit::time::serialize")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "service_kit::time::serialize")]
    pub updated_at: DateTime<Utc>,
}

/// A push device without its keys and token, which only a push service needs.
#[derive(Serialize, Queryable)]
#[serde(rename_all = "camelCase")]
pub struct DeviceView {
    pub id: String,
    pub platform: String,
    pub endpoint: String,
    pub user_agent: Option<String>,
    #[serde(serialize_with = "service_kit::time::serialize")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "service_kit::time::serialize")]
    pub last_seen_at: DateTime<Utc>,
}

#[derive(Serialize, Queryable)]
#[serde(rename_all = "camelCase")]
pub struct PauseView {
    #[serde(serialize_with = "service_kit::time::serialize")]
    pub starts_at: DateTime<Utc>,
    #[serde(serialize_with = "service_kit::time::serialize")]
    pub ends_at: DateTime<Utc>,
}

/// Two-factor sign-in as set up, without its secret and codes, which only auth may read.
#[derive(Serialize, Queryable)]
#[serde(rename_all = "camelCase")]
pub struct TwoFactorView {
    pub verified: bool,
    #[serde(serialize_with = "service_kit::time::serialize")]
    pub created_at: DateTime<Utc>,
}

/// A passkey as its owner knows it: the name and kind, without the key, which only auth reads.
#[derive(Serialize, Queryable)]
#[serde(rename_all = "camelCase")]
pub struct PasskeyView {
    pub id: String,
    pub name: Option<String>,
    pub device_type: String,
    pub backed_up: bool,
    pub transports: Option<String>,
    #[serde(serialize_with = "service_kit::time::serialize")]
    pub created_at: DateTime<Utc>,
}

pub struct Gathered {
    pub sessions: Vec<Session>,
    pub accounts: Vec<AccountView>,
    pub profile: profile::Profile,
    pub pauses: Vec<PauseView>,
    pub fasts: Vec<FastRow>,
    pub plans: Vec<plans::Plan>,
    pub devices: Vec<DeviceView>,
    pub activity: Vec<session::activity::Listed>,
    pub two_factor: Option<TwoFactorView>,
    pub passkeys: Vec<PasskeyView>,
    pub locale: domain::locale::Locale,
    pub weights: Vec<crate::repo::weights::WeightRow>,
    pub water: Vec<Drink>,
}

/// Reads everything in one read-only snapshot, so that the document is consistent even while
/// another device of the same person writes.
pub async fn gather(repo: &Repo, user_id: &UserId) -> Result<Gathered, DbError> {
    repo.with(async |conn| gather_in(conn, user_id).await).await
}

async fn gather_in(conn: &mut Conn, user_id: &UserId) -> QueryResult<Gathered> {
    conn.build_transaction()
        .read_only()
        .repeatable_read()
        .run(async |conn| {
            let sessions = session_table::table
                .filter(session_table::user_id.eq(user_id))
                .filter(session_table::expires_at.gt(Utc::now()))
                .order(session_table::created_at.desc())
                .select(Session::as_select())
                .load(conn)
                .await?;
            let accounts = account::table
                .filter(account::user_id.eq(user_id))
                .order(account::created_at.asc())
                .select((
                    account::id,
                    account::provider_id,
                    account::account_id,
                    account::user_id,
                    account::scope,
                    account::created_at,
                    account::updated_at,
                ))
                .load(conn)
                .await?;
            let pauses = pause_period::table
                .filter(pause_period::user_id.eq(user_id))
                .order(pause_period::starts_at.asc())
                .select((pause_period::starts_at, pause_period::ends_at))
                .load(conn)
                .await?;
            let fasts = fast_event::table
                .filter(fast_event::user_id.eq(user_id))
                .order((fast_event::started_at.asc(), fast_event::id.asc()))
                .select(FastRow::as_select())
                .load(conn)
                .await?;
            let plan_ids: Vec<String> = meal_plan::table
                .filter(meal_plan::user_id.eq(user_id))
                .order((meal_plan::created_at.asc(), meal_plan::id.asc()))
                .select(meal_plan::id)
                .load(conn)
                .await?;
            let mut all_plans = Vec::with_capacity(plan_ids.len());
            for id in plan_ids {
                all_plans.extend(plans::get_in(conn, user_id, &id).await?);
            }
            let devices = device_token::table
                .filter(device_token::user_id.eq(user_id))
                .order(device_token::created_at.asc())
                .select((
                    device_token::id,
                    device_token::platform,
                    device_token::endpoint,
                    device_token::user_agent,
                    device_token::created_at,
                    device_token::last_seen_at,
                ))
                .load(conn)
                .await?;
            let events = session::activity::listing(user_id, Utc::now())
                .load(conn)
                .await?;
            let two_factor = two_factor::table
                .filter(two_factor::user_id.eq(user_id))
                .select((two_factor::verified, two_factor::created_at))
                .first(conn)
                .await
                .optional()?;
            let passkeys = passkey::table
                .filter(passkey::user_id.eq(user_id))
                .order((passkey::created_at.asc(), passkey::id.asc()))
                .select((
                    passkey::id,
                    passkey::name,
                    passkey::device_type,
                    passkey::backed_up,
                    passkey::transports,
                    passkey::created_at,
                ))
                .load(conn)
                .await?;
            let weights =
                crate::repo::weights::list_in(conn, user_id, None, None, i64::MAX).await?;
            let water = water::table
                .filter(water::user_id.eq(user_id))
                .order((water::at.asc(), water::id.asc()))
                .select(Drink::as_select())
                .load(conn)
                .await?;
            Ok(Gathered {
                locale: profile::locale_in(conn, user_id).await?,
                weights,
                water,
                activity: events,
                passkeys,
                two_factor,
                sessions,
                accounts,
                profile: profile::get_in(conn, user_id).await?,
                pauses,
                fasts,
                plans: all_plans,
                devices,
            })
        })
        .await
}

/// Records an export in the account's activity, from the session that asked for it (its
/// address as of its sign-in: nutrition-api does not read client addresses itself).
pub async fn record(
    repo: &Repo,
    current: &Session,
    user_agent: Option<&str>,
) -> Result<(), DbError> {
    let address = current.ip_address.as_deref().and_then(|ip| ip.parse().ok());
    let client = session::activity::Client::new(address, user_agent);
    let user_id = current.user_id.clone();
    repo.with(async |conn| {
        diesel::insert_into(activity::table)
            .values(session::activity::Event::new(
                &user_id,
                session::activity::Kind::Export,
                &client,
                Utc::now(),
            ))
            .execute(conn)
            .await
            .map(drop)
    })
    .await
}
