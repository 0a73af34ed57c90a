//! The seat page of a licence (contract section 12, "Seats a buyer manages"): server-rendered
//! HTML without script, in Italian or English.
//!
//! - `GET /licence/manage?t=<token>` lists the installations holding a seat, each with a
//!   "release" form; without a token it offers the form that asks for links by e-mail.
//! - `POST /licence/manage/release` (form: `t`, `n`, `csrf`, `instance`, `lang`) frees one seat
//!   through `repo::deactivations`, the one place of the deactivation rule and its limit (section
//!   7), which the API's deactivate uses too.
//! - `POST /licence/manage/link {email}` (JSON or form) mails a fresh link for every licence of
//!   the address. It answers the same, after the same least time, whether or not the address
//!   bought anything, and does the same statements for both. A client is limited per minute
//!   (429); an address gets at most [`MAILS_PER_ADDRESS_PER_HOUR`] such mails, beyond which the
//!   request is answered as before and mails nothing, so that no one can lock a buyer out of
//!   their links by asking for them.
//!
//! The token travels in the query string of the page only: request logs name routes, never
//! query strings (`service_kit::http::RequestSpan`), and the forms post it in their body.

use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use domain::licensing::ACTIVATION_LIMIT;
use domain::locale::Locale;
use serde::{Deserialize, Serialize};
use service_kit::http::{BodyFuture, DEFAULT_BODY_LIMIT, RequestError, from_body, parse_json};

use super::AppState;
use super::extractors::instance_field;
use super::limits::{self, Bucket};
use super::page::{escape, html_page};
use crate::error::ApiError;
use crate::mail;
use crate::repo::deactivations::{self, Deactivated};
use crate::repo::licences::LicenceRow;
use crate::repo::rate_limit::{self, Take};
use crate::repo::{Db, activations, outbox};
use crate::seat_links::{Checked, Links, PAGE_PATH, Token};

/// Seat-link mails one address may be sent in an hour.
pub const MAILS_PER_ADDRESS_PER_HOUR: u32 = 3;

/// The least time a link request takes, so that a known address (mail written) cannot be told
/// from an unknown one by the time of the answer.
pub const LINK_REQUEST_MIN_TIME: Duration = Duration::from_millis(300);

/// The longest e-mail address accepted (RFC 5321's path limit).
const MAX_EMAIL_LEN: usize = 254;

/// The body of a form or of JSON, read whole (both are small).
pub struct RawBody {
    bytes: web::Bytes,
    form: bool,
}

impl actix_web::FromRequest for RawBody {
    type Error = RequestError;
    type Future = BodyFuture<Self, Self::Error>;

    fn from_request(req: &HttpRequest, payload: &mut actix_web::dev::Payload) -> Self::Future {
        let form = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.trim_start()
                    .to_ascii_lowercase()
                    .starts_with("application/x-www-form-urlencoded")
            });
        from_body(req, payload, DEFAULT_BODY_LIMIT, move |_, bytes| {
            Ok(Self { bytes, form })
        })
    }
}

/// The value of the first `name` among url-encoded `pairs`.
fn field(pairs: &str, name: &str) -> Option<String> {
    url::form_urlencoded::parse(pairs.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// `?lang=` (or the form's `lang`) when it names a language of ours, else `Accept-Language`.
fn locale_of(req: &HttpRequest, chosen: Option<&str>) -> Locale {
    chosen
        .and_then(|l| l.parse::<Locale>().ok())
        .unwrap_or_else(|| {
            Locale::from_accept_language(
                req.headers()
                    .get(header::ACCEPT_LANGUAGE)
                    .and_then(|v| v.to_str().ok()),
            )
        })
}

fn other(locale: Locale) -> Locale {
    match locale {
        Locale::It => Locale::En,
        Locale::En => Locale::It,
    }
}

/// The address of the seat page for `token` (or without one) in `locale`.
fn page_href(token: Option<&str>, locale: Locale) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    if let Some(t) = token {
        query.append_pair("t", t);
    }
    query.append_pair("lang", locale.as_str());
    format!("{PAGE_PATH}?{}", query.finish())
}

/// The texts of the pages, in each language.
struct Texts {
    locale: Locale,
}

impl Texts {
    fn pick(&self, it: &'static str, en: &'static str) -> &'static str {
        match self.locale {
            Locale::It => it,
            Locale::En => en,
        }
    }

    /// `at` in Rome's time, as people of the language write it.
    fn when(&self, at: DateTime<Utc>) -> String {
        let local = at.with_timezone(&domain::rome::TZ);
        match self.locale {
            Locale::It => local.format("%d/%m/%Y %H:%M").to_string(),
            Locale::En => local.format("%-d %b %Y, %H:%M").to_string(),
        }
    }

    /// How long `secs` is, in days or hours, rounded up.
    fn wait(&self, secs: u64) -> String {
        let hours = secs.div_ceil(3600).max(1);
        let (n, one, many) = if hours >= 48 {
            (
                hours.div_ceil(24),
                self.pick("giorno", "day"),
                self.pick("giorni", "days"),
            )
        } else {
            (hours, self.pick("ora", "hour"), self.pick("ore", "hours"))
        };
        format!("{n} {}", if n == 1 { one } else { many })
    }
}

