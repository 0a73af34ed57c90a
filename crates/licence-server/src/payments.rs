//! Lemon Squeezy webhook events: what each one means for our licences, applied in one
//! transaction together with the event's idempotency key.
//!
//! | Event | Effect |
//! |---|---|
//! | `order_created` (status `paid`) | creates the licence of the order (plan from the variant; Annual valid 365 days from the order) and queues the licence e-mail |
//! | `order_refunded` (fully refunded) | disables the licence of the order, status `refunded` |
//! | `subscription_created`, `subscription_updated`, `subscription_cancelled`, `subscription_resumed`, `subscription_expired`, `subscription_paused`, `subscription_unpaused` | set plan (from `variant_id`: plan changes arrive as `subscription_updated`), status and, when cancelled or expired, the end (`ends_at`); create the licence and its e-mail if the order's licence does not exist yet |
//! | `subscription_payment_refunded` (fully refunded) | disables the subscription's licence, status `refunded` |
//! | `subscription_payment_success`, `subscription_payment_failed`, `subscription_payment_recovered` | recorded only: the state change they imply arrives as `subscription_updated` |
//! | `license_key_created`, `license_key_updated` | recorded only: the provider's own licence keys are not used, ours are |
//! | `affiliate_activated` and any name not listed | recorded only, logged |
//!
//! An event whose variant is none of the four configured plans is answered 200, logged, and not
//! recorded, so that a redelivery after the configuration is fixed is processed.
//!
//! Idempotency: the key is `event name : resource type : resource id : resource updated_at`. A
//! redelivery of the same event carries the same key and finds it recorded; a concurrent one waits
//! on the unique index until the first transaction commits, then finds it recorded. Subscription
//! events older than the last one applied (by `updated_at`) are recorded and otherwise ignored.

use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::QueryResult;
use domain::licensing::{Plan, Status};
use serde_json::Value;
use sha2::Digest;

use crate::mail;
use crate::repo::LicenceId;
use crate::repo::licences::{self, LicenceRow, NewLicence, SubscriptionChange};
use crate::repo::{self, Conn, Db, DbError, events, outbox};
use crate::seat_links::Links;
use crate::settings::Variants;

/// A webhook event, checked for the fields its handling needs.
#[derive(Debug, Clone)]
pub struct Event {
    pub name: String,
    pub key: String,
    pub kind: Kind,
}

#[derive(Debug, Clone)]
pub enum Kind {
    OrderCreated(Order),
    OrderRefunded(Order),
    Subscription(Subscription),
    PaymentRefunded(Invoice),
    /// Known or unknown, nothing to change.
    Recorded,
}

#[derive(Debug, Clone)]
pub struct Customer {
    pub email: String,
    pub name: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Order {
    pub order_id: String,
    pub status: String,
    pub refunded: bool,
    pub variant_id: Option<u64>,
    pub customer: Option<Customer>,
    pub created_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone)]
pub struct Subscription {
    pub subscription_id: String,
    pub order_id: Option<String>,
    pub status: Option<Status>,
    pub raw_status: String,
    pub variant_id: Option<u64>,
    pub ends_at: Option<DateTime<Utc>>,
    pub updated_at: Option<DateTime<Utc>>,
    pub customer: Option<Customer>,
}

#[derive(Debug, Clone)]
pub struct Invoice {
    pub subscription_id: String,
    pub refunded: bool,
}

/// Subscription events that carry a subscription object.
const SUBSCRIPTION_EVENTS: [&str; 7] = [
    "subscription_created",
    "subscription_updated",
    "subscription_cancelled",
    "subscription_resumed",
    "subscription_expired",
    "subscription_paused",
    "subscription_unpaused",
];

/// Events acknowledged and recorded without any change.
pub const RECORDED_ONLY: [&str; 6] = [
    "subscription_payment_success",
    "subscription_payment_failed",
    "subscription_payment_recovered",
    "license_key_created",
    "license_key_updated",
    "affiliate_activated",
];

const MAX_ID_LEN: usize = 64;
const MAX_EMAIL_LEN: usize = 320;
const MAX_NAME_CHARS: usize = 255;
const MAX_KEY_LEN: usize = 191;

