//! The OpenAPI 3.1 document of nutrition-api, served at `/openapi.json` and rendered at `/docs`.
//!
//! Request and response bodies come from the handlers' own types (`ToSchema` derives next to
//! them); the operations are declared here, one stub per route. The route-coverage test holds
//! this list and the mounted router to each other, and the test command replays the document
//! against a running service (schemathesis), so neither side can drift unnoticed.

// The operation functions and the response structs exist only to carry their declarations.
#![allow(dead_code)]

use serde_json::json;
use service_kit::http::ErrorBody;
use service_kit::openapi::{add_default_error, error_response, operations_mut};
use utoipa::openapi::HttpMethod;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityRequirement, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};

use crate::model::{Fast, Symptoms};
use crate::repo::water::Drink;
use crate::repo::weights::Weight;
use crate::routes::fasts::{Empty, EndFast, ImportReport, ListQuery, PatchFast, StartFast};
use crate::routes::notifications::{
    Device, Keys, PatchSettings, RegisterDevice, RemoveDevice, Settings as NotificationSettings,
};
use crate::routes::pause::PauseBody;
use crate::routes::plans::{CreatePlan, DayIn, SlotIn, SlotView};
use crate::routes::preferences::{PatchPreferences, Preferences};
use crate::routes::recipes::RecipeQuery;
use crate::routes::water::{AddWater, DayQuery, WaterDay};
use crate::routes::weights::{Range as WeightRange, RecordWeight, Weights};

/// `GET /me`'s user: auth's user plus the fasting pause and the preferences.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
struct MeUser {
    #[serde(flatten)]
    user: session::User,
    #[schema(required = true)]
    fasting_paused_until: Option<chrono::DateTime<chrono::Utc>>,
    preferences: Preferences,
}

#[derive(ToSchema)]
struct Me {
    user: MeUser,
    session: session::Session,
}

/// A page of fasts, newest first.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
struct FastPage {
    items: Vec<Fast>,
    /// Pass as `before` for the next page; null on the last one.
    #[schema(required = true)]
    next_before: Option<chrono::DateTime<chrono::Utc>>,
}

#[derive(ToSchema)]
struct RecipeList {
    recipes: Vec<domain::recipes::Recipe>,
}

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
struct Pause {
    #[schema(required = true)]
    fasting_paused_until: Option<chrono::DateTime<chrono::Utc>>,
    /// Whether the pause lasts beyond now.
    paused: bool,
}

#[derive(ToSchema)]
struct PlanDay {
    date: chrono::NaiveDate,
    slots: Vec<SlotView<'static>>,
}

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
struct MealPlan {
    id: String,
    intermittent_fasting: bool,
    created_at: chrono::DateTime<chrono::Utc>,
    days: Vec<PlanDay>,
}

/// Today's slots (Europe/Rome) of the plan that covers today; no plan: `planId` null, no slots.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
struct TodayPlan {
    date: chrono::NaiveDate,
    #[schema(required = true)]
    plan_id: Option<String>,
    intermittent_fasting: bool,
    slots: Vec<SlotView<'static>>,
}

#[derive(ToSchema)]
struct FastRef {
    id: String,
}

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
struct Consumed {
    slot: SlotView<'static>,
    /// The fast that consuming the day's final meal started, if it started one.
    #[schema(required = true)]
    auto_started_fast: Option<FastRef>,
}

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
struct Unconsumed {
    slot: SlotView<'static>,
    /// The running fast that consuming this slot started, removed with it (within ten minutes
    /// of the consumption only).
    #[schema(required = true)]
    removed_fast: Option<FastRef>,
}

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
struct PushConfig {
    push_enabled: bool,
    /// The VAPID public key for `PushManager.subscribe`; null when push is off.
    #[schema(required = true)]
    vapid_public_key: Option<String>,
}

#[derive(ToSchema)]
struct TestPushResult {
    sent: u32,
    /// Devices the push service declared gone (404/410), now deleted.
    removed: u32,
    failed: u32,
}

fn fast_example() -> serde_json::Value {
    json!({
        "id": "fst_9f2c1d7e4b",
        "status": "IN_PROGRESS",
        "protocol": "16:8",
        "startedAt": "2026-11-22T20:00:00Z",
        "plannedEndAt": "2026-11-23T12:00:00Z",
        "endedAt": null,
        "notifiedMilestones": ["hydration_2h"],
        "symptoms": null,
        "autoStarted": false
    })
}

