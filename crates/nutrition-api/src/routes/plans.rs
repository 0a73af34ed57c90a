use std::collections::BTreeSet;

use actix_web::{HttpResponse, web};
use chrono::{DateTime, NaiveDate, Utc};
use domain::meals::MealCategory;
use serde::{Deserialize, Serialize};
use service_kit::http::Json;
use session::CurrentUser;

use crate::error::{ApiError, invalid};
use crate::input::Day;
use crate::model::SlotRow;
use crate::repo::Repo;
use crate::repo::plans::{self, ConsumeOutcome, NewDay, NewSlot, Plan};
use crate::state::AppState;

/// Limits that keep one plan a plan, not a bulk import.
const MAX_DAYS: usize = 62;
const MAX_SLOTS_PER_DAY: usize = 8;
const MAX_TITLE: usize = 200;

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreatePlan {
    #[serde(default)]
    intermittent_fasting: bool,
    /// 1 to 62 days, each date once.
    days: Vec<DayIn>,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DayIn {
    #[schema(value_type = chrono::NaiveDate)]
    date: Day,
    /// At most 8 slots.
    slots: Vec<SlotIn>,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct SlotIn {
    category: MealCategory,
    /// A recipe id of `GET /me/recipes`.
    recipe_id: Option<String>,
    /// At most 200 printable characters.
    #[schema(max_length = 200)]
    title: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Slot)]
pub(crate) struct SlotView<'a> {
    id: String,
    date: NaiveDate,
    #[schema(value_type = MealCategory)]
    category: String,
    #[schema(required = true)]
    recipe: Option<&'a domain::recipes::Recipe>,
    #[schema(required = true)]
    title: Option<String>,
    consumed: bool,
    #[serde(serialize_with = "service_kit::time::serialize_opt")]
    #[schema(required = true)]
    consumed_at: Option<DateTime<Utc>>,
}

fn slot_view(state: &AppState, s: SlotRow) -> SlotView<'_> {
    SlotView {
        recipe: s
            .recipe_id
            .as_deref()
            .and_then(|id| state.catalogue.get(id)),
        id: s.id,
        date: s.date,
        category: s.category,
        title: s.title,
        consumed: s.consumed_at.is_some(),
        consumed_at: s.consumed_at,
    }
}

pub(super) fn plan_view(state: &AppState, plan: Plan) -> serde_json::Value {
    let mut days: Vec<(NaiveDate, Vec<SlotView<'_>>)> = Vec::new();
    for slot in plan.slots {
        let view = slot_view(state, slot);
        match days.last_mut() {
            Some((date, slots)) if *date == view.date => slots.push(view),
            _ => days.push((view.date, vec![view])),
        }
    }
    let days: Vec<serde_json::Value> = days
        .into_iter()
        .map(|(date, slots)| serde_json::json!({ "date": date, "slots": slots }))
        .collect();
    serde_json::json!({
        "id": plan.plan.id,
        "intermittentFasting": plan.plan.intermittent_fasting,
        "createdAt": service_kit::time::format(&plan.plan.created_at),
        "days": days,
    })
}

/// `POST /me/meal-plans`.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn create(
    me: CurrentUser,
    repo: web::Data<Repo>,
    state: web::Data<AppState>,
    body: Json<CreatePlan>,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    if body.days.is_empty() || body.days.len() > MAX_DAYS {
        return Err(invalid("days", format!("must hold 1 to {MAX_DAYS} days")));
    }
    let mut seen = BTreeSet::new();
    let mut days = Vec::with_capacity(body.days.len());
    for (i, day) in body.days.into_iter().enumerate() {
        let date = day.date.0;
        if !seen.insert(date) {
            return Err(invalid(&format!("days[{i}].date"), "appears twice"));
        }
        if day.slots.len() > MAX_SLOTS_PER_DAY {
            return Err(invalid(
                &format!("days[{i}].slots"),
                format!("at most {MAX_SLOTS_PER_DAY} slots a day"),
            ));
        }
        let mut slots = Vec::with_capacity(day.slots.len());
        for (j, slot) in day.slots.into_iter().enumerate() {
            if let Some(id) = &slot.recipe_id
                && state.catalogue.get(id).is_none()
            {
                return Err(invalid(
                    &format!("days[{i}].slots[{j}].recipeId"),
                    "no such recipe",
                ));
            }
            let title = slot
                .title
                .map(|t| t.trim().to_owned())
                .filter(|t| !t.is_empty());
            if title
                .as_ref()
                .is_some_and(|t| t.chars().count() > MAX_TITLE || t.chars().any(char::is_control))
            {
                return Err(invalid(
                    &format!("days[{i}].slots[{j}].title"),
                    "at most 200 printable characters",
                ));
            }
            slots.push(NewSlot {
                category: slot.category,
                recipe_id: slot.recipe_id,
                title,
            });
        }
        days.push(NewDay { date, slots });
    }
    days.sort_by_key(|d| d.date);
    let user_id = me.id();
    let intermittent = body.intermittent_fasting;
    let today = domain::rome::local_date(Utc::now());
    let plan = plans::create(&repo, user_id, intermittent, &days, today)
        .await?
        .ok_or(ApiError::Conflict {
            code: "MEAL_PLAN_LIMIT_REACHED",
            message: "at most 50 meal plans per person, and all 50 still have days today or later",
        })?;
    Ok(HttpResponse::Created().json(plan_view(&state, plan)))
}