/// Reads an event from a verified body. `Err` names the field that is missing or unusable.
pub fn parse(body: &[u8]) -> Result<Event, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("malformed JSON: {e}"))?;
    let name = v
        .pointer("/meta/event_name")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty() && s.len() <= 64)
        .ok_or("meta.event_name: missing or not a string")?
        .to_owned();
    let data = v.get("data").ok_or("data: missing")?;
    let attrs = data.get("attributes").unwrap_or(&Value::Null);
    let id = id_of(data.get("id")).ok_or("data.id: missing or not an id")?;
    let updated = attrs
        .get("updated_at")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind_name = data.get("type").and_then(Value::as_str).unwrap_or("");
    let key = event_key(&name, kind_name, &id, updated);

    let kind = match name.as_str() {
        "order_created" | "order_refunded" => {
            let order = Order {
                order_id: id,
                status: attrs
                    .get("status")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
                refunded: attrs
                    .get("refunded")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
                variant_id: u64_of(attrs.get("variant_id"))
                    .or_else(|| u64_of(attrs.pointer("/first_order_item/variant_id"))),
                customer: customer(attrs)?,
                created_at: time_of(attrs.get("created_at")),
            };
            if name == "order_created" {
                Kind::OrderCreated(order)
            } else {
                Kind::OrderRefunded(order)
            }
        }
        n if SUBSCRIPTION_EVENTS.contains(&n) => {
            let raw_status = attrs
                .get("status")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            Kind::Subscription(Subscription {
                subscription_id: id,
                order_id: id_of(attrs.get("order_id")),
                status: raw_status.parse().ok(),
                raw_status,
                variant_id: u64_of(attrs.get("variant_id")),
                ends_at: time_of(attrs.get("ends_at")),
                updated_at: time_of(attrs.get("updated_at")),
                customer: customer(attrs)?,
            })
        }
        "subscription_payment_refunded" => Kind::PaymentRefunded(Invoice {
            subscription_id: id_of(attrs.get("subscription_id"))
                .ok_or("data.attributes.subscription_id: missing or not an id")?,
            refunded: attrs.get("refunded").and_then(Value::as_bool) == Some(true)
                || attrs.get("status").and_then(Value::as_str) == Some("refunded"),
        }),
        _ => Kind::Recorded,
    };
    Ok(Event { name, key, kind })
}

impl Event {
    /// The variant the event is about, when it is about one.
    pub fn variant_id(&self) -> Option<u64> {
        match &self.kind {
            Kind::OrderCreated(o) => o.variant_id,
            Kind::Subscription(s) => s.variant_id,
            Kind::OrderRefunded(_) | Kind::PaymentRefunded(_) | Kind::Recorded => None,
        }
    }

    /// Whether the event cannot be handled without knowing its plan.
    pub fn needs_plan(&self) -> bool {
        matches!(self.kind, Kind::OrderCreated(_) | Kind::Subscription(_))
    }
}

/// The plan of a variant id, if it is one of ours.
pub fn plan_of(variants: &Variants, variant_id: u64) -> Option<Plan> {
    [
        (variants.basic, Plan::Basic),
        (variants.pro, Plan::Pro),
        (variants.premium, Plan::Premium),
        (variants.annual, Plan::Annual),
    ]
    .into_iter()
    .find(|(id, _)| *id == variant_id)
    .map(|(_, plan)| plan)
}

fn event_key(name: &str, kind: &str, id: &str, updated: &str) -> String {
    let key = format!("{name}:{kind}:{id}:{updated}");
    if key.len() <= MAX_KEY_LEN {
        return key;
    }
    // Still unique, still bounded: names are short, the rest is hashed.
    let digest = sha2::Sha256::digest(key.as_bytes());
    format!("{name}:sha256:{}", crate::signing::to_hex(&digest))
}