fn slot_example() -> serde_json::Value {
    json!({
        "id": "slt_1a2b3c", "date": "2026-11-23", "category": "CENA", "recipe": null,
        "title": "Minestrone", "consumed": true, "consumedAt": "2026-11-23T19:30:00Z"
    })
}

/// `GET /me`.
#[utoipa::path(get, path = "/me", tag = "account",
    responses((status = 200, description = "The signed-in user and the session.", body = Me,
        example = json!({
            "user": {"id": "usr_1", "name": "Giulia", "email": "giulia@example.com",
                "emailVerified": false, "image": null, "createdAt": "2026-11-01T08:00:00Z",
                "updatedAt": "2026-11-01T08:00:00Z", "fastingPausedUntil": null,
                "preferences": {"fastingProtocol": "16:8", "fastingMilestones": true}},
            "session": {"id": "ses_1", "userId": "usr_1", "expiresAt": "2026-11-30T08:00:00Z",
                "createdAt": "2026-11-23T08:00:00Z", "updatedAt": "2026-11-23T08:00:00Z",
                "ipAddress": "127.0.0.1", "userAgent": "Mozilla/5.0"}
        }))))]
fn me() {}

/// `GET /me/preferences`.
#[utoipa::path(get, path = "/me/preferences", tag = "account",
    responses((status = 200, description = "The fasting preferences (defaults null, false).", body = Preferences,
        example = json!({"fastingProtocol": "16:8", "fastingMilestones": true}))))]
fn preferences_get() {}

/// `PATCH /me/preferences`: sets what is given.
#[utoipa::path(patch, path = "/me/preferences", tag = "account",
    request_body(content = PatchPreferences, example = json!({"fastingProtocol": "18:6", "fastingMilestones": true})),
    responses(
        (status = 200, description = "The preferences after the change.", body = Preferences,
            example = json!({"fastingProtocol": "18:6", "fastingMilestones": true})),
        (status = 400, description = "Unknown protocol or field.", body = ErrorBody,
            example = json!({"code": "VALIDATION_ERROR", "message": "fastingProtocol: unknown fasting protocol; expected one of 12:12, 13:11, 14:10, 16:8, 18:6, 20:4, 23:1, 24:0, 36:0, 48:0, 72:0"})),
    ))]
fn preferences_patch() {}

/// `GET /me/fast-events`: newest first.
#[utoipa::path(get, path = "/me/fast-events", tag = "fasting", params(ListQuery),
    responses(
        (status = 200, description = "A page of fasts.", body = FastPage,
            example = json!({"items": [fast_example()], "nextBefore": null})),
        (status = 400, description = "`limit` or `before` does not parse.", body = ErrorBody,
            example = json!({"code": "VALIDATION_ERROR", "message": "limit: must be a whole number from 1 to 100"})),
    ))]
fn fasts_list() {}

/// `POST /me/fast-events`: starts a fast, now or up to 7 days in the past; with `endedAt` too,
/// records a past fast (at most 365 days ago, overlapping no other).
#[utoipa::path(post, path = "/me/fast-events", tag = "fasting",
    params(("Idempotency-Key" = Option<String>, Header, description = "1 to 64 printable ASCII characters: a retry with the same key within 24 h answers the first success again and changes nothing more.")),
    request_body(content = Option<StartFast>, description = "May be empty: the preferred protocol, now.",
        example = json!({"protocol": "16:8", "startedAt": "2026-11-22T20:00:00Z"})),
    responses(
        (status = 200, description = "A retry under the same `Idempotency-Key`: the first answer.", body = Fast, example = json!(fast_example())),
        (status = 201, description = "The fast started (or was recorded).", body = Fast, example = json!(fast_example())),
        (status = 400, description = "No protocol at all, an unknown one, or a start in the future or more than 7 days ago.",
            body = ErrorBody, example = json!({"code": "VALIDATION_ERROR", "message": "protocol: is required when no preferred protocol is set"})),
        (status = 409, description = "A fast is already running (`FAST_ALREADY_RUNNING`), or the past fast overlaps another (`FAST_OVERLAP`).", body = ErrorBody,
            example = json!({"code": "FAST_ALREADY_RUNNING", "message": "a fast is already running"})),
        (status = 422, description = "A limit (`DAILY_LIMIT_REACHED`), or an `Idempotency-Key` first used for another request (`IDEMPOTENCY_KEY_REUSED`).", body = ErrorBody,
            example = json!({"code": "IDEMPOTENCY_KEY_REUSED", "message": "this Idempotency-Key was used for another request"})),
    ))]
