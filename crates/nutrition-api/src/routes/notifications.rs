use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::{DateTime, Utc};
use domain::notifications::{Kind, payload};
use futures_util::stream::{self, StreamExt};
use serde::{Deserialize, Serialize};
use service_kit::http::Json;
use session::CurrentUser;

use crate::error::{ApiError, invalid};
use crate::repo::Repo;
use crate::repo::devices::{self, DeviceRow, NewDevice};
use crate::repo::profile;
use crate::state::AppState;

/// How long a push service keeps a test notification for an offline device.
const TEST_TTL: Duration = Duration::from_secs(60 * 60);
const MAX_PLATFORM: usize = 32;
const MAX_TOKEN: usize = 4096;

/// `GET /me/notifications/config`: what the client needs to subscribe.
pub async fn config(_me: CurrentUser, state: web::Data<AppState>) -> HttpResponse {
    let key = state
        .settings
        .push
        .vapid
        .as_ref()
        .map(|v| v.public_key.clone());
    HttpResponse::Ok()
        .json(serde_json::json!({ "pushEnabled": key.is_some(), "vapidPublicKey": key }))
}

#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = NotificationSettings)]
pub(crate) struct Settings {
    meal_reminders: bool,
    weekly_weigh_in: bool,
}

impl From<profile::Profile> for Settings {
    fn from(p: profile::Profile) -> Self {
        Self {
            meal_reminders: p.meal_reminders,
            weekly_weigh_in: p.weekly_weigh_in,
        }
    }
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PatchSettings {
    meal_reminders: Option<bool>,
    weekly_weigh_in: Option<bool>,
}

/// `GET /me/notifications/settings`: meal reminders default off, the weekly weigh-in on.
pub async fn get_settings(
    me: CurrentUser,
    repo: web::Data<Repo>,
) -> Result<HttpResponse, ApiError> {
    let user_id = me.id();
    let p = profile::get(&repo, user_id).await?;
    Ok(HttpResponse::Ok().json(Settings::from(p)))
}

/// `PATCH /me/notifications/settings`.
pub async fn patch_settings(
    me: CurrentUser,
    repo: web::Data<Repo>,
    body: Json<PatchSettings>,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    let user_id = me.id();
    let p = profile::set_notifications(&repo, user_id, body.meal_reminders, body.weekly_weigh_in)
        .await?;
    Ok(HttpResponse::Ok().json(Settings::from(p)))
}

/// The subscription's keys, base64url as the browser's `PushSubscription.toJSON()` gives them.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = PushKeys)]
pub struct Keys {
    p256dh: String,
    auth: String,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterDevice {
    /// 1 to 32 letters, digits, `-`, `_` or `.` (`web`, `android`, …).
    platform: String,
    /// The push service's `https://` address of the subscription.
    endpoint: String,
    keys: Keys,
    token: Option<String>,
}

/// A device as the client sees it; its keys are not echoed.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Device {
    id: String,
    platform: String,
    endpoint: String,
    #[schema(required = true)]
    token: Option<String>,
    #[schema(required = true)]
    user_agent: Option<String>,
    #[serde(serialize_with = "service_kit::time::serialize")]
    created_at: DateTime<Utc>,
    #[serde(serialize_with = "service_kit::time::serialize")]
    last_seen_at: DateTime<Utc>,
}

impl From<DeviceRow> for Device {
    fn from(d: DeviceRow) -> Self {
        Self {
            id: d.id,
            platform: d.platform,
            endpoint: d.endpoint,
            token: d.token,
            user_agent: d.user_agent,
            created_at: d.created_at,
            last_seen_at: d.last_seen_at,
        }
    }
}

/// `POST /me/device-tokens`: registers the browser's push subscription; the same endpoint again
/// updates the device (keys, user agent, `lastSeenAt`).
#[tracing::instrument(level = "debug", skip_all)]
pub async fn register(
    req: HttpRequest,
    me: CurrentUser,
    repo: web::Data<Repo>,
    state: web::Data<AppState>,
    body: Json<RegisterDevice>,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    let platform = body.platform.trim().to_owned();
    if platform.is_empty()
        || platform.len() > MAX_PLATFORM
        || !platform
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(invalid(
            "platform",
            "1 to 32 letters, digits, '-', '_' or '.'",
        ));
    }
    let endpoint = state
        .settings
        .push
        .endpoints
        .check(body.endpoint.trim())
        .map_err(|e| invalid("endpoint", e))?
        .to_string();
    push::check_keys(&body.keys.p256dh, &body.keys.auth).map_err(|e| invalid("keys", e))?;
    if body.token.as_ref().is_some_and(|t| t.len() > MAX_TOKEN) {
        return Err(invalid("token", "at most 4096 characters"));
    }
    let user_agent = service_kit::http::user_agent(&req);
    let user_id = me.id();
    let session_id = &me.session.id;
    let new = NewDevice {
        platform: &platform,
        endpoint: &endpoint,
        p256dh: body.keys.p256dh.trim(),
        auth: body.keys.auth.trim(),
        token: body.token.as_deref(),
        user_agent: user_agent.as_deref(),
        session_id,
    };
    let row = devices::upsert(&repo, user_id, &new, Utc::now()).await?;
    Ok(HttpResponse::Created().json(Device::from(row)))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoveDevice {
    endpoint: String,
}

/// `DELETE /me/device-tokens`: 204, also when the device is already gone.
pub async fn remove(
    me: CurrentUser,
    repo: web::Data<Repo>,
    body: Json<RemoveDevice>,
) -> Result<HttpResponse, ApiError> {
    let endpoint = body.into_inner().endpoint;
    if endpoint.len() > 4096 {
        return Err(invalid("endpoint", "too long"));
    }
    let user_id = me.id();
    let trimmed = endpoint.trim().to_owned();
    // Registration stores the parsed form; accept either spelling when removing.
    let normalised = url::Url::parse(&trimmed)
        .map(|u| u.to_string())
        .unwrap_or_else(|_| trimmed.clone());
    devices::remove(&repo, user_id, &[trimmed, normalised]).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Test pushes one person may ask for in one window of [`TEST_PUSH_WINDOW_SECS`].
pub const TEST_PUSH_MAX: u32 = 5;
pub const TEST_PUSH_WINDOW_SECS: u32 = 600;
/// Sends one test push has in flight at once.
const TEST_PUSH_PARALLEL: usize = 4;
/// How long a test push may take in all; a send not done by then counts as failed. Shorter than
/// the 10 s a stopping server gives open requests.
const TEST_PUSH_DEADLINE: Duration = Duration::from_secs(8);

/// `POST /me/notifications/test`: a test push to every device of the user. Devices whose push
/// service answers 404 or 410 are removed.
///
/// Bounded three ways: [`TEST_PUSH_MAX`] per person per ten minutes (counted in Postgres, so every
/// replica shares the budget), [`TEST_PUSH_PARALLEL`] sends at once per request and
/// `startup::TEST_PUSH_SENDS` per process, and [`TEST_PUSH_DEADLINE`] in all. When the process is
/// stopping, sends not yet started are skipped and count as failed.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn test(
    me: CurrentUser,
    repo: web::Data<Repo>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let Some(sender) = state.push.clone() else {
        return Ok(service_kit::http::error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            "PUSH_DISABLED",
            "push notifications are not configured on this server",
        ));
    };
    let user_id = me.id();
    let devices = match devices::for_test_push(&repo, user_id, TEST_PUSH_MAX, TEST_PUSH_WINDOW_SECS)
        .await?
    {
        Ok(devices) => devices,
        Err(retry_after) => {
            return Err(ApiError::RateLimited {
                message: format!(
                    "at most {TEST_PUSH_MAX} test notifications per {} minutes; try again in {retry_after} s",
                    TEST_PUSH_WINDOW_SECS / 60
                ),
                retry_after,
            });
        }
    };
    let (_, locale) = profile::preferences(&repo, user_id).await?;
    let body = serde_json::to_vec(&payload(Kind::Test, locale)).map_err(ApiError::internal)?;
    // One topic for every test push: a device that is offline gets the latest one, not a pile.
    let options = push::Options {
        topic: Some(push::Topic::derive("test")),
        ..push::Options::ttl(TEST_TTL)
    };
    let deadline = tokio::time::Instant::now() + TEST_PUSH_DEADLINE;
    let work = &state.test_pushes;
    // A device registered under a wider host rule is never sent to; it is removed as if its push
    // service had answered 410, as the scheduler does.
    let policy = &state.settings.push.endpoints;
    let outcomes: Vec<(&DeviceRow, Option<push::Outcome>)> = stream::iter(&devices)
        .map(|d| {
            let refused = policy.check(&d.endpoint).is_err();
            let sub = push::Subscription {
                endpoint: d.endpoint.clone(),
                p256dh: d.p256dh.clone(),
                auth: d.auth.clone(),
            };
            let (sender, body, options) = (&sender, &body, &options);
            async move {
                if refused {
                    return (d, Some(push::Outcome::Gone));
                }
                let send = async {
                    let _permit = tokio::select! {
                        permit = work.sends.acquire() => permit.ok()?,
                        () = work.stopped() => return None,
                    };
                    if work.is_stopping() {
                        return None;
                    }
                    Some(sender.send_with(&sub, body, options).await)
                };
                (
                    d,
                    tokio::time::timeout_at(deadline, send).await.ok().flatten(),
                )
            }
        })
        .buffer_unordered(TEST_PUSH_PARALLEL)
        .collect()
        .await;
    let (mut sent, mut failed) = (0u32, 0u32);
    let mut gone = Vec::new();
    for (device, outcome) in outcomes {
        match outcome {
            Some(push::Outcome::Delivered) => sent += 1,
            Some(push::Outcome::Gone) => gone.push(device.id.clone()),
            Some(outcome @ (push::Outcome::RetryAfter(_) | push::Outcome::Failed { .. })) => {
                tracing::warn!(device_id = %device.id, ?outcome, "test push not delivered");
                failed += 1;
            }
            None => {
                tracing::warn!(device_id = %device.id, "test push not sent in time or stopping");
                failed += 1;
            }
        }
    }
    let removed = u32::try_from(gone.len()).unwrap_or(u32::MAX);
    if !gone.is_empty() {
        devices::remove_by_ids(&repo, &gone).await?;
    }
    Ok(HttpResponse::Ok()
        .json(serde_json::json!({ "sent": sent, "removed": removed, "failed": failed })))
}