/// The form that asks for fresh links.
fn link_form(t: &Texts) -> String {
    format!(
        r#"<form method="post" action="{PAGE_PATH}/link">
      <input type="hidden" name="lang" value="{lang}">
      <label for="email">{label}</label>
      <input id="email" name="email" type="email" autocomplete="email" required maxlength="{MAX_EMAIL_LEN}">
      <button type="submit">{button}</button>
    </form>"#,
        lang = t.locale.as_str(),
        label = t.pick(
            "Indirizzo e-mail usato per l'acquisto",
            "E-mail address used for the purchase"
        ),
        button = t.pick("Inviami un nuovo link", "Send me a new link"),
    )
}

/// The page for a link that cannot be used, with the form that asks for a new one.
fn refused_page(locale: Locale, checked: Checked) -> HttpResponse {
    let t = Texts { locale };
    let (status, title, why) = match checked {
        Checked::Expired => (
            StatusCode::GONE,
            t.pick("Link scaduto", "This link has expired"),
            t.pick(
                "I link per gestire la licenza valgono 30 giorni. Chiedine uno nuovo: arriva all'indirizzo dell'acquisto.",
                "Links to manage a licence work for 30 days. Ask for a new one: it goes to the address of the purchase.",
            ),
        ),
        _ => (
            StatusCode::FORBIDDEN,
            t.pick("Link non valido", "This link is not valid"),
            t.pick(
                "Questo link non apre nessuna licenza. Usa il link dell'e-mail così com'è, oppure chiedine uno nuovo: arriva all'indirizzo dell'acquisto.",
                "This link opens no licence. Use the link of the e-mail as it is, or ask for a new one: it goes to the address of the purchase.",
            ),
        ),
    };
    let inner = format!(
        r#"<p class="error" role="alert">{why}</p>
    {form}"#,
        form = link_form(&t)
    );
    html_page(
        status,
        locale,
        title,
        &inner,
        Some(&page_href(None, other(locale))),
    )
}

/// What the seat page shows besides the list.
enum Notice {
    None,
    Released(String),
    AlreadyReleased,
    Limited(u64),
    FormExpired,
    BadInstance,
}

/// The licence a token opens, or the page that says why none.
async fn open(
    state: &AppState,
    db: &Db,
    raw: Option<&str>,
    locale: Locale,
) -> Result<Result<(LicenceRow, String), HttpResponse>, ApiError> {
    let Some(token) = raw.and_then(Token::parse) else {
        return Ok(Err(refused_page(locale, Checked::Forged)));
    };
    let Some(licence) = crate::repo::licences::find(db, &token.licence_id.as_str().into()).await?
    else {
        return Ok(Err(refused_page(locale, Checked::Forged)));
    };
    let links = Links::of(&state.settings);
    match links.check(&token, &licence.customer_email, state.clock.now()) {
        Checked::Valid => Ok(Ok((licence, raw.unwrap_or_default().to_owned()))),
        refused => Ok(Err(refused_page(locale, refused))),
    }
}