fn fasts_start() {}

/// `GET /me/fast-events/current`.
#[utoipa::path(get, path = "/me/fast-events/current", tag = "fasting",
    responses(
        (status = 200, description = "The running fast.", body = Fast, example = json!(fast_example())),
        (status = 404, description = "No fast is running.", body = ErrorBody,
            example = json!({"code": "NOT_FOUND", "message": "no such resource"})),
    ))]
fn fasts_current() {}

/// `GET /me/fast-events/{id}`.
#[utoipa::path(get, path = "/me/fast-events/{id}", tag = "fasting",
    params(("id" = String, Path, description = "The fast's id")),
    responses(
        (status = 200, description = "The fast.", body = Fast, example = json!(fast_example())),
        (status = 404, description = "No such fast of this user.", body = ErrorBody,
            example = json!({"code": "NOT_FOUND", "message": "no such resource"})),
    ))]
fn fasts_one() {}

/// `PATCH /me/fast-events/{id}`: the symptom diary, and corrections of the start, the end (of an
/// ended fast) and the protocol; the status is computed again.
#[utoipa::path(patch, path = "/me/fast-events/{id}", tag = "fasting",
    params(("id" = String, Path, description = "The fast's id"), ("Idempotency-Key" = Option<String>, Header, description = "1 to 64 printable ASCII characters: a retry with the same key within 24 h answers the first success again and changes nothing more.")),
    request_body(content = PatchFast, example = json!({"startedAt": "2026-11-22T19:00:00Z", "symptoms": {"headache": false, "energy": 7, "hunger": 5, "clarity": 8, "note": "Bene"}})),
    responses(
        (status = 200, description = "The corrected fast.", body = Fast, example = json!(fast_example())),
        (status = 400, description = "A value out of range, times out of order, in the future or more than 365 days ago, or an end for a running fast.", body = ErrorBody,
            example = json!({"code": "VALIDATION_ERROR", "message": "symptoms.energy: must be from 1 to 10"})),
        (status = 404, description = "No such fast of this user.", body = ErrorBody,
            example = json!({"code": "NOT_FOUND", "message": "no such resource"})),
        (status = 409, description = "The corrected times overlap another fast.", body = ErrorBody,
            example = json!({"code": "FAST_OVERLAP", "message": "this fast would overlap another one"})),
        (status = 422, description = "A limit (`DAILY_LIMIT_REACHED`), or an `Idempotency-Key` first used for another request (`IDEMPOTENCY_KEY_REUSED`).", body = ErrorBody,
            example = json!({"code": "IDEMPOTENCY_KEY_REUSED", "message": "this Idempotency-Key was used for another request"})),
    ))]
fn fasts_patch() {}

/// `DELETE /me/fast-events/{id}`: the fast leaves history, statistics and streaks.
#[utoipa::path(delete, path = "/me/fast-events/{id}", tag = "fasting",
    params(("id" = String, Path, description = "The fast's id")),
    responses(
        (status = 204, description = "Deleted."),
        (status = 404, description = "No such fast of this user.", body = ErrorBody,
            example = json!({"code": "NOT_FOUND", "message": "no such resource"})),
    ))]
fn fasts_delete() {}

/// `POST /me/fast-events/import`: Zero's CSV export or this app's, at most 1 MiB and 5,000 rows.
#[utoipa::path(post, path = "/me/fast-events/import", tag = "fasting",
    request_body(content = String, content_type = "text/csv",
        example = json!("Date,Start,End,Hours,Night Eating\n1/17/21,19:15,12:00,16,1\n")),
    responses(
        (status = 200, description = "What was imported and which lines were skipped, with why.", body = ImportReport,
            example = json!({"imported": 1, "skipped": [{"line": 3, "reason": "overlaps another fast"}]})),
        (status = 400, description = "Neither format, or not UTF-8.", body = ErrorBody,
            example = json!({"code": "VALIDATION_ERROR", "message": "body: must be Zero's export (Date, Start, End) or this app's (protocol, startedAt, endedAt)"})),
        (status = 413, description = "More than 1 MiB or 5,000 rows.", body = ErrorBody,
            example = json!({"code": "PAYLOAD_TOO_LARGE", "message": "request body is larger than 1048576 bytes"})),
        (status = 415, description = "Not `text/csv`.", body = ErrorBody,
            example = json!({"code": "UNSUPPORTED_MEDIA_TYPE", "message": "request body must be text/csv"})),
    ))]
