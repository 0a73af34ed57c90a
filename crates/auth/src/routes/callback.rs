use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::Utc;
use serde::Deserialize;
use subtle::ConstantTimeEq;

use crate::client;
use crate::google;
use crate::redirect::q;
use crate::repo::accounts::{self, GOOGLE, NewAccount};
use crate::repo::users::{self, NewUser};
use crate::repo::{QueryResult, Tx, verification};
use crate::routes::social::{FlowState, STATE_COOKIE};
use crate::state::AppState;

#[derive(Debug, Deserialize)]
pub struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

/// A failed sign-in, reported to the browser as `?error=CODE` on the sign-in page (or on the
/// error page the client asked for).
#[derive(Debug)]
struct Failure(&'static str);

/// `GET /api/auth/callback/google`: finishes Google sign-in and redirects with the session
/// cookie set; every failure redirects to the sign-in page with an error code.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn callback_google(
    req: HttpRequest,
    state: web::Data<AppState>,
    query: web::Query<CallbackQuery>,
) -> HttpResponse {
    let auth = &state.settings.auth;
    let state_cookie = session::cookie::cookie_name(auth, STATE_COOKIE);
    let clear_state = session::cookie::clear(auth, &state_cookie);
    let (location, set_cookie) =
        match finish(&req, &state, &query.into_inner(), &state_cookie).await {
            Ok((location, cookie)) => (location, Some(cookie)),
            Err((Failure(code), error_url)) => {
                tracing::warn!(code, "Google sign-in failed");
                let target = error_url.unwrap_or_else(|| "/sign-in".to_owned());
                let sep = if target.contains('?') { '&' } else { '?' };
                (format!("{target}{sep}error={}", q(code)), None)
            }
        };
    let mut resp = HttpResponse::Found();
    resp.insert_header((header::LOCATION, location));
    resp.append_header((header::SET_COOKIE, clear_state));
    if let Some(cookie) = set_cookie {
        resp.append_header((header::SET_COOKIE, cookie));
    }
    resp.finish()
}

type Outcome = Result<(String, String), (Failure, Option<String>)>;

async fn finish(
    req: &HttpRequest,
    state: &AppState,
    query: &CallbackQuery,
    state_cookie: &str,
) -> Outcome {
    let fail = |code| Err((Failure(code), None));
    let Some(google) = state.settings.google.clone() else {
        return fail("PROVIDER_NOT_FOUND");
    };
    let Some(state_value) = query
        .state
        .clone()
        .filter(|s| !s.is_empty() && s.len() <= 128)
    else {
        return fail("STATE_MISSING");
    };
    let auth = &state.settings.auth;
    let cookie_state =
        session::cookie::get_signed(auth, &session::guard::cookie_header(req), state_cookie);
    let bound =
        cookie_state.is_some_and(|c| bool::from(c.as_bytes().ct_eq(state_value.as_bytes())));
    if !bound {
        return fail("STATE_MISMATCH");
    }
    // Single use: whoever deletes the row owns the flow.
    let key = format!("oauth:{state_value}");
    let stored: Option<String> = state
        .db
        .read(move |conn| verification::consume(conn, &key, Utc::now()))
        .await
        .map_err(|_| (Failure("INTERNAL_ERROR"), None))?;
    let Some(flow) = stored.and_then(|s| serde_json::from_str::<FlowState>(&s).ok()) else {
        return fail("STATE_EXPIRED");
    };
    let error_url = flow.error_url.clone();
    let with_url = |code| (Failure(code), error_url.clone());
    if query.error.is_some() {
        return Err(with_url("ACCESS_DENIED"));
    }
    let Some(code) = query
        .code
        .as_deref()
        .filter(|c| !c.is_empty() && c.len() <= 2048)
    else {
        return Err(with_url("CODE_MISSING"));
    };
    let tokens = google::exchange(
        &state.http,
        &google,
        &auth.base_url,
        code,
        &flow.code_verifier,
    )
    .await
    .map_err(|e| {
        tracing::warn!(error = %e, "Google token exchange failed");
        with_url("OAUTH_TOKEN_EXCHANGE_FAILED")
    })?;
    let profile = google::profile(&state.http, &google, &tokens.access_token)
        .await
        .map_err(|e| {
            tracing::warn!(error = %e, "Google profile request failed");
            with_url("OAUTH_PROFILE_FAILED")
        })?;
    let email = profile
        .email
        .as_deref()
        .and_then(domain::email::normalise)
        .ok_or_else(|| with_url("EMAIL_NOT_FOUND"))?;
    let origin = client::origin(req, &state.settings.trusted_proxies);
    let require_verified = state.settings.require_email_verification;
    let base_url = auth.base_url.clone();
    let locale = crate::i18n::request_locale(req);
    let linked = state
        .db
        .write(move |conn| {
            link(
                conn,
                &profile,
                &tokens,
                &email,
                &origin,
                &base_url,
                require_verified,
                locale,
            )
        })
        .await
        .map_err(|cause| {
            tracing::error!(%cause, "linking a Google account failed");
            with_url("INTERNAL_ERROR")
        })?
        .map_err(|refused| {
            with_url(match refused {
                Refused::NotLinked => "ACCOUNT_NOT_LINKED",
                Refused::Unverified => "GOOGLE_EMAIL_NOT_VERIFIED",
                Refused::Raced => "INTERNAL_ERROR",
            })
        })?;
    if linked.mailed {
        state.wake_mailer();
    }
    let cookie = session::cookie::set_session(auth, &linked.token, true);
    let target = if linked.new_user {
        flow.new_user_url.or(flow.callback_url)
    } else {
        flow.callback_url
    };
    Ok((target.unwrap_or_else(|| "/".to_owned()), cookie))
}