/// The seat page of `licence` opened with `token`.
async fn seat_page(
    state: &AppState,
    db: &Db,
    licence: &LicenceRow,
    token: &str,
    locale: Locale,
    status: StatusCode,
    notice: Notice,
) -> Result<HttpResponse, ApiError> {
    let t = Texts { locale };
    let links = Links::of(&state.settings);
    let seats = activations::list(db, &licence.id).await?;
    let page_value = URL_SAFE_NO_PAD.encode(rand::random::<[u8; 16]>());
    let csrf = links.csrf(token, &page_value);
    let tail = licence.license_key.rsplit('-').next().unwrap_or_default();
    let plan = licence.plan().as_str();
    let plan = format!(
        "{}{}",
        plan.get(..1).unwrap_or_default().to_uppercase(),
        plan.get(1..).unwrap_or_default()
    );
    let max = state.settings.deactivations_per_30_days;
    let mut inner = String::new();
    let notice = match notice {
        Notice::None => None,
        Notice::Released(name) => Some((
            "notice",
            match locale {
                Locale::It => format!(
                    "«{name}» non usa più la licenza: ora puoi attivarla su un altro computer."
                ),
                Locale::En => format!(
                    "“{name}” no longer uses the licence: you can now activate it on another computer."
                ),
            },
        )),
        Notice::AlreadyReleased => Some((
            "notice",
            t.pick(
                "Questo computer non usava già più la licenza.",
                "This computer was no longer using the licence.",
            )
            .to_owned(),
        )),
        Notice::Limited(secs) => Some((
            "error",
            match locale {
                Locale::It => format!(
                    "Hai già liberato {max} posti negli ultimi 30 giorni, il massimo. Potrai liberarne un altro tra {}.",
                    t.wait(secs)
                ),
                Locale::En => format!(
                    "You have released {max} seats in the last 30 days, the most allowed. You can release another in {}.",
                    t.wait(secs)
                ),
            },
        )),
        Notice::FormExpired => Some((
            "error",
            t.pick(
                "Il modulo non è più valido: riprova da questa pagina.",
                "The form is no longer valid: please try again from this page.",
            )
            .to_owned(),
        )),
        Notice::BadInstance => Some((
            "error",
            t.pick(
                "Questo computer non è tra quelli della licenza.",
                "This computer is not one of the licence's.",
            )
            .to_owned(),
        )),
    };
    if let Some((class, text)) = notice {
        let role = if class == "error" { "alert" } else { "status" };
        inner.push_str(&format!(
            r#"<p class="{class}" role="{role}">{}</p>
    "#,
            escape(&text)
        ));
    }
    inner.push_str(&format!(
        "<p>{}</p>\n    ",
        escape(&match locale {
            Locale::It => format!(
                "Licenza {plan} (chiave …-{tail}): {} computer su {ACTIVATION_LIMIT}.",
                seats.len()
            ),
            Locale::En => format!(
                "{plan} licence (key …-{tail}): {} of {ACTIVATION_LIMIT} computers.",
                seats.len()
            ),
        })
    ));
    if seats.is_empty() {
        inner.push_str(&format!(
            "<p>{}</p>\n",
            t.pick(
                "Nessun computer usa questa licenza.",
                "No computer uses this licence."
            )
        ));
    } else {
        inner.push_str(&format!(
            r#"<table>
      <thead><tr><th scope="col">{}</th><th scope="col">{}</th><th scope="col">{}</th><th scope="col"><span class="hint">{}</span></th></tr></thead>
      <tbody>
"#,
            t.pick("Nome", "Name"),
            t.pick("Attivato", "Activated"),
            t.pick("Ultimo accesso", "Last seen"),
            t.pick("Azione", "Action"),
        ));
        for seat in &seats {
            let name = seat
                .instance_name
                .clone()
                .filter(|n| !n.trim().is_empty())
                .unwrap_or_else(|| t.pick("Senza nome", "Unnamed").to_owned());
            let label = match locale {
                Locale::It => format!("Libera «{name}»"),
                Locale::En => format!("Release “{name}”"),
            };
            inner.push_str(&format!(
                r#"        <tr>
          <td>{name}</td>
          <td>{activated}</td>
          <td>{seen}</td>
          <td><form method="post" action="{PAGE_PATH}/release">
            <input type="hidden" name="t" value="{token}">
            <input type="hidden" name="n" value="{page_value}">
            <input type="hidden" name="csrf" value="{csrf}">
            <input type="hidden" name="instance" value="{instance}">
            <input type="hidden" name="lang" value="{lang}">
            <button type="submit" aria-label="{label}">{release}</button>
          </form></td>
        </tr>
"#,
                name = escape(&name),
                activated = escape(&t.when(seat.created_at.and_utc())),
                seen = escape(&t.when(seat.last_validated_at.and_utc())),
                token = escape(token),
                instance = escape(&seat.instance_id),
                lang = locale.as_str(),
                label = escape(&label),
                release = t.pick("Libera", "Release"),
            ));
        }
        inner.push_str("      </tbody>\n    </table>\n");
    }
    inner.push_str(&format!(
        "    <p class=\"hint\">{}</p>",
        escape(&match locale {
            Locale::It => format!(
                "Un computer liberato smette di usare la licenza alla sua prossima verifica, e il posto può andare a un altro. Puoi liberare al massimo {max} posti ogni 30 giorni."
            ),
            Locale::En => format!(
                "A released computer stops using the licence at its next check, and its seat can go to another one. You can release at most {max} seats in any 30 days."
            ),
        })
    ));
    let title = t.pick(
        "I computer della tua licenza",
        "The computers of your licence",
    );
    Ok(html_page(
        status,
        locale,
        title,
        &inner,
        Some(&page_href(Some(token), other(locale))),
    ))
}