fn fasts_import() {}

/// `GET /me/weights`: the weights of a range, oldest first, with the 7-day trend, the goal and
/// the BMI of the latest weight.
#[utoipa::path(get, path = "/me/weights", tag = "body",
    params(WeightRange),
    responses(
        (status = 200, description = "The weights.", body = Weights,
            example = json!({"items": [{"id": "wgt_1", "kg": 72.4, "measuredOn": "2026-11-23", "note": null, "createdAt": "2026-11-23T07:10:00Z"}],
                "trend": [{"date": "2026-11-23", "kg": 72.4}], "goalKg": 70.0, "heightCm": 175, "bmi": 23.6})),
        (status = 400, description = "A date that does not parse, or `to` before `from`.", body = ErrorBody,
            example = json!({"code": "VALIDATION_ERROR", "message": "from: must be a date (YYYY-MM-DD)"})),
    ))]
fn weights_list() {}

/// `POST /me/weights`: one weight per day; a second one the same day replaces the first.
#[utoipa::path(post, path = "/me/weights", tag = "body",
    params(("Idempotency-Key" = Option<String>, Header, description = "1 to 64 printable ASCII characters: a retry with the same key within 24 h answers the first success again and changes nothing more.")),
    request_body(content = RecordWeight, example = json!({"kg": 72.4, "measuredOn": "2026-11-23", "note": "dopo la corsa"})),
    responses(
        (status = 200, description = "It replaced that day's weight (or a retry's first answer).", body = Weight),
        (status = 201, description = "Recorded.", body = Weight,
            example = json!({"id": "wgt_1", "kg": 72.4, "measuredOn": "2026-11-23", "note": "dopo la corsa", "createdAt": "2026-11-23T07:10:00Z"})),
        (status = 400, description = "`kg` outside 20.0–400.0 or with two decimals, a date in the future, a note over 500 characters.", body = ErrorBody,
            example = json!({"code": "VALIDATION_ERROR", "message": "kg: must be 20.0 to 400.0 with at most one decimal"})),
        (status = 422, description = "A limit (`DAILY_LIMIT_REACHED`), or an `Idempotency-Key` first used for another request (`IDEMPOTENCY_KEY_REUSED`).", body = ErrorBody,
            example = json!({"code": "IDEMPOTENCY_KEY_REUSED", "message": "this Idempotency-Key was used for another request"})),
    ))]
fn weights_record() {}

/// `DELETE /me/weights/{id}`.
#[utoipa::path(delete, path = "/me/weights/{id}", tag = "body",
    params(("id" = String, Path, description = "The weight's id")),
    responses(
        (status = 204, description = "Deleted."),
        (status = 404, description = "No such weight of this user.", body = ErrorBody,
            example = json!({"code": "NOT_FOUND", "message": "no such resource"})),
    ))]
fn weights_delete() {}

/// `GET /me/water`: the drinks of a Rome day (default today), their total and the goal.
#[utoipa::path(get, path = "/me/water", tag = "body",
    params(DayQuery),
    responses(
        (status = 200, description = "The day.", body = WaterDay,
            example = json!({"date": "2026-11-23", "totalMl": 750, "goalMl": 2000, "items": [{"id": "wtr_1", "ml": 250, "at": "2026-11-23T08:00:00Z"}]})),
        (status = 400, description = "A date that does not parse.", body = ErrorBody,
            example = json!({"code": "VALIDATION_ERROR", "message": "date: must be a date (YYYY-MM-DD)"})),
    ))]
fn water_day() {}

/// `POST /me/water`: a drink, now; at most 50 a day.
#[utoipa::path(post, path = "/me/water", tag = "body",
    params(("Idempotency-Key" = Option<String>, Header, description = "1 to 64 printable ASCII characters: a retry with the same key within 24 h answers the first success again and changes nothing more.")),
    request_body(content = AddWater, example = json!({"ml": 250})),
    responses(
        (status = 200, description = "A retry's first answer.", body = Drink),
        (status = 201, description = "Recorded.", body = Drink, example = json!({"id": "wtr_1", "ml": 250, "at": "2026-11-23T08:00:00Z"})),
        (status = 400, description = "`ml` outside 50–2000.", body = ErrorBody,
            example = json!({"code": "VALIDATION_ERROR", "message": "ml: must be a whole number from 50 to 2000"})),
        (status = 422, description = "A limit (`DAILY_LIMIT_REACHED`), or an `Idempotency-Key` first used for another request (`IDEMPOTENCY_KEY_REUSED`).", body = ErrorBody,
            example = json!({"code": "IDEMPOTENCY_KEY_REUSED", "message": "this Idempotency-Key was used for another request"})),
    ))]
