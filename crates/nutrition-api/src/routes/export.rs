//! `GET /me/export`: everything the service holds about the signed-in person (GDPR arts. 15 and
//! 20), as one JSON document, or the fasts as CSV for a spreadsheet.

use actix_web::http::header;
use actix_web::{HttpResponse, web};
use chrono::Utc;
use serde::Deserialize;
use session::CurrentUser;

use crate::error::ApiError;
use crate::model::{Fast, FastRow};
use crate::repo::Repo;
use crate::repo::export::{gather, record};
use crate::state::AppState;

#[derive(Debug, Deserialize)]
pub struct ExportQuery {
    format: Option<String>,
}

/// `GET /me/export` (JSON) and `GET /me/export?format=csv` (the fasts). Like deleting the account,
/// it needs a fresh session ([`session::Session::is_fresh`]): a phone left unlocked should not
/// hand a whole health diary to whoever holds it. Each export is recorded in the activity.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn export(
    req: actix_web::HttpRequest,
    me: CurrentUser,
    repo: web::Data<Repo>,
    state: web::Data<AppState>,
    query: web::Query<ExportQuery>,
) -> Result<HttpResponse, ApiError> {
    let csv = match query.format.as_deref() {
        None | Some("json") => false,
        Some("csv") => true,
        Some(_) => {
            return Err(ApiError::Validation(
                "format: must be \"json\" or \"csv\"".into(),
            ));
        }
    };
    let now = Utc::now();
    if !me.session.is_fresh(now) {
        return Err(ApiError::Forbidden {
            code: "SESSION_NOT_FRESH",
            message: "Session is not fresh",
        });
    }
    let data = gather(&repo, me.id()).await?;
    let user_agent = service_kit::http::user_agent(&req);
    record(&repo, &me.session, user_agent.as_deref()).await?;
    let day = now.format("%Y-%m-%d");
    if csv {
        return Ok(HttpResponse::Ok()
            .content_type("text/csv; charset=utf-8")
            .insert_header((
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"digiuno-fasts-{day}.csv\""),
            ))
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .body(fasts_csv(&data.fasts)));
    }
    let p = &data.profile;
    let accounts: Vec<serde_json::Value> = data
        .accounts
        .iter()
        .map(|a| {
            let mut v = serde_json::to_value(a).unwrap_or_default();
            v["scopes"] = scopes(a.scope.as_deref()).into();
            v
        })
        .collect();
    let document = serde_json::json!({
        "exportedAt": service_kit::time::format(&now),
        "user": me.user,
        "sessions": data.sessions,
        "accounts": accounts,
        "preferences": super::preferences::Preferences::new(p, data.locale),
        "pauses": {
            "fastingPausedUntil": p.fasting_paused_until.as_ref().map(service_kit::time::format),
            "periods": data.pauses,
        },
        "fasts": data.fasts.into_iter().map(Fast::from).collect::<Vec<_>>(),
        "weights": data
            .weights
            .into_iter()
            .map(crate::repo::weights::Weight::from)
            .collect::<Vec<_>>(),
        "water": data.water,
        "mealPlans": data
            .plans
            .into_iter()
            .map(|plan| super::plans::plan_view(&state, plan))
            .collect::<Vec<_>>(),
        "notificationSettings": {
            "mealReminders": p.meal_reminders,
            "weeklyWeighIn": p.weekly_weigh_in,
        },
        "devices": data.devices,
        "twoFactor": data.two_factor,
        "passkeys": data.passkeys,
        "activity": data.activity,
    });
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .insert_header((
            header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"digiuno-export-{day}.json\""),
        ))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(document))
}

/// better-auth keeps an account's scopes comma-separated and lists them as an array.
fn scopes(raw: Option<&str>) -> Vec<String> {
    raw.unwrap_or_default()
        .split([',', ' '])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

const CSV_HEADER: &str = "id,status,protocol,startedAt,plannedEndAt,endedAt,autoStarted,\
notifiedMilestones,headache,energy,hunger,clarity,note";

/// The fasts as RFC 4180 CSV (CRLF line ends), oldest first.
pub fn fasts_csv(fasts: &[FastRow]) -> String {
    let mut out = String::with_capacity(64 + fasts.len() * 160);
    out.push_str(CSV_HEADER);
    out.push_str("\r\n");
    for f in fasts {
        let symptom = |k: &str| {
            f.symptoms
                .as_ref()
                .and_then(|s| s.get(k))
                .map(|v| match v {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .unwrap_or_default()
        };
        let cells = [
            f.id.clone(),
            f.status.clone(),
            f.protocol.clone(),
            service_kit::time::format(&f.started_at),
            service_kit::time::format(&f.planned_end_at),
            f.ended_at
                .as_ref()
                .map(service_kit::time::format)
                .unwrap_or_default(),
            f.auto_started.to_string(),
            f.notified_milestones.join(" "),
            symptom("headache"),
            symptom("energy"),
            symptom("hunger"),
            symptom("clarity"),
            symptom("note"),
        ];
        let line: Vec<String> = cells.iter().map(|c| csv_cell(c)).collect();
        out.push_str(&line.join(","));
        out.push_str("\r\n");
    }
    out
}

/// One CSV field. A value a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, or a tab or
/// carriage return first) gets a leading apostrophe, as OWASP advises, so that a diary note can
/// never compute or fetch anything when the file is opened; a field holding a quote, comma or line
/// break is quoted with its quotes doubled.
pub fn csv_cell(raw: &str) -> String {
    let neutral = if raw.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{raw}")
    } else {
        raw.to_owned()
    };
    if neutral.contains([',', '"', '\r', '\n'])
        || neutral.starts_with(' ')
        || neutral.ends_with(' ')
    {
        format!("\"{}\"", neutral.replace('"', "\"\""))
    } else {
        neutral
    }
}

#[cfg(test)]
mod tests {
    use super::csv_cell;

    #[test]
    fn cells_are_quoted_and_formulas_neutralised() {
        assert_eq!(csv_cell("plain"), "plain");
        assert_eq!(csv_cell(""), "");
        assert_eq!(csv_cell("a,b"), "\"a,b\"");
        assert_eq!(csv_cell("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_cell("two\nlines"), "\"two\nlines\"");
        assert_eq!(csv_cell("=1+2"), "'=1+2");
        assert_eq!(csv_cell("+39 333"), "'+39 333");
        assert_eq!(csv_cell("-2"), "'-2");
        assert_eq!(csv_cell("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(csv_cell("\t=1"), "'\t=1");
        assert_eq!(
            csv_cell("=HYPERLINK(\"http://x\",\"y\")"),
            "\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\""
        );
        assert_eq!(csv_cell("2026-11-22T06:00:00Z"), "2026-11-22T06:00:00Z");
    }
}
