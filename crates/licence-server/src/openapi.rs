//! The OpenAPI 3.1 document of the licence server, served at `/openapi.json` and rendered at
//! `/docs`. Bodies come from the handlers' own types; the operations are declared here, and a
//! test holds them and the mounted router to each other.

// The operation functions exist only to carry their declarations.
#![allow(dead_code)]

use serde_json::json;
use service_kit::http::ErrorBody;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi, PartialSchema, ToSchema};

use crate::lease::PublicKey;
use crate::routes::KeyAndInstance;
use crate::routes::activate::{Answer as Activated, Body as Activate, Instance};
use crate::routes::activations::{Activation, Answer as Activations};
use crate::routes::deactivate::{Answer as Deactivated, Body as Deactivate};
use crate::routes::download::Query as DownloadQuery;
use crate::routes::latest::{Answer as Release, File as ReleaseFile};
use crate::routes::public_keys::Answer as PublicKeys;
use crate::routes::updates::{TauriAnswer as TauriUpdate, TauriQuery};
use crate::routes::usage_status::Answer as UsageStatus;
use crate::routes::validate::Answer as Validated;
use crate::routes::webhook::Answer as Received;
use crate::wire::{IssuedLease, IssuedToken, LicenceView, UsageReport};

/// 403 of validate: the error body plus `valid: false`, which the desktop app reads.
#[derive(ToSchema)]
struct Invalid {
    code: String,
    message: String,
    valid: bool,
}

/// 429 of consume: the error body plus the usage fields.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
struct QuotaExceeded {
    code: String,
    message: String,
    #[serde(flatten)]
    usage: UsageReport,
}

fn licence_example() -> serde_json::Value {
    json!({"key": "DGN-7Q4M-K2XP-9HRT", "status": "active", "plan": "pro",
        "features": ["audio", "video", "export"], "dailyQuota": 30, "activationLimit": 3,
        "activationUsage": 1, "expiresAt": null})
}

/// `POST /api/license/activate`.
#[utoipa::path(post, path = "/api/license/activate", tag = "licences",
    request_body(content = Activate, description = "snake_case twins (`license_key`, …) are accepted too.",
        example = json!({"licenseKey": "DGN-7Q4M-K2XP-9HRT", "instanceId": "a1b2c3d4", "instanceName": "Studio iMac"})),
    responses(
        (status = 200, description = "Activated; the same instanceId again reuses its seat.", body = Activated,
            example = json!({"activated": true, "token": "eyJhbGciOiJIUzI1NiIsImtpZCI6ImsxIn0.e30.sig",
                "tokenExpiresAt": "2026-11-30T08:00:00Z", "lease": "eyJhbGciOiJFZERTQSIsImtpZCI6ImsxIn0.eyJzdWIiOiI0MiIsImlpZCI6ImExYjJjM2Q0In0.c2ln",
                "leaseExpiresAt": "2026-11-30T08:00:00Z", "instance": {"id": "a1b2c3d4", "name": "Studio iMac"},
                "license": licence_example()})),
        (status = 400, description = "Missing or malformed fields.", body = ErrorBody,
            example = json!({"code": "VALIDATION_ERROR", "message": "missing field `licenseKey`"})),
        (status = 403, description = "The licence is not active.", body = ErrorBody,
            example = json!({"code": "LICENSE_INACTIVE", "message": "this licence is not active"})),
        (status = 404, description = "No such licence key.", body = ErrorBody,
            example = json!({"code": "LICENSE_NOT_FOUND", "message": "no licence with this key"})),
        (status = 409, description = "Every seat is taken.", body = ErrorBody,
            example = json!({"code": "ACTIVATION_LIMIT_REACHED", "message": "this licence is active on 3 installations already"})),
    ))]
fn activate() {}