/// `GET /me/meal-plans/<id>`.
pub async fn one(
    me: CurrentUser,
    repo: web::Data<Repo>,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let user_id = me.id();
    let id = path.into_inner();
    let plan = plans::get(&repo, user_id, &id)
        .await?
        .ok_or(ApiError::NotFound)?;
    Ok(HttpResponse::Ok().json(plan_view(&state, plan)))
}

/// `GET /me/meal-plans/today`: today's slots (Rome calendar) of the newest plan that has any.
pub async fn today(
    me: CurrentUser,
    repo: web::Data<Repo>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let date = domain::rome::local_date(Utc::now());
    let user_id = me.id();
    let plan = plans::for_day(&repo, user_id, date).await?;
    let body = match plan {
        Some(plan) => {
            let slots: Vec<SlotView<'_>> = plan
                .slots
                .into_iter()
                .map(|s| slot_view(&state, s))
                .collect();
            serde_json::json!({
                "date": date,
                "planId": plan.plan.id,
                "intermittentFasting": plan.plan.intermittent_fasting,
                "slots": slots,
            })
        }
        None => {
            serde_json::json!({ "date": date, "planId": null, "intermittentFasting": false, "slots": [] })
        }
    };
    Ok(HttpResponse::Ok().json(body))
}

/// `POST /me/meal-plans/slots/<slot_id>/consumed`: the final meal of a day can start a fast.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn consume(
    me: CurrentUser,
    repo: web::Data<Repo>,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let user_id = me.id();
    let id = path.into_inner();
    let outcome = plans::consume(&repo, user_id, &id, Utc::now()).await?;
    match outcome {
        ConsumeOutcome::NotFound => Err(ApiError::NotFound),
        ConsumeOutcome::Consumed { slot, auto_started } => {
            if let Some(f) = &auto_started {
                tracing::info!(fast_id = %f.id, "final meal consumed; fast started");
            }
            Ok(HttpResponse::Ok().json(serde_json::json!({
                "slot": slot_view(&state, *slot),
                "autoStartedFast": auto_started.map(|f| serde_json::json!({ "id": f.id })),
            })))
        }
    }
}

/// `DELETE /me/meal-plans/slots/<slot_id>/consumed`: within ten minutes of the consumption also
/// removes the fast it started, while that fast runs.
pub async fn unconsume(
    me: CurrentUser,
    repo: web::Data<Repo>,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let user_id = me.id();
    let id = path.into_inner();
    let out = plans::unconsume(&repo, user_id, &id, Utc::now())
        .await?
        .ok_or(ApiError::NotFound)?;
    if let Some(fast_id) = &out.removed_fast {
        tracing::info!(fast_id = %fast_id, "final meal taken back; the fast it started removed");
    }
    Ok(HttpResponse::Ok().json(serde_json::json!({
        "slot": slot_view(&state, out.slot),
        "removedFast": out.removed_fast.map(|id| serde_json::json!({ "id": id })),
    })))
}
