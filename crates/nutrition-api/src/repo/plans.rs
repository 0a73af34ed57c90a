//! Meal plans and their slots, and the final-meal rule that auto-starts a fast.

use chrono::{DateTime, NaiveDate, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use session::UserId;

use crate::repo::Conn;
use service_kit::db::DbError;

use crate::repo::Repo;

use domain::fasting::UNDO_WINDOW;
use domain::meals::{MealCategory, is_final_meal};
use domain::protocol::Protocol;
use pg_store::schema::nutrition::{meal_plan, meal_slot};

use crate::model::{FastRow, SlotRow};
use crate::repo::{fasts, profile};

pub struct NewSlot {
    pub category: MealCategory,
    pub recipe_id: Option<String>,
    pub title: Option<String>,
}

pub struct NewDay {
    pub date: NaiveDate,
    pub slots: Vec<NewSlot>,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = meal_plan, check_for_backend(diesel::pg::Pg))]
pub struct PlanRow {
    pub id: String,
    pub user_id: String,
    pub intermittent_fasting: bool,
    pub created_at: DateTime<Utc>,
}

/// A plan with its slots, ordered by date and position.
pub struct Plan {
    pub plan: PlanRow,
    pub slots: Vec<SlotRow>,
}

/// Most meal plans one person keeps (each at most 62 days of 8 slots).
pub const MAX_PLANS: i64 = 50;

/// Creates a plan; `Ok(None)` when the person already has [`MAX_PLANS`] plans and none has ended
/// (every one has a day `today` or later). When at the limit, the plan whose last day is the
/// oldest among those that ended is deleted to make room. Under the user's lock, so that parallel
/// creations count right.
pub(crate) async fn create_in(
    conn: &mut Conn,
    user_id: &UserId,
    intermittent_fasting: bool,
    days: &[NewDay],
    today: NaiveDate,
) -> QueryResult<Option<Plan>> {
    let made = conn
        .transaction(async |conn| {
            crate::repo::lock_user(conn, user_id).await?;
            let held: i64 = meal_plan::table
                .filter(meal_plan::user_id.eq(user_id))
                .count()
                .get_result(conn)
                .await?;
            if held >= MAX_PLANS {
                let made_room = diesel::sql_query(
                    "DELETE FROM nutrition.meal_plan WHERE id IN (
                    SELECT p.id FROM nutrition.meal_plan p
                      LEFT JOIN nutrition.meal_slot s ON s.plan_id = p.id
                     WHERE p.user_id = $1
                     GROUP BY p.id
                    HAVING max(s.date) IS NULL OR max(s.date) < $2
                     ORDER BY max(s.date) NULLS FIRST, min(p.created_at), p.id
                     LIMIT $3)",
                )
                .bind::<diesel::sql_types::Text, _>(user_id)
                .bind::<diesel::sql_types::Date, _>(today)
                .bind::<diesel::sql_types::BigInt, _>(held - MAX_PLANS + 1)
                .execute(conn)
                .await?;
                if i64::try_from(made_room).unwrap_or(0) < held - MAX_PLANS + 1 {
                    // Not enough ended plans: undo what was deleted, create nothing.
                    return Err(diesel::result::Error::RollbackTransaction);
                }
            }
            let plan: PlanRow = diesel::insert_into(meal_plan::table)
                .values((
                    meal_plan::id.eq(session::ids::id()),
                    meal_plan::user_id.eq(user_id),
                    meal_plan::intermittent_fasting.eq(intermittent_fasting),
                    meal_plan::created_at.eq(Utc::now()),
                ))
                .returning(PlanRow::as_returning())
                .get_result(conn)
                .await?;
            for day in days {
                for (position, slot) in day.slots.iter().enumerate() {
                    diesel::insert_into(meal_slot::table)
                        .values((
                            meal_slot::id.eq(session::ids::id()),
                            meal_slot::plan_id.eq(&plan.id),
                            meal_slot::user_id.eq(user_id),
                            meal_slot::date.eq(day.date),
                            meal_slot::category.eq(slot.category.as_str()),
                            meal_slot::position.eq(i16::try_from(position).unwrap_or(i16::MAX)),
                            meal_slot::recipe_id.eq(slot.recipe_id.as_deref()),
                            meal_slot::title.eq(slot.title.as_deref()),
                        ))
                        .execute(conn)
                        .await?;
                }
            }
            let slots = slots_of(conn, &plan.id).await?;
            Ok(Plan { plan, slots })
        })
        .await;
    match made {
        Ok(plan) => Ok(Some(plan)),
        Err(diesel::result::Error::RollbackTransaction) => Ok(None),
        Err(e) => Err(e),
    }
}