/// `POST /api/license/validate`: with the Bearer token, or with the key and instance id.
#[utoipa::path(post, path = "/api/license/validate", tag = "licences",
    request_body(content = Option<KeyAndInstance>, description = "Empty when the Bearer token is sent.",
        example = json!({"licenseKey": "DGN-7Q4M-K2XP-9HRT", "instanceId": "a1b2c3d4"})),
    security((), ("licence_token" = [])),
    responses(
        (status = 200, description = "Valid; a fresh token.", body = Validated,
            example = json!({"valid": true, "token": "eyJhbGciOiJIUzI1NiIsImtpZCI6ImsxIn0.e30.sig",
                "tokenExpiresAt": "2026-11-30T08:00:00Z", "lease": "eyJhbGciOiJFZERTQSIsImtpZCI6ImsxIn0.eyJzdWIiOiI0MiIsImlpZCI6ImExYjJjM2Q0In0.c2ln",
                "leaseExpiresAt": "2026-11-30T08:00:00Z", "license": licence_example()})),
        (status = 400, description = "Malformed body.", body = ErrorBody,
            example = json!({"code": "VALIDATION_ERROR", "message": "instanceId: must be 1 to 191 printable characters"})),
        (status = 401, description = "No, an expired or a forged token.", body = ErrorBody,
            example = json!({"code": "INVALID_TOKEN", "message": "the licence token is missing, expired or invalid"})),
        (status = 403, description = "The licence is inactive, or this installation no longer holds a seat.",
            body = Invalid, example = json!({"code": "INSTANCE_NOT_ACTIVE", "message": "this installation is not activated", "valid": false})),
        (status = 404, description = "No such licence key.", body = ErrorBody,
            example = json!({"code": "LICENSE_NOT_FOUND", "message": "no licence with this key"})),
    ))]
fn validate() {}

/// `POST /api/license/deactivate`: frees an installation's seat.
#[utoipa::path(post, path = "/api/license/deactivate", tag = "licences",
    request_body(content = Option<Deactivate>,
        description = "With the Bearer token: empty (this installation) or any `instanceId` of the same licence; without: the key and the instance id.",
        example = json!({"licenseKey": "DGN-7Q4M-K2XP-9HRT", "instanceId": "a1b2c3d4"})),
    security((), ("licence_token" = [])),
    responses(
        (status = 200, description = "Deactivated.", body = Deactivated,
            example = json!({"deactivated": true, "license": licence_example()})),
        (status = 400, description = "Malformed body.", body = ErrorBody,
            example = json!({"code": "VALIDATION_ERROR", "message": "missing field `instanceId`"})),
        (status = 401, description = "No, an expired or a forged token.", body = ErrorBody,
            example = json!({"code": "INVALID_TOKEN", "message": "the licence token is missing, expired or invalid"})),
        (status = 404, description = "No such installation of this licence.", body = ErrorBody,
            example = json!({"code": "INSTANCE_NOT_FOUND", "message": "no such installation"})),
        (status = 429, description = "More deactivations in 30 days than the licence allows.", body = ErrorBody,
            headers(("Retry-After" = u32, description = "Seconds until one more is allowed")),
            example = json!({"code": "DEACTIVATION_LIMIT_REACHED", "message": "at most 3 deactivations per licence in 30 days"})),
    ))]
fn deactivate() {}

/// `GET /api/license/activations`: the installations of the token's licence.
#[utoipa::path(get, path = "/api/license/activations", tag = "licences",
    security(("licence_token" = [])),
    responses(
        (status = 200, description = "The installations holding a seat.", body = Activations,
            example = json!({"activations": [{"instanceId": "a1b2c3d4", "name": "Studio iMac",
                "createdAt": "2026-11-01T08:00:00Z", "lastValidatedAt": "2026-11-23T08:00:00Z", "current": true}],
                "sparkleFeed": "https://licences.example.com/api/updates/sparkle/3q2-7wQx1mYpNfB0cV9kLr4sTz8uWa6eHdJiGoKbXyE.xml"})),
        (status = 401, description = "No, an expired or a forged token.", body = ErrorBody,
            example = json!({"code": "INVALID_TOKEN", "message": "the licence token is missing, expired or invalid"})),
        (status = 403, description = "The licence is inactive or this installation lost its seat.", body = Invalid,
            example = json!({"code": "INSTANCE_NOT_ACTIVE", "message": "this installation is not activated", "valid": false})),
    ))]
fn activations() {}