fn water_add() {}

/// `DELETE /me/water/{id}`.
#[utoipa::path(delete, path = "/me/water/{id}", tag = "body",
    params(("id" = String, Path, description = "The drink's id")),
    responses(
        (status = 204, description = "Deleted."),
        (status = 404, description = "No such drink of this user.", body = ErrorBody,
            example = json!({"code": "NOT_FOUND", "message": "no such resource"})),
    ))]
fn water_delete() {}

/// `POST /me/fast-events/{id}/end`: COMPLETED at or after the planned end, else ENDED_EARLY.
#[utoipa::path(post, path = "/me/fast-events/{id}/end", tag = "fasting",
    params(("id" = String, Path, description = "The fast's id"), ("Idempotency-Key" = Option<String>, Header, description = "1 to 64 printable ASCII characters: a retry with the same key within 24 h answers the first success again and changes nothing more.")),
    request_body(content = Option<EndFast>, description = "May be empty: ends now.",
        example = json!({"endedAt": "2026-11-23T12:05:00Z"})),
    responses(
        (status = 200, description = "The ended fast.", body = Fast, example = json!(fast_example())),
        (status = 400, description = "`endedAt` in the future, or not after the start.", body = ErrorBody,
            example = json!({"code": "VALIDATION_ERROR", "message": "endedAt: must not be in the future"})),
        (status = 404, description = "No such fast of this user.", body = ErrorBody,
            example = json!({"code": "NOT_FOUND", "message": "no such resource"})),
        (status = 409, description = "The fast has already ended.", body = ErrorBody,
            example = json!({"code": "FAST_NOT_RUNNING", "message": "this fast is not running"})),
        (status = 422, description = "An `Idempotency-Key` first used for another request.", body = ErrorBody,
            example = json!({"code": "IDEMPOTENCY_KEY_REUSED", "message": "this Idempotency-Key was used for another request"})),
    ))]
fn fasts_end() {}

/// `POST /me/fast-events/{id}/resume`: a fast ended within the last ten minutes runs again, with
/// its start and planned end unchanged.
#[utoipa::path(post, path = "/me/fast-events/{id}/resume", tag = "fasting",
    params(("id" = String, Path, description = "The fast's id")),
    request_body(content = Option<Empty>, description = "May be empty."),
    responses(
        (status = 200, description = "The fast, running again.", body = Fast, example = json!(fast_example())),
        (status = 404, description = "No such fast of this user.", body = ErrorBody,
            example = json!({"code": "NOT_FOUND", "message": "no such resource"})),
        (status = 409, description = "This or another fast is running, or a later fast was started since.", body = ErrorBody,
            example = json!({"code": "FAST_ALREADY_RUNNING", "message": "a fast is already running"})),
        (status = 422, description = "The fast ended more than 10 minutes ago.", body = ErrorBody,
            example = json!({"code": "TOO_LATE_TO_RESUME", "message": "a fast can be resumed only within 10 minutes of its end"})),
    ))]
fn fasts_resume() {}

/// `GET /me/fast-events/{id}/break-fast-suggestions`: three easy-to-digest recipes.
#[utoipa::path(get, path = "/me/fast-events/{id}/break-fast-suggestions", tag = "fasting",
    params(("id" = String, Path, description = "The fast's id")),
    responses(
        (status = 200, description = "Three recipes.", body = RecipeList),
        (status = 404, description = "No such fast of this user.", body = ErrorBody,
            example = json!({"code": "NOT_FOUND", "message": "no such resource"})),
        (status = 422, description = "The fast lasted (or has lasted so far) under 24 hours.", body = ErrorBody,
            example = json!({"code": "FAST_TOO_SHORT", "message": "break-fast suggestions are for fasts of 24 hours or more"})),
    ))]
fn fasts_suggestions() {}

/// `GET /me/fasting/stats`: hours this Rome week and month, streaks and completion.
#[utoipa::path(get, path = "/me/fasting/stats", tag = "fasting",
    responses((status = 200, description = "The statistics.", body = domain::stats::Stats)))]
