//! The ways the user signs in: a password, Google.

use actix_web::{HttpResponse, web};
use serde::Deserialize;
use session::MaybeSession;
use utoipa::ToSchema;

use crate::answers::{Account, Status};
use crate::body::Body;
use crate::error::ApiError;
use crate::repo::{accounts, users};
use crate::routes::sessions::signed_in;
use crate::state::AppState;

fn account(a: accounts::Linked) -> Account {
    let scopes = a
        .scope
        .as_deref()
        .unwrap_or_default()
        .split([',', ' '])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    Account {
        id: a.id,
        provider_id: a.provider_id,
        account_id: a.account_id,
        user_id: a.user_id,
        scopes,
        created_at: a.created_at,
        updated_at: a.updated_at,
    }
}

/// `GET /api/auth/list-accounts`: no tokens and no password, only what identifies each account.
pub async fn list_accounts(
    state: web::Data<AppState>,
    current: MaybeSession,
) -> Result<HttpResponse, ApiError> {
    let me = signed_in(current)?;
    let list = state
        .db
        .read(move |conn| accounts::list(conn, &me.user.id))
        .await?;
    Ok(HttpResponse::Ok().json(list.into_iter().map(account).collect::<Vec<_>>()))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Unlink {
    provider_id: Option<String>,
    account_id: Option<String>,
}

/// `POST /api/auth/unlink-account` `{providerId, accountId?}`. `accountId` may be the provider's
/// account id or, as better-auth 1.7's client sends it alone, the id from `list-accounts`. The
/// last account is never removed: the user could not sign in any more.
pub async fn unlink_account(
    state: web::Data<AppState>,
    current: MaybeSession,
    body: Body<Unlink>,
) -> Result<HttpResponse, ApiError> {
    let me = signed_in(current)?;
    let Unlink {
        provider_id,
        account_id,
    } = body.value;
    if provider_id.is_none() && account_id.is_none() {
        return Err(ApiError::bad_request(
            "VALIDATION_ERROR",
            "providerId: required (or accountId)",
        ));
    }
    state
        .db
        .write(move |conn| {
            // Two parallel unlinks must not remove the last two accounts together.
            users::lock(conn, &me.user.id)?;
            let list = accounts::list(conn, &me.user.id)?;
            if list.len() <= 1 {
                return Err(ApiError::bad("FAILED_TO_UNLINK_LAST_ACCOUNT"));
            }
            let target = list.iter().find(|a| {
                provider_id.as_deref().is_none_or(|p| p == a.provider_id)
                    && account_id
                        .as_deref()
                        .is_none_or(|id| id == a.account_id || id == a.id)
            });
            let Some(target) = target else {
                return Err(ApiError::bad("ACCOUNT_NOT_FOUND"));
            };
            accounts::delete(conn, &me.user.id, &target.id)?;
            Ok(())
        })
        .await?;
    Ok(HttpResponse::Ok().json(Status::DONE))
}