struct Linked {
    token: String,
    new_user: bool,
    /// A new-device mail was queued.
    mailed: bool,
}

/// Why a Google account was not linked; nothing was written.
enum Refused {
    /// An account with this e-mail address exists, and it has a password or its address is
    /// not verified on both sides.
    NotLinked,
    /// Verification is required and Google does not vouch for this address.
    Unverified,
    /// The e-mail address was taken by a sign-up running at the same time.
    Raced,
}

/// Finds the user of this Google account, links it to the user with the same verified e-mail
/// address, or creates the user; then opens a session. With verification required, a new user
/// needs an address Google vouches for: nothing else would prove it. A new user keeps `locale`,
/// the language of the browser that came back from Google.
#[allow(clippy::too_many_arguments)]
fn link(
    conn: &mut Tx,
    profile: &google::Profile,
    tokens: &google::Tokens,
    email: &str,
    origin: &session::store::Origin,
    base_url: &url::Url,
    require_verified: bool,
    locale: crate::i18n::Locale,
) -> QueryResult<Result<Linked, Refused>> {
    let now = Utc::now();
    let (user, new_user) =
        if let Some(user) = accounts::find_by_account(conn, GOOGLE, &profile.sub)? {
            accounts::update_tokens(
                conn,
                GOOGLE,
                &profile.sub,
                Some(&tokens.access_token),
                tokens.id_token.as_deref(),
                now,
            )?;
            (user, false)
        } else {
            let account = |user_id| NewAccount {
                user_id,
                provider_id: GOOGLE,
                account_id: &profile.sub,
                password: None,
                access_token: Some(&tokens.access_token),
                refresh_token: tokens.refresh_token.as_deref(),
                id_token: tokens.id_token.as_deref(),
                scope: tokens.scope.as_deref(),
            };
            if let Some(user) = users::find_by_email(conn, email)? {
                // Linking by address is safe only when both sides proved the address: Google
                // vouches for it, and the existing user confirmed it. Otherwise whoever registered
                // someone else's address first would share that person's account afterwards.
                // An account with a password is not linked either: its owner may have confirmed
                // the address by opening a verification mail that someone else's registration
                // sent, and that someone knows the password. Signing in with it (or resetting it,
                // which ends every session) proves the password is the owner's.
                if !profile.email_verified
                    || !user.email_verified
                    || matches!(accounts::password_of(conn, &user.id)?, Some(Some(_)))
                {
                    return Ok(Err(Refused::NotLinked));
                }
                accounts::insert(conn, &account(&user.id), now)?;
                (user, false)
            } else {
                if require_verified && !profile.email_verified {
                    return Ok(Err(Refused::Unverified));
                }
                let name = profile.name.clone().unwrap_or_default();
                let new = NewUser {
                    name: name.trim(),
                    email,
                    email_verified: profile.email_verified,
                    image: profile.picture.as_deref().filter(|p| p.len() <= 2048),
                    locale,
                };
                let Some(user) = users::insert(conn, &new, now)? else {
                    return Ok(Err(Refused::Raced));
                };
                accounts::insert(conn, &account(&user.id), now)?;
                (user, true)
            }
        };
    let (session, mailed) =
        crate::activity::signed_in(conn, &user.id, true, origin, base_url, now)?;
    Ok(Ok(Linked {
        token: session.token,
        new_user,
        mailed,
    }))
}