fn stats() {}

/// `GET /me/fasting/pause`.
#[utoipa::path(get, path = "/me/fasting/pause", tag = "fasting",
    responses((status = 200, description = "The pause.", body = Pause,
        example = json!({"fastingPausedUntil": "2026-11-24T05:00:00Z", "paused": true}))))]
fn pause_get() {}

/// `POST /me/fasting/pause`: a free day; paused days neither break nor extend a streak.
#[utoipa::path(post, path = "/me/fasting/pause", tag = "fasting",
    request_body(content = Option<PauseBody>,
        description = "Empty or `until` absent: the next calendar day at 06:00 Europe/Rome; `until: null`: the pause ends now.",
        example = json!({"until": "2026-11-25T05:00:00Z"})),
    responses(
        (status = 200, description = "The pause.", body = Pause,
            example = json!({"fastingPausedUntil": "2026-11-25T05:00:00Z", "paused": true})),
        (status = 400, description = "`until` in the past or more than 30 days ahead.", body = ErrorBody,
            example = json!({"code": "VALIDATION_ERROR", "message": "until: must not be in the past"})),
    ))]
fn pause_set() {}

/// `POST /me/meal-plans`.
#[utoipa::path(post, path = "/me/meal-plans", tag = "meal plans",
    request_body(content = CreatePlan, example = json!({"intermittentFasting": true, "days": [
        {"date": "2026-11-23", "slots": [{"category": "PRA", "recipeId": "pasta-e-ceci"}, {"category": "CENA", "title": "Minestrone"}]}]})),
    responses(
        (status = 201, description = "The plan with its slot ids.", body = MealPlan),
        (status = 400, description = "Bad days, slots, categories or recipe ids.", body = ErrorBody,
            example = json!({"code": "VALIDATION_ERROR", "message": "days[0].slots[1].recipeId: no such recipe"})),
        (status = 409, description = "50 plans that still have days today or later.", body = ErrorBody,
            example = json!({"code": "MEAL_PLAN_LIMIT_REACHED", "message": "at most 50 meal plans per person, and all 50 still have days today or later"})),
    ))]
fn plans_create() {}

/// `GET /me/meal-plans/today`.
#[utoipa::path(get, path = "/me/meal-plans/today", tag = "meal plans",
    responses((status = 200, description = "Today's slots.", body = TodayPlan,
        example = json!({"date": "2026-11-23", "planId": "pln_1", "intermittentFasting": true, "slots": [slot_example()]}))))]
fn plans_today() {}

/// `GET /me/meal-plans/{id}`.
#[utoipa::path(get, path = "/me/meal-plans/{id}", tag = "meal plans",
    params(("id" = String, Path, description = "The plan's id")),
    responses(
        (status = 200, description = "The plan.", body = MealPlan),
        (status = 404, description = "No such plan of this user.", body = ErrorBody,
            example = json!({"code": "NOT_FOUND", "message": "no such resource"})),
    ))]
fn plans_one() {}

/// `POST /me/meal-plans/slots/{id}/consumed`: consuming the day's final meal may start a fast.
#[utoipa::path(post, path = "/me/meal-plans/slots/{id}/consumed", tag = "meal plans",
    params(("id" = String, Path, description = "The slot's id")),
    responses(
        (status = 200, description = "The slot, and the fast it started if any.", body = Consumed,
            example = json!({"slot": slot_example(), "autoStartedFast": {"id": "fst_9f2c1d7e4b"}})),
        (status = 404, description = "No such slot of this user.", body = ErrorBody,
            example = json!({"code": "NOT_FOUND", "message": "no such resource"})),
    ))]
fn plans_consume() {}

/// `DELETE /me/meal-plans/slots/{id}/consumed`: within ten minutes of the consumption also
/// removes the fast it started, while that fast runs.
#[utoipa::path(delete, path = "/me/meal-plans/slots/{id}/consumed", tag = "meal plans",
    params(("id" = String, Path, description = "The slot's id")),
    responses(
        (status = 200, description = "The slot, no longer consumed, and the fast removed with it.", body = Unconsumed,
            example = json!({"slot": slot_example(), "removedFast": {"id": "fst_9f2c1d7e4b"}})),
        (status = 404, description = "No such slot of this user.", body = ErrorBody,
            example = json!({"code": "NOT_FOUND", "message": "no such resource"})),
    ))]
fn plans_unconsume() {}