fn id_of(v: Option<&Value>) -> Option<String> {
    let s = match v? {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    (!s.is_empty() && s.len() <= MAX_ID_LEN && s.chars().all(|c| c.is_ascii_graphic())).then_some(s)
}

fn u64_of(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

fn time_of(v: Option<&Value>) -> Option<DateTime<Utc>> {
    let s = v?.as_str()?;
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn customer(attrs: &Value) -> Result<Option<Customer>, String> {
    let Some(email) = attrs.get("user_email").and_then(Value::as_str) else {
        return Ok(None);
    };
    let email = email.trim();
    if email.is_empty() || email.len() > MAX_EMAIL_LEN || !email.contains('@') {
        return Err("data.attributes.user_email: not an e-mail address".into());
    }
    let name = attrs
        .get("user_name")
        .and_then(Value::as_str)
        .map(|n| n.trim().chars().take(MAX_NAME_CHARS).collect::<String>())
        .filter(|n| !n.is_empty());
    Ok(Some(Customer {
        email: email.to_owned(),
        name,
    }))
}

/// What processing did, for the log and the tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The key was already recorded.
    Duplicate,
    /// A licence was created and its e-mail queued.
    Created { licence_id: LicenceId },
    /// An existing licence changed.
    Updated { licence_id: LicenceId },
    /// Recorded; nothing to change.
    Recorded,
}

/// Applies `event` in one transaction with its key, running it again when it lost a race with a
/// different event about the same order (a deadlock or a duplicate order id).
pub async fn process(
    db: &Db,
    event: &Event,
    plan: Option<Plan>,
    links: Links<'_>,
    now: DateTime<Utc>,
) -> Result<Outcome, DbError> {
    let mut tries = 0;
    loop {
        tries += 1;
        let attempt = db
            .transaction(async |conn| {
                if !events::record(conn, &event.key, &event.name, now.naive_utc()).await? {
                    return Ok(Outcome::Duplicate);
                }
                let outcome = apply(conn, event, plan, links, now).await?;
                if let Outcome::Created { licence_id } | Outcome::Updated { licence_id } = &outcome
                {
                    events::link(conn, &event.key, licence_id).await?;
                }
                Ok(outcome)
            })
            .await;
        match attempt {
            Err(DbError::Query(e)) if tries < 5 && repo::is_retryable(&e) => {
                tracing::debug!(tries, "transaction conflicted; running it again");
            }
            other => return other,
        }
    }
}

async fn apply(
    conn: &mut Conn,
    event: &Event,
    plan: Option<Plan>,
    links: Links<'_>,
    now: DateTime<Utc>,
) -> QueryResult<Outcome> {
    match (&event.kind, plan) {
        (Kind::OrderCreated(order), Some(plan)) => {
            order_created(conn, order, plan, links, now).await
        }
        (Kind::Subscription(sub), Some(plan)) => subscription(conn, sub, plan, links, now).await,
        (Kind::OrderRefunded(order), _) if order.refunded || order.status == "refunded" => {
            let licence = licences::find_by_order_for_update(conn, &order.order_id).await?;
            if licence.is_none() {
                // The refund overtook its order: remembered, so the order makes no licence.
                licences::remember_refund(conn, &order.order_id, now.naive_utc()).await?;
                tracing::warn!("refund of an order not seen yet; remembered");
                return Ok(Outcome::Recorded);
            }
            refund(conn, licence, now).await
        }
        (Kind::PaymentRefunded(invoice), _) if invoice.refunded => {
            let licence =
                licences::find_by_subscription_for_update(conn, &invoice.subscription_id).await?;
            refund(conn, licence, now).await
        }
        _ => Ok(Outcome::Recorded),
    }
}

async fn order_created(
    conn: &mut Conn,
    order: &Order,
    plan: Plan,
    links: Links<'_>,
    now: DateTime<Utc>,
) -> QueryResult<Outcome> {
    if order.status != "paid" {
        tracing::info!(status = %order.status, "order not paid; no licence");
        return Ok(Outcome::Recorded);
    }
    if let Some(existing) = licences::find_by_order_for_update(conn, &order.order_id).await? {
        return Ok(Outcome::Updated {
            licence_id: existing.id,
        });
    }
    if licences::refunded_before(conn, &order.order_id).await? {
        tracing::info!("order already refunded; no licence");
        return Ok(Outcome::Recorded);
    }
    let Some(customer) = &order.customer else {
        tracing::warn!("paid order without a customer e-mail; no licence");
        return Ok(Outcome::Recorded);
    };
    let purchased = order.created_at.unwrap_or(now);
    let licence = licences::insert(
        conn,
        &NewLicence {
            id: repo::new_id().into(),
            license_key: repo::new_licence_key(),
            status: Status::Active.as_str().to_owned(),
            plan: plan.as_str().to_owned(),
            customer_email: customer.email.clone(),
            customer_name: customer.name.clone(),
            order_id: Some(order.order_id.clone()),
            subscription_id: None,
            variant_id: order.variant_id.map(|v| v.to_string()),
            subscription_synced_at: None,
            expires_at: plan.expiry_from(purchased).map(|t| t.naive_utc()),
        },
    )
    .await?;
    outbox::enqueue_on(conn, &mail::licence_email(&licence, Some(links), now)).await?;
    crate::repo::updates::remember_mailed_feed(conn, &licence.id, links.secret).await?;
    Ok(Outcome::Created {
        licence_id: licence.id,
    })
}

async fn subscription(
    conn: &mut Conn,
    sub: &Subscription,
    plan: Plan,
    links: Links<'_>,
    now: DateTime<Utc>,
) -> QueryResult<Outcome> {
    let Some(status) = sub.status else {
        tracing::warn!(status = %sub.raw_status, "unknown subscription status; nothing changed");
        return Ok(Outcome::Recorded);
    };
    let mut existing =
        licences::find_by_subscription_for_update(conn, &sub.subscription_id).await?;
    if existing.is_none()
        && let Some(order_id) = &sub.order_id
    {
        existing = licences::find_by_order_for_update(conn, order_id).await?;
    }
    let synced_at: Option<NaiveDateTime> = sub.updated_at.map(|t| t.naive_utc());
    let expires_at = match status {
        Status::Cancelled => sub.ends_at,
        Status::Expired => Some(sub.ends_at.unwrap_or(now)),
        _ => None,
    };
    match existing {
        Some(licence) => {
            if let (Some(seen), Some(this)) = (licence.subscription_synced_at, synced_at)
                && this < seen
            {
                tracing::info!("subscription event older than the state applied; ignored");
                return Ok(Outcome::Recorded);
            }
            licences::apply_subscription(
                conn,
                &licence.id,
                &SubscriptionChange {
                    plan: plan.as_str().to_owned(),
                    status: status.as_str().to_owned(),
                    subscription_id: Some(sub.subscription_id.clone()),
                    variant_id: sub.variant_id.map(|v| v.to_string()),
                    subscription_synced_at: synced_at.or(licence.subscription_synced_at),
                    expires_at: expires_at.map(|t| t.naive_utc()),
                    updated_at: now.naive_utc(),
                },
            )
            .await?;
            Ok(Outcome::Updated {
                licence_id: licence.id,
            })
        }
        None => {
            let Some(customer) = &sub.customer else {
                tracing::warn!("subscription without a customer e-mail; no licence");
                return Ok(Outcome::Recorded);
            };
            let licence = licences::insert(
                conn,
                &NewLicence {
                    id: repo::new_id().into(),
                    license_key: repo::new_licence_key(),
                    status: status.as_str().to_owned(),
                    plan: plan.as_str().to_owned(),
                    customer_email: customer.email.clone(),
                    customer_name: customer.name.clone(),
                    order_id: sub.order_id.clone(),
                    subscription_id: Some(sub.subscription_id.clone()),
                    variant_id: sub.variant_id.map(|v| v.to_string()),
                    subscription_synced_at: synced_at,
                    expires_at: expires_at.map(|t| t.naive_utc()),
                },
            )
            .await?;
            if licence.has_access(now) {
                outbox::enqueue_on(conn, &mail::licence_email(&licence, Some(links), now)).await?;
                crate::repo::updates::remember_mailed_feed(conn, &licence.id, links.secret).await?;
            }
            Ok(Outcome::Created {
                licence_id: licence.id,
            })
        }
    }
}

async fn refund(
    conn: &mut Conn,
    licence: Option<LicenceRow>,
    now: DateTime<Utc>,
) -> QueryResult<Outcome> {
    match licence {
        Some(l) => {
            licences::refund(conn, &l.id, now.naive_utc()).await?;
            Ok(Outcome::Updated { licence_id: l.id })
        }
        None => {
            tracing::warn!("refund for a purchase without a licence");
            Ok(Outcome::Recorded)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_bounded_and_distinct() {
        let a = event_key(
            "subscription_updated",
            "subscriptions",
            "1",
            "2026-01-01T00:00:00Z",
        );
        let b = event_key(
            "subscription_updated",
            "subscriptions",
            "1",
            "2026-01-02T00:00:00Z",
        );
        assert_ne!(a, b);
        let long = event_key("x", &"t".repeat(300), "1", "");
        assert!(long.len() <= MAX_KEY_LEN);
    }

    #[test]
    fn parse_reads_what_it_needs_and_names_what_is_missing() {
        let body = br#"{"meta":{"event_name":"order_created"},"data":{"type":"orders","id":"77",
            "attributes":{"status":"paid","user_email":"a@b.example","user_name":"A",
            "first_order_item":{"variant_id":1004},"created_at":"2026-01-01T10:00:00.000000Z"}}}"#;
        let e = parse(body).expect("valid");
        assert_eq!(e.variant_id(), Some(1004));
        assert!(e.needs_plan());
        assert!(
            parse(br#"{"data":{"id":"1"}}"#)
                .unwrap_err()
                .starts_with("meta.event_name")
        );
        assert!(parse(b"[").unwrap_err().starts_with("malformed"));
        let unknown = parse(br#"{"meta":{"event_name":"brand_new"},"data":{"id":5}}"#)
            .expect("unknown names are accepted");
        assert!(matches!(unknown.kind, Kind::Recorded));
    }
}