/// `GET /api/license/public-keys`: the Ed25519 keys that verify leases and answer signatures.
#[utoipa::path(get, path = "/api/license/public-keys", tag = "licences",
    responses((status = 200, description = "The verification keys as JSON Web Keys.", body = PublicKeys,
        example = json!({"keys": [{"kid": "k1", "kty": "OKP", "alg": "EdDSA", "crv": "Ed25519", "use": "sig",
            "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}))))]
fn public_keys() {}

/// `GET /api/latest`: the latest release; download addresses only with a valid token.
#[utoipa::path(get, path = "/api/latest", tag = "releases",
    security((), ("licence_token" = [])),
    responses(
        (status = 200, description = "The release manifest with sizes and checksums.", body = Release,
            example = json!({"version": "2.4.0", "pubDate": "2026-11-20T10:00:00Z", "notes": "Correzioni",
                "licensed": true, "files": [{"platform": "darwin-aarch64", "name": "app-2.4.0.dmg",
                "size": 48213344, "sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
                "url": "https://licences.example.com/api/download?file=app-2.4.0.dmg&expires=1795000000&sig=abc"}]})),
        (status = 503, description = "The release manifest cannot be read.", body = ErrorBody,
            example = json!({"code": "RELEASES_UNAVAILABLE", "message": "the release manifest is unavailable"})),
    ))]
fn latest() {}

/// `GET /api/download`: a release file by its signed address (Range and ETag supported).
#[utoipa::path(get, path = "/api/download", tag = "releases", params(DownloadQuery),
    responses(
        (status = 200, description = "The file.", content_type = "application/octet-stream", body = Vec<u8>),
        (status = 206, description = "The requested range; several ranges (up to 1,000) as `multipart/byteranges`, parts in the order asked.", content_type = "application/octet-stream", body = Vec<u8>),
        (status = 304, description = "Unchanged (`If-None-Match`)."),
        (status = 403, description = "A bad or expired signature.", body = ErrorBody,
            example = json!({"code": "INVALID_SIGNATURE", "message": "the download address is invalid or has expired"})),
        (status = 404, description = "The file is not part of the release.", body = ErrorBody,
            example = json!({"code": "NOT_FOUND", "message": "no such file"})),
        (status = 416, description = "The range lies outside the file.", body = ErrorBody,
            example = json!({"code": "RANGE_NOT_SATISFIABLE", "message": "the requested range is not satisfiable"})),
    ))]
fn download() {}

/// `HEAD /api/download`: the headers of the same answer without the body, so that a client can
/// learn the size and `ETag` before resuming with `Range`.
#[utoipa::path(head, path = "/api/download", tag = "releases", params(DownloadQuery),
    responses(
        (status = 200, description = "The file's headers (`Content-Length`, `ETag`, `Accept-Ranges`)."),
        (status = 206, description = "The requested range's headers."),
        (status = 304, description = "Unchanged (`If-None-Match`)."),
        (status = 403, description = "A bad or expired signature."),
        (status = 404, description = "The file is not part of the release."),
        (status = 416, description = "The range lies outside the file."),
    ))]
fn download_head() {}

/// `GET /api/download.blockmap`: the blockmap electron-updater asks for next to a file.
#[utoipa::path(get, path = "/api/download.blockmap", tag = "updates", params(DownloadQuery),
    responses(
        (status = 200, description = "`<file>.blockmap` from the builds directory, for the file the address is signed for.",
            content_type = "application/octet-stream", body = Vec<u8>),
        (status = 403, description = "A bad or expired signature.", body = ErrorBody,
            example = json!({"code": "INVALID_SIGNATURE", "message": "the download address is invalid or has expired"})),
        (status = 404, description = "The file is not part of a release, or has no blockmap.", body = ErrorBody,
            example = json!({"code": "NOT_FOUND", "message": "no such file"})),
    ))]
fn download_blockmap() {}