/// `GET /me/recipes`.
#[utoipa::path(get, path = "/me/recipes", tag = "recipes", params(RecipeQuery),
    responses(
        (status = 200, description = "The catalogue, or one category of it.", body = RecipeList),
        (status = 400, description = "Unknown category.", body = ErrorBody,
            example = json!({"code": "VALIDATION_ERROR", "message": "category: must be COLAZIONE, PRANZO, SPUNTINO or CENA"})),
    ))]
fn recipes_list() {}

/// `GET /me/recipes/{id}`.
#[utoipa::path(get, path = "/me/recipes/{id}", tag = "recipes",
    params(("id" = String, Path, description = "The recipe's id")),
    responses(
        (status = 200, description = "The recipe.", body = domain::recipes::Recipe),
        (status = 404, description = "No such recipe.", body = ErrorBody,
            example = json!({"code": "NOT_FOUND", "message": "no such resource"})),
    ))]
fn recipes_one() {}

/// `GET /me/notifications/config`.
#[utoipa::path(get, path = "/me/notifications/config", tag = "notifications",
    responses((status = 200, description = "Whether push is on, and the key to subscribe with.", body = PushConfig,
        example = json!({"pushEnabled": true, "vapidPublicKey": "BEl62iUYgUivxIkv69yViEuiBIa-Ib9-SkvMeAtA3LFgDzkrxZJjSgSnfckjBJuBkr3qBUYIHBQFLXYp5Nksh8U"}))))]
fn notifications_config() {}

/// `GET /me/notifications/settings`.
#[utoipa::path(get, path = "/me/notifications/settings", tag = "notifications",
    responses((status = 200, description = "The settings (defaults false, true).", body = NotificationSettings,
        example = json!({"mealReminders": false, "weeklyWeighIn": true}))))]
fn settings_get() {}

/// `PATCH /me/notifications/settings`: sets what is given.
#[utoipa::path(patch, path = "/me/notifications/settings", tag = "notifications",
    request_body(content = PatchSettings, example = json!({"mealReminders": true})),
    responses((status = 200, description = "The settings after the change.", body = NotificationSettings,
        example = json!({"mealReminders": true, "weeklyWeighIn": true}))))]
fn settings_patch() {}

/// `POST /me/notifications/test`: a test push to every device of the user.
#[utoipa::path(post, path = "/me/notifications/test", tag = "notifications",
    responses(
        (status = 200, description = "How the sends went.", body = TestPushResult,
            example = json!({"sent": 2, "removed": 0, "failed": 0})),
        (status = 429, description = "At most 5 test pushes per 10 minutes.", body = ErrorBody,
            headers(("Retry-After" = u32, description = "Seconds to wait")),
            example = json!({"code": "RATE_LIMITED", "message": "at most 5 test notifications per 10 minutes; try again in 420 s"})),
        (status = 503, description = "Push is not configured on this server.", body = ErrorBody,
            example = json!({"code": "PUSH_DISABLED", "message": "push notifications are not configured on this server"})),
    ))]
fn notifications_test() {}

/// `POST /me/device-tokens`: registers a push subscription; the same endpoint again updates it.
#[utoipa::path(post, path = "/me/device-tokens", tag = "notifications",
    request_body(content = RegisterDevice, example = json!({"platform": "web",
        "endpoint": "https://fcm.googleapis.com/fcm/send/abc123",
        "keys": {"p256dh": "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM", "auth": "tBHItJI5svbpez7KI4CCXg"}})),
    responses(
        (status = 201, description = "The device.", body = Device),
        (status = 400, description = "A bad platform, endpoint or keys.", body = ErrorBody,
            example = json!({"code": "VALIDATION_ERROR", "message": "endpoint: must be an https:// address"})),
    ))]
fn devices_register() {}

/// `DELETE /me/device-tokens`: forgets a push subscription, also when already gone.
#[utoipa::path(delete, path = "/me/device-tokens", tag = "notifications",
    request_body(content = RemoveDevice, example = json!({"endpoint": "https://fcm.googleapis.com/fcm/send/abc123"})),
    responses((status = 204, description = "Gone.")))]
fn devices_remove() {}