/// `GET /licence/manage?t=&lang=`.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn page(
    state: web::Data<AppState>,
    db: web::Data<Db>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    limits::check(&state, &db, &req, Bucket::Licence).await?;
    let query = req.query_string();
    let locale = locale_of(&req, field(query, "lang").as_deref());
    let token = field(query, "t");
    if token.is_none() {
        let t = Texts { locale };
        let inner = format!(
            "<p>{}</p>\n    {}",
            t.pick(
                "Scrivi l'indirizzo e-mail con cui hai acquistato la licenza: ti mandiamo un link per vedere quali computer la usano e liberarne uno.",
                "Enter the e-mail address you bought the licence with: we send you a link to see which computers use it and release one.",
            ),
            link_form(&t)
        );
        return Ok(html_page(
            StatusCode::OK,
            locale,
            t.pick("Gestisci la tua licenza", "Manage your licence"),
            &inner,
            Some(&page_href(None, other(locale))),
        ));
    }
    match open(&state, &db, token.as_deref(), locale).await? {
        Ok((licence, token)) => {
            seat_page(
                &state,
                &db,
                &licence,
                &token,
                locale,
                StatusCode::OK,
                Notice::None,
            )
            .await
        }
        Err(refused) => Ok(refused),
    }
}

/// `POST /licence/manage/release` from the page's form.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn release(
    state: web::Data<AppState>,
    db: web::Data<Db>,
    req: HttpRequest,
    body: RawBody,
) -> Result<HttpResponse, ApiError> {
    limits::check(&state, &db, &req, Bucket::Licence).await?;
    let form = std::str::from_utf8(&body.bytes).unwrap_or_default();
    let locale = locale_of(&req, field(form, "lang").as_deref());
    let (licence, token) = match open(&state, &db, field(form, "t").as_deref(), locale).await? {
        Ok(opened) => opened,
        Err(refused) => return Ok(refused),
    };
    let links = Links::of(&state.settings);
    let page_value = field(form, "n").unwrap_or_default();
    let csrf = field(form, "csrf").unwrap_or_default();
    let page = async |status, notice| {
        seat_page(&state, &db, &licence, &token, locale, status, notice).await
    };
    if !body.form || !links.csrf_matches(&token, &page_value, &csrf) {
        return page(StatusCode::FORBIDDEN, Notice::FormExpired).await;
    }
    let Some(instance) = field(form, "instance")
        .and_then(|raw| instance_field(&raw).ok())
        .map(domain::licensing::InstanceId::into_string)
    else {
        return page(StatusCode::BAD_REQUEST, Notice::BadInstance).await;
    };
    let name = activations::list(&db, &licence.id)
        .await?
        .into_iter()
        .find(|a| a.instance_id == instance)
        .and_then(|a| a.instance_name)
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| {
            Texts { locale }
                .pick("Il computer senza nome", "The unnamed computer")
                .to_owned()
        });
    let max = state.settings.deactivations_per_30_days;
    let outcome =
        deactivations::deactivate(&db, &licence.id, &instance, None, max, state.clock.now())
            .await?;
    match outcome {
        Deactivated::Done(_) => {
            tracing::info!(licence_id = %licence.id, "seat released from the seat page");
            page(StatusCode::OK, Notice::Released(name)).await
        }
        Deactivated::NotFound | Deactivated::CallerNotActive => {
            page(StatusCode::NOT_FOUND, Notice::AlreadyReleased).await
        }
        Deactivated::Limited { retry_after_secs } => {
            let mut resp = page(
                StatusCode::TOO_MANY_REQUESTS,
                Notice::Limited(retry_after_secs),
            )
            .await?;
            if let Ok(v) = HeaderValue::from_str(&retry_after_secs.to_string()) {
                resp.headers_mut().insert(header::RETRY_AFTER, v);
            }
            Ok(resp)
        }
    }
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = SeatLinkRequest)]
pub(crate) struct LinkRequest {
    email: String,
    /// The language of the mail (`it` or `en`); `Accept-Language` when absent.
    #[serde(default)]
    lang: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = SeatLinkRequested)]
pub struct LinkRequested {
    /// Always true: the answer says nothing of whether the address bought a licence.
    requested: bool,
}