/// `GET /api/updates/tauri/{target}/{arch}/{current_version}`: Tauri's dynamic update server.
#[utoipa::path(get, path = "/api/updates/tauri/{target}/{arch}/{current_version}", tag = "updates",
    security(("licence_token" = [])),
    params(
        ("target" = String, Path, description = "`linux`, `windows` or `darwin` (Tauri's `{{target}}`)"),
        ("arch" = String, Path, description = "`x86_64`, `i686`, `aarch64` or `armv7` (Tauri's `{{arch}}`)"),
        ("current_version" = String, Path, description = "The running version, semver (Tauri's `{{current_version}}`)"),
        TauriQuery,
    ),
    responses(
        (status = 200, description = "The newest release offered to the licence, newer than the running one, with a Tauri signature for the platform.",
            body = TauriUpdate, example = json!({"version": "2.0.0", "notes": "New editor", "pub_date": "2026-11-20T10:00:00Z",
                "url": "https://licences.example.com/api/download?file=app_2.0.0_amd64.AppImage&expires=1795000000&sig=abc",
                "signature": "dW50cnVzdGVkIGNvbW1lbnQ6IHNpZ25hdHVyZSBmcm9tIHRhdXJpIHNlY3JldCBrZXkK"})),
        (status = 204, description = "Nothing newer is offered."),
        (status = 400, description = "An unknown target or architecture, a version that is not semver, a bad bundle.", body = ErrorBody,
            example = json!({"code": "VALIDATION_ERROR", "message": "current_version: a semantic version (1.2.3)"})),
        (status = 401, description = "No, an expired or a forged token.", body = ErrorBody,
            example = json!({"code": "INVALID_TOKEN", "message": "the licence token is missing, expired or invalid"})),
        (status = 403, description = "The licence is offered nothing (refunded, switched off), or this installation lost its seat.", body = Invalid,
            example = json!({"code": "LICENSE_INACTIVE", "message": "the licence does not grant access", "valid": false})),
        (status = 503, description = "The release description cannot be read.", body = ErrorBody,
            example = json!({"code": "RELEASES_UNAVAILABLE", "message": "the release description is not available"})),
    ))]
fn updates_tauri() {}

/// `GET /api/updates/electron/{file}`: electron-updater's generic provider.
#[utoipa::path(get, path = "/api/updates/electron/{file}", tag = "updates",
    security(("licence_token" = [])),
    params(("file" = String, Path, description = "`latest.yml` (Windows), `latest-mac.yml`, `latest-linux.yml`, `latest-linux-arm64.yml`, `latest-linux-armv7l.yml`, or a `beta` twin (`beta-mac.yml`, …), which answers the same: the licence's channel decides.")),
    responses(
        (status = 200, description = "electron-builder's `UpdateInfo` of the newest release offered for the platform; the file the platform installs first.",
            content_type = "text/yaml", body = String,
            example = json!("version: \"2.0.0\"\nfiles:\n  - url: \"https://licences.example.com/api/download?file=app_2.0.0_amd64.AppImage&expires=1795000000&sig=abc\"\n    sha512: \"kX1p…==\"\n    size: 94371840\npath: \"https://licences.example.com/api/download?file=app_2.0.0_amd64.AppImage&expires=1795000000&sig=abc\"\nsha512: \"kX1p…==\"\nreleaseDate: \"2026-11-20T10:00:00.000Z\"\nreleaseNotes: \"New editor\"\n")),
        (status = 401, description = "No, an expired or a forged token.", body = ErrorBody,
            example = json!({"code": "INVALID_TOKEN", "message": "the licence token is missing, expired or invalid"})),
        (status = 403, description = "The licence is offered nothing, or this installation lost its seat.", body = Invalid,
            example = json!({"code": "LICENSE_INACTIVE", "message": "the licence does not grant access", "valid": false})),
        (status = 404, description = "Not a channel file name, or no release is offered for the platform.", body = ErrorBody,
            example = json!({"code": "NOT_FOUND", "message": "not found"})),
        (status = 503, description = "The release description cannot be read.", body = ErrorBody,
            example = json!({"code": "RELEASES_UNAVAILABLE", "message": "the release description is not available"})),
    ))]
fn updates_electron() {}