/// `GET /me/export`: everything the service holds about the user (GDPR arts. 15 and 20).
#[utoipa::path(get, path = "/me/export", tag = "account",
    params(("format" = Option<String>, Query, description = "`json` (default) or `csv` (the fasts only)")),
    responses(
        (status = 200, description = "An attachment (`Content-Disposition: attachment`): JSON with exportedAt, user, sessions, accounts (no secrets), preferences, pauses, fasts with symptoms, mealPlans, notificationSettings, devices (no keys), twoFactor (whether it is set up; never its secret or codes), passkeys (names and kinds; never the keys) and the security activity of 90 days; or CSV of the fasts. Each export is itself recorded in the activity.",
            headers(("Content-Disposition" = String)),
            content(
                (Object = "application/json", example = json!({"exportedAt": "2026-11-23T09:00:00Z", "user": {}, "sessions": [], "accounts": [], "preferences": {}, "pauses": [], "fasts": [], "mealPlans": [], "notificationSettings": {}, "devices": [], "twoFactor": null, "passkeys": [], "activity": []})),
                (String = "text/csv"),
            )),
        (status = 400, description = "An unknown format.", body = ErrorBody,
            example = json!({"code": "VALIDATION_ERROR", "message": "format: must be \"json\" or \"csv\""})),
        (status = 403, description = "The session is older than a day and no password or code was checked on it in the last 5 minutes: sign in again (or confirm it is you), then export.", body = ErrorBody,
            example = json!({"code": "SESSION_NOT_FRESH", "message": "Session is not fresh"})),
    ))]
fn export() {}

/// Adds what every `/me` operation shares: the session cookie, its 401, the origin rule of
/// state-changing requests, and the contract's error body for any other failure.
struct Shared;

impl Modify for Shared {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "session",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                "digiuno.session_token",
                "The session cookie auth sets at sign-in (`__Secure-digiuno.session_token` on https).",
            ))),
        );
        for (method, op) in operations_mut(doc, |path| path.starts_with("/me")) {
            op.security = Some(vec![SecurityRequirement::new(
                "session",
                Vec::<String>::new(),
            )]);
            let responses = &mut op.responses.responses;
            responses.entry("401".into()).or_insert_with(|| {
                error_response(
                    "No valid session.",
                    "UNAUTHORIZED",
                    "a valid session is required",
                )
            });
            if method != HttpMethod::Get {
                responses.entry("403".into()).or_insert_with(|| {
                    error_response(
                        "A request with a cookie from an untrusted `Origin`.",
                        "INVALID_ORIGIN",
                        "Invalid origin",
                    )
                });
            }
            responses.entry("400".into()).or_insert_with(|| {
                error_response(
                    "Malformed path or query.",
                    "VALIDATION_ERROR",
                    "path: must not contain the NUL character",
                )
            });
        }
        add_default_error(doc, |path| path.starts_with("/me"));
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "nutrition-api",
        description = "The signed-in user's API under `/me`: fasting, statistics, pause, meal plans, \
            recipes, devices and notification settings. Every `/me` route needs the session cookie \
            that auth sets; a state-changing request carrying it must come from a trusted `Origin`. \
            Every error is `{code, message}`. Times are RFC 3339 UTC, days `YYYY-MM-DD` in Europe/Rome."
    ),
    paths(
        me, preferences_get, preferences_patch, export,
        fasts_list, fasts_start, fasts_current, fasts_one, fasts_patch, fasts_delete, fasts_end, fasts_resume, fasts_suggestions,
        fasts_import, weights_list, weights_record, weights_delete, water_day, water_add, water_delete,
        stats, pause_get, pause_set,
        plans_create, plans_today, plans_one, plans_consume, plans_unconsume,
        recipes_list, recipes_one,
        notifications_config, settings_get, settings_patch, notifications_test,
        devices_register, devices_remove,
    ),
    components(schemas(Symptoms, DayIn, SlotIn, Keys, FastRef)),
    modifiers(&Shared),
    tags(
        (name = "account", description = "The user and their preferences."),
        (name = "fasting", description = "Fasts, the symptom diary, corrections, import, statistics and the pause."),
        (name = "body", description = "Weight and water."),
        (name = "meal plans", description = "Plans, today's slots, consuming meals."),
        (name = "recipes", description = "The recipe catalogue."),
        (name = "notifications", description = "Push subscriptions and notification settings."),
        (name = "operations", description = "Probes and this document."),
    )
)]
struct NutritionApi;

/// The complete document: nutrition-api's routes plus the probes and documents every service has.
pub fn document() -> utoipa::openapi::OpenApi {
    let mut doc = service_kit::openapi::complete(NutritionApi::openapi());
    doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
    doc
}