async fn slots_of(conn: &mut Conn, plan_id: &str) -> QueryResult<Vec<SlotRow>> {
    meal_slot::table
        .filter(meal_slot::plan_id.eq(plan_id))
        .select(SlotRow::as_select())
        .order((meal_slot::date.asc(), meal_slot::position.asc()))
        .load(conn)
        .await
}

pub(crate) async fn get_in(
    conn: &mut Conn,
    user_id: &UserId,
    plan_id: &str,
) -> QueryResult<Option<Plan>> {
    let Some(plan) = meal_plan::table
        .filter(meal_plan::id.eq(plan_id))
        .filter(meal_plan::user_id.eq(user_id))
        .select(PlanRow::as_select())
        .first(conn)
        .await
        .optional()?
    else {
        return Ok(None);
    };
    let slots = slots_of(conn, &plan.id).await?;
    Ok(Some(Plan { plan, slots }))
}

/// The newest plan with slots on `date`, with only that day's slots.
pub(crate) async fn for_day_in(
    conn: &mut Conn,
    user_id: &UserId,
    date: NaiveDate,
) -> QueryResult<Option<Plan>> {
    let Some(plan) = meal_plan::table
        .inner_join(meal_slot::table)
        .filter(meal_plan::user_id.eq(user_id))
        .filter(meal_slot::date.eq(date))
        .select(PlanRow::as_select())
        .order((meal_plan::created_at.desc(), meal_plan::id.desc()))
        .first(conn)
        .await
        .optional()?
    else {
        return Ok(None);
    };
    let slots = meal_slot::table
        .filter(meal_slot::plan_id.eq(&plan.id))
        .filter(meal_slot::date.eq(date))
        .select(SlotRow::as_select())
        .order(meal_slot::position.asc())
        .load(conn)
        .await?;
    Ok(Some(Plan { plan, slots }))
}

pub enum ConsumeOutcome {
    NotFound,
    Consumed {
        slot: Box<SlotRow>,
        auto_started: Option<Box<FastRow>>,
    },
}

/// Marks a slot consumed. Only the first consumption counts: it may auto-start a fast when the
/// slot is the final meal of its day, the user has a preferred protocol and no fast runs.
pub(crate) async fn consume_in(
    conn: &mut Conn,
    user_id: &UserId,
    slot_id: &str,
    now: DateTime<Utc>,
) -> QueryResult<ConsumeOutcome> {
    conn.transaction(async |conn| {
        let Some(slot) = meal_slot::table
            .filter(meal_slot::id.eq(slot_id))
            .filter(meal_slot::user_id.eq(user_id))
            .select(SlotRow::as_select())
            .for_update()
            .first(conn)
            .await
            .optional()?
        else {
            return Ok(ConsumeOutcome::NotFound);
        };
        if slot.consumed_at.is_some() {
            return Ok(ConsumeOutcome::Consumed {
                slot: Box::new(slot),
                auto_started: None,
            });
        }
        let slot: SlotRow = diesel::update(meal_slot::table.find(&slot.id))
            .set(meal_slot::consumed_at.eq(now))
            .returning(SlotRow::as_returning())
            .get_result(conn)
            .await?;
        let intermittent: bool = meal_plan::table
            .find(&slot.plan_id)
            .select(meal_plan::intermittent_fasting)
            .first(conn)
            .await?;
        let day: Vec<String> = meal_slot::table
            .filter(meal_slot::plan_id.eq(&slot.plan_id))
            .filter(meal_slot::date.eq(slot.date))
            .select(meal_slot::category)
            .load(conn)
            .await?;
        let day: Vec<MealCategory> = day.iter().filter_map(|c| c.parse().ok()).collect();
        let Ok(category) = slot.category.parse::<MealCategory>() else {
            return Ok(ConsumeOutcome::Consumed {
                slot: Box::new(slot),
                auto_started: None,
            });
        };
        let mut auto_started = None;
        if is_final_meal(category, intermittent, &day) {
            let preferred = profile::get_in(conn, user_id)
                .await?
                .fasting_protocol
                .and_then(|p| p.parse::<Protocol>().ok());
            if let Some(protocol) = preferred {
                // A running fast (also one started a moment ago in parallel) wins: nothing starts.
                if let fasts::StartOutcome::Started(row) =
                    fasts::start_in(conn, user_id, protocol, now, true).await?
                {
                    auto_started = Some(row);
                }
            }
        }
        Ok(ConsumeOutcome::Consumed {
            slot: Box::new(slot),
            auto_started,
        })
    })
    .await
}