/// `GET /api/updates/sparkle/{feed}`: the Sparkle appcast of one licence.
#[utoipa::path(get, path = "/api/updates/sparkle/{feed}", tag = "updates",
    params(("feed" = String, Path, description = "`<token>.xml`, the token an HMAC of the licence id, as the licence e-mail and `sparkleFeed` of the activations show it.")),
    responses(
        (status = 200, description = "An RSS appcast, one item per release offered to the licence with a macOS build: `sparkle:version`, `sparkle:shortVersionString`, `pubDate`, `sparkle:channel` for beta releases only, and an `enclosure` with the signed `url`, `length`, `type` and `sparkle:edSignature`.",
            content_type = "application/rss+xml", body = String),
        (status = 403, description = "The licence is offered nothing (refunded, switched off).", body = Invalid,
            example = json!({"code": "LICENSE_INACTIVE", "message": "the licence does not grant access", "valid": false})),
        (status = 404, description = "No licence has this feed.", body = ErrorBody,
            example = json!({"code": "NOT_FOUND", "message": "not found"})),
        (status = 503, description = "The release description cannot be read.", body = ErrorBody,
            example = json!({"code": "RELEASES_UNAVAILABLE", "message": "the release description is not available"})),
    ))]
fn updates_sparkle() {}

/// `POST /api/webhook/lemonsqueezy`: the payment provider's events, signed with `X-Signature`.
#[utoipa::path(post, path = "/api/webhook/lemonsqueezy", tag = "payments",
    params(("X-Signature" = String, Header, description = "Hex HMAC-SHA256 of the raw body with the webhook secret")),
    request_body(content = Object, description = "The event as Lemon Squeezy sends it.",
        example = json!({"meta": {"event_name": "order_created"}, "data": {"id": "1", "attributes": {
            "first_order_item": {"variant_id": 1002}, "user_email": "buyer@example.com",
            "user_name": "Buyer", "status": "paid"}}})),
    responses(
        (status = 200, description = "Received (also for events and variants that change nothing).", body = Received,
            example = json!({"received": true})),
        (status = 400, description = "A signed body that is not an event.", body = ErrorBody,
            example = json!({"code": "VALIDATION_ERROR", "message": "meta.event_name is missing"})),
        (status = 401, description = "A bad or missing signature.", body = ErrorBody,
            example = json!({"code": "INVALID_SIGNATURE", "message": "the webhook signature does not match"})),
    ))]
fn webhook() {}

/// `POST /api/usage/consume`: uses one unit of today's quota.
#[utoipa::path(post, path = "/api/usage/consume", tag = "usage",
    security(("licence_token" = [])),
    params(("Idempotency-Key" = Option<String>, Header,
        description = "Up to 64 characters: the same key on the same licence and day answers the first result again and consumes nothing more")),
    responses(
        (status = 200, description = "Consumed.", body = UsageReport,
            example = json!({"plan": "pro", "used": 4, "limit": 30, "remaining": 26, "resetsAt": "2026-11-23T23:00:00Z"})),
        (status = 401, description = "No, an expired or a forged token.", body = ErrorBody,
            example = json!({"code": "INVALID_TOKEN", "message": "the licence token is missing, expired or invalid"})),
        (status = 429, description = "Today's quota is used up.", body = QuotaExceeded,
            headers(("Retry-After" = u32, description = "Seconds until the quota resets")),
            example = json!({"code": "DAILY_QUOTA_EXCEEDED", "message": "the daily quota is used up",
                "plan": "basic", "used": 10, "limit": 10, "remaining": 0, "resetsAt": "2026-11-23T23:00:00Z"})),
    ))]
fn usage_consume() {}

/// `GET /api/usage/status`.
#[utoipa::path(get, path = "/api/usage/status", tag = "usage",
    security(("licence_token" = [])),
    responses(
        (status = 200, description = "Today's usage and the plan's features.", body = UsageStatus,
            example = json!({"features": ["audio"], "plan": "basic", "used": 3, "limit": 10, "remaining": 7,
                "resetsAt": "2026-11-23T23:00:00Z"})),
        (status = 401, description = "No, an expired or a forged token.", body = ErrorBody,
            example = json!({"code": "INVALID_TOKEN", "message": "the licence token is missing, expired or invalid"})),
    ))]
fn usage_status() {}

