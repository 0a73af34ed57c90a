//! Rows of the `nutrition` schema and how clients see them.

use chrono::{DateTime, Utc};
use diesel::{Queryable, Selectable};
use pg_store::schema::nutrition::{fast_event, meal_slot};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = fast_event, check_for_backend(diesel::pg::Pg))]
pub struct FastRow {
    pub id: String,
    pub user_id: String,
    pub status: String,
    pub protocol: String,
    pub started_at: DateTime<Utc>,
    pub planned_end_at: DateTime<Utc>,
    pub ended_at: Option<DateTime<Utc>>,
    pub notified_milestones: Vec<String>,
    pub symptoms: Option<serde_json::Value>,
    pub auto_started: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A fast event on the wire.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Fast {
    pub id: String,
    #[schema(value_type = domain::fasting::FastStatus)]
    pub status: String,
    #[schema(value_type = domain::protocol::Protocol)]
    pub protocol: String,
    #[serde(serialize_with = "service_kit::time::serialize")]
    pub started_at: DateTime<Utc>,
    #[serde(serialize_with = "service_kit::time::serialize")]
    pub planned_end_at: DateTime<Utc>,
    #[serde(serialize_with = "service_kit::time::serialize_opt")]
    #[schema(required = true)]
    pub ended_at: Option<DateTime<Utc>>,
    /// Milestone keys already pushed for this fast (`hydration_2h`, …, `ending_soon`).
    pub notified_milestones: Vec<String>,
    #[schema(value_type = Option<Symptoms>)]
    #[schema(required = true)]
    pub symptoms: Option<serde_json::Value>,
    /// Started by consuming the final meal of a day in a meal plan.
    pub auto_started: bool,
}

impl From<FastRow> for Fast {
    fn from(r: FastRow) -> Self {
        Self {
            id: r.id,
            status: r.status,
            protocol: r.protocol,
            started_at: r.started_at,
            planned_end_at: r.planned_end_at,
            ended_at: r.ended_at,
            notified_milestones: r.notified_milestones,
            symptoms: r.symptoms,
            auto_started: r.auto_started,
        }
    }
}

/// The symptom diary: a headache checkbox, three sliders from 1 to 10 and a note.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(example = json!({"headache": true, "energy": 6, "hunger": 4, "clarity": 8, "note": "Mal di testa leggero"}))]
pub struct Symptoms {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub headache: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 10)]
    pub energy: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 10)]
    pub hunger: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 10)]
    pub clarity: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 2000)]
    pub note: Option<String>,
}

pub const MAX_NOTE: usize = 2000;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = meal_slot, check_for_backend(diesel::pg::Pg))]
pub struct SlotRow {
    pub id: String,
    pub plan_id: String,
    pub user_id: String,
    pub date: chrono::NaiveDate,
    pub category: String,
    pub position: i16,
    pub recipe_id: Option<String>,
    pub title: Option<String>,
    pub consumed_at: Option<DateTime<Utc>>,
}