/// A plausible e-mail address, trimmed; `None` for anything else.
fn email_of(raw: &str) -> Option<String> {
    let email = raw.trim();
    let (local, domain) = email.rsplit_once('@')?;
    let plausible = email.len() <= MAX_EMAIL_LEN
        && !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !email.chars().any(|c| c.is_whitespace() || c.is_control());
    plausible.then(|| email.to_owned())
}

/// `POST /licence/manage/link {email}`: JSON answers JSON, a form answers a page.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn request_link(
    state: web::Data<AppState>,
    db: web::Data<Db>,
    req: HttpRequest,
    body: RawBody,
) -> Result<HttpResponse, ApiError> {
    let (email, chosen) = if body.form {
        let form = std::str::from_utf8(&body.bytes).unwrap_or_default();
        (
            field(form, "email").unwrap_or_default(),
            field(form, "lang"),
        )
    } else {
        let parsed: LinkRequest = parse_json(&body.bytes).map_err(ApiError::from)?;
        (parsed.email, parsed.lang)
    };
    let locale = locale_of(&req, chosen.as_deref());
    let t = Texts { locale };
    let counted = limits::check(&state, &db, &req, Bucket::SeatLink).await;
    let email = email_of(&email);
    if !body.form {
        counted?;
        let email =
            email.ok_or_else(|| ApiError::Validation("email: not an e-mail address".into()))?;
        mail_links(&state, &db, &email, locale).await?;
        return Ok(HttpResponse::Ok()
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .json(LinkRequested { requested: true }));
    }
    let back = Some(page_href(None, other(locale)));
    if let Err(ApiError::RateLimited { retry_after_secs }) = counted {
        let inner = format!(
            "<p class=\"error\" role=\"alert\">{}</p>\n    {}",
            escape(&match locale {
                Locale::It => format!(
                    "Troppe richieste da questa rete. Riprova tra {retry_after_secs} secondi."
                ),
                Locale::En => format!(
                    "Too many requests from this network. Try again in {retry_after_secs} seconds."
                ),
            }),
            link_form(&t)
        );
        let mut resp = html_page(
            StatusCode::TOO_MANY_REQUESTS,
            locale,
            t.pick("Gestisci la tua licenza", "Manage your licence"),
            &inner,
            back.as_deref(),
        );
        if let Ok(v) = HeaderValue::from_str(&retry_after_secs.to_string()) {
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
        return Ok(resp);
    }
    counted?;
    let Some(email) = email else {
        let inner = format!(
            "<p class=\"error\" role=\"alert\">{}</p>\n    {}",
            t.pick(
                "Scrivi un indirizzo e-mail valido.",
                "Enter a valid e-mail address."
            ),
            link_form(&t)
        );
        return Ok(html_page(
            StatusCode::BAD_REQUEST,
            locale,
            t.pick("Gestisci la tua licenza", "Manage your licence"),
            &inner,
            back.as_deref(),
        ));
    };
    mail_links(&state, &db, &email, locale).await?;
    let inner = format!(
        "<p class=\"notice\" role=\"status\">{}</p>",
        t.pick(
            "Se a questo indirizzo corrisponde una licenza, tra poco riceverai un'e-mail con il link per gestirla. Controlla anche la posta indesiderata.",
            "If a licence belongs to this address, an e-mail with the link to manage it is on its way. Look in the spam folder too.",
        )
    );
    Ok(html_page(
        StatusCode::OK,
        locale,
        t.pick("Controlla la posta", "Check your e-mail"),
        &inner,
        back.as_deref(),
    ))
}

/// Looks the address up, counts it, and queues the mail when it owns licences and is under its
/// hourly count; the same statements for any address, then the least time of the route.
async fn mail_links(
    state: &AppState,
    db: &Db,
    email: &str,
    locale: Locale,
) -> Result<(), ApiError> {
    let started = tokio::time::Instant::now();
    let links = Links::of(&state.settings);
    let now = state.clock.now();
    let owned = crate::repo::buyers::licences_of(db, email).await?;
    let bucket = format!("seat-mail:{}", links.address_key(email));
    let take = rate_limit::take(db, &bucket, MAILS_PER_ADDRESS_PER_HOUR, 3600, 1).await?;
    let allowed = matches!(take, Take::Granted { .. });
    let mail = mail::seat_links_email(&owned, links, locale, now);
    let queued = match mail {
        Some(mail) if allowed => {
            outbox::enqueue(db, &mail).await?;
            true
        }
        _ => {
            if !allowed {
                tracing::info!("seat links not mailed: the address's hourly count is spent");
            }
            false
        }
    };
    if queued {
        state.mail.wake();
    }
    tokio::time::sleep_until(started + LINK_REQUEST_MIN_TIME).await;
    Ok(())
}