/// `GET /api/health`: the historical name of `/ready`.
#[utoipa::path(get, path = "/api/health", tag = "operations",
    responses(
        (status = 200, description = "The database answers.", body = service_kit::openapi::ProbeStatus,
            example = json!({"status": "ready"})),
        (status = 503, description = "The database cannot be reached.", body = ErrorBody,
            example = json!({"code": "DATABASE_UNAVAILABLE", "message": "the database cannot be reached"})),
    ))]
fn api_health() {}

/// `GET /licence/manage?t=&lang=`: the seat page a buyer opens from the licence e-mail.
#[utoipa::path(get, path = "/licence/manage", tag = "seats",
    params(
        ("t" = Option<String>, Query, description = "The signed token of the mailed link (valid 30 days). Without it, the page asks for links by e-mail."),
        ("lang" = Option<String>, Query, description = "`it` or `en`; `Accept-Language` when absent, Italian by default."),
    ),
    responses(
        (status = 200, description = "HTML without script: the installations (name, activated, last seen), each with a release form carrying a CSRF value.", content_type = "text/html"),
        (status = 403, description = "HTML: a forged link, or one whose licence no longer has the mailed address; the form that asks for a new one.", content_type = "text/html"),
        (status = 410, description = "HTML: an expired link; the form that asks for a new one.", content_type = "text/html"),
        (status = 429, description = "Too many requests from this client.", body = ErrorBody,
            example = json!({"code": "RATE_LIMITED", "message": "too many requests from this address; try again later"})),
    ))]
fn seat_page() {}

/// `POST /licence/manage/release`: the release form of the seat page.
#[utoipa::path(post, path = "/licence/manage/release", tag = "seats",
    request_body(content_type = "application/x-www-form-urlencoded",
        description = "`t` (the link's token), `n` and `csrf` (the page's values), `instance` (the installation), `lang`."),
    responses(
        (status = 200, description = "HTML: the seat is released; the page again.", content_type = "text/html"),
        (status = 400, description = "HTML: no usable installation id.", content_type = "text/html"),
        (status = 403, description = "HTML: a forged link, or a CSRF value that is not the page's.", content_type = "text/html"),
        (status = 404, description = "HTML: the installation no longer holds a seat.", content_type = "text/html"),
        (status = 410, description = "HTML: an expired link.", content_type = "text/html"),
        (status = 429, description = "HTML with `Retry-After`: `LICENCE_DEACTIVATIONS_PER_30_DAYS` seats were released in the last 30 days (the deactivation limit of the API), or the client's rate limit.", content_type = "text/html"),
    ))]
fn seat_release() {}

/// `POST /licence/manage/link`: mails fresh seat links for every licence of the address.
#[utoipa::path(post, path = "/licence/manage/link", tag = "seats",
    request_body(content = crate::routes::manage::LinkRequest,
        description = "JSON, or the page's form (`email`, `lang`), which is answered with a page.",
        example = json!({"email": "buyer@example.com", "lang": "en"})),
    responses(
        (status = 200, description = "The same answer, after the same time, for any address; a mail goes out only to an address with licences, at most 3 an hour.",
            body = crate::routes::manage::LinkRequested, example = json!({"requested": true})),
        (status = 400, description = "Not an e-mail address, or other fields.", body = ErrorBody,
            example = json!({"code": "VALIDATION_ERROR", "message": "email: not an e-mail address"})),
        (status = 429, description = "Too many requests from this client.", body = ErrorBody,
            example = json!({"code": "RATE_LIMITED", "message": "too many requests from this address; try again later"})),
    ))]
fn seat_link() {}

/// The optional `Licence-Nonce` request header of every signed route (contract section 12).
fn nonce_parameter() -> utoipa::openapi::path::Parameter {
    use utoipa::openapi::path::{ParameterBuilder, ParameterIn};
    use utoipa::openapi::{ObjectBuilder, Required, Type};
    let schema = ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(*crate::lease::NONCE_LENGTH.start()))
        .max_length(Some(*crate::lease::NONCE_LENGTH.end()))
        .pattern(Some("^[A-Za-z0-9_-]{16,64}$"));
    ParameterBuilder::new()
        .name("Licence-Nonce")
        .parameter_in(ParameterIn::Header)
        .required(Required::False)
        .description(Some(
            "A fresh random value per request (16 to 64 base64url characters, else 400 `VALIDATION_ERROR`): \
             the answer's `Licence-Signature` then covers and names it, so that the answer cannot be replayed to another request",
        ))
        .schema(Some(schema))
        .build()
}