/// A slot marked not consumed, and the fast that consuming it had started, if that went too.
pub struct Unconsumed {
    pub slot: SlotRow,
    pub removed_fast: Option<String>,
}

/// Marks a slot not consumed. Within [`UNDO_WINDOW`] of the consumption, the fast it started
/// goes too while it still runs (the dinner was marked by mistake); later, or once ended, that
/// fast is the person's own history and stays.
pub(crate) async fn unconsume_in(
    conn: &mut Conn,
    user_id: &UserId,
    slot_id: &str,
    now: DateTime<Utc>,
) -> QueryResult<Option<Unconsumed>> {
    conn.transaction(async |conn| {
        // The slot's row first, then the user's lock: the order `consume` takes them in.
        let Some(consumed_at) = meal_slot::table
            .filter(meal_slot::id.eq(slot_id))
            .filter(meal_slot::user_id.eq(user_id))
            .select(meal_slot::consumed_at)
            .for_update()
            .first::<Option<DateTime<Utc>>>(conn)
            .await
            .optional()?
        else {
            return Ok(None);
        };
        crate::repo::lock_user(conn, user_id).await?;
        let slot = diesel::update(meal_slot::table.find(slot_id))
            .set(meal_slot::consumed_at.eq(None::<DateTime<Utc>>))
            .returning(SlotRow::as_returning())
            .get_result(conn)
            .await?;
        let removed_fast = match consumed_at {
            Some(at) if now - at <= UNDO_WINDOW => {
                fasts::remove_auto_started_in(conn, user_id, at).await?
            }
            _ => None,
        };
        Ok(Some(Unconsumed { slot, removed_fast }))
    })
    .await
}

pub async fn create(
    repo: &Repo,
    user_id: &UserId,
    intermittent_fasting: bool,
    days: &[NewDay],
    today: NaiveDate,
) -> Result<Option<Plan>, DbError> {
    repo.with(async |conn| create_in(conn, user_id, intermittent_fasting, days, today).await)
        .await
}

pub async fn get(repo: &Repo, user_id: &UserId, plan_id: &str) -> Result<Option<Plan>, DbError> {
    repo.with(async |conn| get_in(conn, user_id, plan_id).await)
        .await
}

pub async fn for_day(
    repo: &Repo,
    user_id: &UserId,
    date: NaiveDate,
) -> Result<Option<Plan>, DbError> {
    repo.with(async |conn| for_day_in(conn, user_id, date).await)
        .await
}

pub async fn consume(
    repo: &Repo,
    user_id: &UserId,
    slot_id: &str,
    now: DateTime<Utc>,
) -> Result<ConsumeOutcome, DbError> {
    repo.with(async |conn| consume_in(conn, user_id, slot_id, now).await)
        .await
}

pub async fn unconsume(
    repo: &Repo,
    user_id: &UserId,
    slot_id: &str,
    now: DateTime<Utc>,
) -> Result<Option<Unconsumed>, DbError> {
    repo.with(async |conn| unconsume_in(conn, user_id, slot_id, now).await)
        .await
}
