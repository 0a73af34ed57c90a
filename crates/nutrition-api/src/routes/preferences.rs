use actix_web::{HttpResponse, web};
use domain::body::{HEIGHT_CM, WATER_GOAL_ML};
use domain::locale::Locale;
use domain::protocol::Protocol;
use serde::{Deserialize, Serialize};
use service_kit::http::Json;
use session::CurrentUser;

use crate::error::{ApiError, invalid};
use crate::repo::Repo;
use crate::repo::profile::{self, PreferencesPatch, Profile};

/// The preferences on the wire, in `GET /me` and `/me/preferences` alike.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Preferences {
    #[schema(value_type = Option<domain::protocol::Protocol>)]
    #[schema(required = true)]
    fasting_protocol: Option<String>,
    fasting_milestones: bool,
    /// Kilograms, one decimal.
    #[schema(required = true)]
    weight_goal_kg: Option<f64>,
    #[schema(required = true)]
    height_cm: Option<i16>,
    water_goal_ml: i32,
    locale: Locale,
    /// The long-fast safety notice was acknowledged.
    long_fast_acknowledged: bool,
}

impl Preferences {
    pub(crate) fn new(p: &Profile, locale: Locale) -> Self {
        Self {
            fasting_protocol: p.fasting_protocol.clone(),
            fasting_milestones: p.fasting_milestones,
            weight_goal_kg: p.weight_goal_hg.map(domain::body::kilograms),
            height_cm: p.height_cm,
            water_goal_ml: p.water_goal_ml,
            locale,
            long_fast_acknowledged: p.long_fast_acknowledged,
        }
    }
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PatchPreferences {
    /// `null` clears the preferred protocol.
    #[serde(default, deserialize_with = "service_kit::http::double_option")]
    #[schema(value_type = Option<domain::protocol::Protocol>)]
    fasting_protocol: Option<Option<String>>,
    fasting_milestones: Option<bool>,
    /// 20.0 to 400.0 kg with at most one decimal; `null` clears the goal.
    #[serde(default, deserialize_with = "service_kit::http::double_option")]
    #[schema(value_type = Option<f64>, minimum = 20.0, maximum = 400.0)]
    weight_goal_kg: Option<Option<f64>>,
    /// 100 to 250; `null` clears it.
    #[serde(default, deserialize_with = "service_kit::http::double_option")]
    #[schema(value_type = Option<i64>, minimum = 100, maximum = 250)]
    height_cm: Option<Option<i64>>,
    /// 500 to 6000 (default 2000).
    #[schema(minimum = 500, maximum = 6000)]
    water_goal_ml: Option<i64>,
    #[schema(value_type = Option<Locale>)]
    locale: Option<String>,
    long_fast_acknowledged: Option<bool>,
}

/// `GET /me/preferences`.
pub async fn get(me: CurrentUser, repo: web::Data<Repo>) -> Result<HttpResponse, ApiError> {
    let (p, locale) = profile::preferences(&repo, me.id()).await?;
    Ok(HttpResponse::Ok().json(Preferences::new(&p, locale)))
}

/// `PATCH /me/preferences`: sets what is given; `null` clears the protocol, goal or height.
pub async fn patch(
    me: CurrentUser,
    repo: web::Data<Repo>,
    body: Json<PatchPreferences>,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    if let Some(Some(p)) = &body.fasting_protocol {
        p.parse::<Protocol>()
            .map_err(|e| invalid("fastingProtocol", e))?;
    }
    let weight_goal_hg = body
        .weight_goal_kg
        .map(|goal| {
            goal.map(|kg| {
                domain::body::hectograms(kg).ok_or_else(|| {
                    invalid(
                        "weightGoalKg",
                        "must be 20.0 to 400.0 with at most one decimal",
                    )
                })
            })
            .transpose()
        })
        .transpose()?;
    let height_cm = body
        .height_cm
        .map(|h| {
            h.map(|h| {
                i16::try_from(h)
                    .ok()
                    .filter(|h| HEIGHT_CM.contains(h))
                    .ok_or_else(|| invalid("heightCm", "must be a whole number from 100 to 250"))
            })
            .transpose()
        })
        .transpose()?;
    let water_goal_ml = body
        .water_goal_ml
        .map(|w| {
            i32::try_from(w)
                .ok()
                .filter(|w| WATER_GOAL_ML.contains(w))
                .ok_or_else(|| invalid("waterGoalMl", "must be a whole number from 500 to 6000"))
        })
        .transpose()?;
    let locale = body
        .locale
        .map(|l| l.parse::<Locale>().map_err(|e| invalid("locale", e)))
        .transpose()?;
    let patch = PreferencesPatch {
        fasting_protocol: body.fasting_protocol,
        fasting_milestones: body.fasting_milestones,
        weight_goal_hg,
        height_cm,
        water_goal_ml,
        long_fast_acknowledged: body.long_fast_acknowledged,
        updated_at: None,
    };
    let (p, locale) = profile::set_preferences(&repo, me.id(), patch, locale).await?;
    Ok(HttpResponse::Ok().json(Preferences::new(&p, locale)))
}