struct Shared;

impl Modify for Shared {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "licence_token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .description(Some(
                        "The token that activate and validate answer (HS256, header `kid`).",
                    ))
                    .build(),
            ),
        );
        // Every answer of these routes is signed (contract section 7).
        let signed = |p: &str| {
            p.starts_with("/api/license/") || p == "/api/latest" || p.starts_with("/api/usage/")
        };
        for (_, op) in service_kit::openapi::operations_mut(doc, signed) {
            op.parameters
                .get_or_insert_with(Vec::new)
                .push(nonce_parameter());
            for response in op.responses.responses.values_mut() {
                if let utoipa::openapi::RefOr::T(response) = response {
                    response.headers.insert(
                        "Licence-Signature".into(),
                        utoipa::openapi::HeaderBuilder::new()
                            .schema(String::schema())
                            .description(Some(
                                "`kid=\"…\", alg=\"ed25519\", sig=\"<base64url>\"` over `<method> <path>\\n<Date>\\n<base64url sha256 of the body>`; \
                                 when the request sent `Licence-Nonce`, `kid=\"…\", alg=\"ed25519\", nonce=\"…\", sig=\"<base64url>\"` over \
                                 `<method> <path>\\n<Date>\\n<nonce>\\n<base64url sha256 of the body>`",
                            ))
                            .build(),
                    );
                }
            }
        }
        service_kit::openapi::add_default_error(doc, |path| path.starts_with("/api/"));
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "licence-server",
        description = "Licences of the desktop app: activation, validation and deactivation of \
            installations, daily usage quotas, release downloads and the payment provider's webhook. \
            Bodies accept camelCase and the snake_case twin. Every error is `{code, message}`."
    ),
    paths(activate, validate, deactivate, activations, public_keys, latest, download, download_head, download_blockmap, updates_tauri, updates_electron, updates_sparkle, webhook, usage_consume, usage_status, api_health, seat_page, seat_release, seat_link),
    components(schemas(LicenceView, IssuedToken, IssuedLease, Instance, ReleaseFile, Activation, PublicKey)),
    modifiers(&Shared),
    tags(
        (name = "licences", description = "Activating, validating and deactivating installations."),
        (name = "usage", description = "The daily quota."),
        (name = "releases", description = "The latest release and its downloads."),
        (name = "updates", description = "The feeds of the desktop apps' updaters: Tauri, electron-updater, Sparkle."),
        (name = "payments", description = "The payment provider's events."),
        (name = "seats", description = "The seat page buyers open from their e-mail (HTML)."),
        (name = "operations", description = "Probes and this document."),
    )
)]
struct LicenceServer;

/// The complete document: the licence server's routes plus the probes and documents every
/// service has.
pub fn document() -> utoipa::openapi::OpenApi {
    let mut doc = service_kit::openapi::complete(LicenceServer::openapi());
    doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
    doc
}

#[cfg(test)]
mod tests {
    /// The names of the header parameters of `method path` in the document.
    fn headers_of(path: &str, method: &str) -> Vec<String> {
        let doc = serde_json::to_value(super::document()).unwrap_or_default();
        doc["paths"][path][method]["parameters"]
            .as_array()
            .map(|ps| {
                ps.iter()
                    .filter(|p| p["in"] == "header")
                    .filter_map(|p| p["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn signed_routes_document_the_nonce_header() {
        for (path, method) in [
            ("/api/license/activate", "post"),
            ("/api/license/validate", "post"),
            ("/api/usage/consume", "post"),
            ("/api/usage/status", "get"),
            ("/api/latest", "get"),
        ] {
            assert!(
                headers_of(path, method)
                    .iter()
                    .any(|h| h == "Licence-Nonce"),
                "{method} {path}"
            );
        }
        assert!(
            !headers_of("/api/download", "get")
                .iter()
                .any(|h| h == "Licence-Nonce")
        );
    }
}
