use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use licence_client::{LicenceClient, PublicKey};
use licence_server::clock::{Clock, ManualClock};
use licence_server::mail::MailerOptions;
use licence_server::repo::licences::{LicenceRow, NewLicence};
use licence_server::{Application, Options, Settings};
use serde_json::{Value, json};
use service_kit::Env;
use sha2::Digest;
use testkit::mariadb::TestMariaDb;
use testkit::proxy::TcpProxy;
use testkit::smtp::SmtpServer;
use testkit::stack::ScratchDir;

pub const KEY: &str = "test-signing-key-0123456789abcdef-0123";
/// The Ed25519 seed of the test signing key `ed1`, and another one no client trusts.
pub const SIGNING_SEED: &str = "lq1Y0hzkQmQ8w2o3nQXGJ4n9yQjY1b3cZ5t1dW8eQeE=";
pub const OTHER_SEED: &str = "8J7cN2vQ4kL1pX9sR3tY6uW0zA5bC8dE1fG4hJ7kM0o=";
/// Signs download links; every secret of a service has its own value.
pub const DOWNLOAD_KEY: &str = "test-download-key-0123456789abcdef-0123";
pub const WEBHOOK_SECRET: &str = "webhook-secret-0123456789";
pub const VARIANT_BASIC: u64 = 1001;
pub const VARIANT_PRO: u64 = 1002;
pub const VARIANT_PREMIUM: u64 = 1003;
pub const VARIANT_ANNUAL: u64 = 1004;

/// The release files of every test's builds directory.
pub const MAC_BUILD: &str = "App-1.8.0.dmg";
pub const WIN_BUILD: &str = "App Setup 1.8.0.exe";
/// In the builds directory but not in the manifest.
pub const UNLISTED: &str = "App-1.7.0.dmg";
/// Next to the builds directory, outside it.
pub const OUTSIDE: &str = "outside-secret.txt";

/// The settings every test starts from, with the database at `database_url`.
pub fn base_env(database_url: &str, builds_dir: &str) -> Vec<(String, String)> {
    [
        ("DATABASE_URL", database_url),
        ("DATABASE_POOL_SIZE", "8"),
        ("LISTEN_ADDR", "127.0.0.1:0"),
        ("PUBLIC_BASE_URL", "http://127.0.0.1:8083"),
        ("LICENCE_JWT_KEYS", &format!("k1:{KEY}")),
        ("DOWNLOAD_SIGNING_SECRET", DOWNLOAD_KEY),
        ("BUILDS_DIR", builds_dir),
        ("PAYMENT_WEBHOOK_SECRET", WEBHOOK_SECRET),
        ("PAYMENT_VARIANT_BASIC", "1001"),
        ("PAYMENT_VARIANT_PRO", "1002"),
        ("PAYMENT_VARIANT_PREMIUM", "1003"),
        ("PAYMENT_VARIANT_ANNUAL", "1004"),
        ("SMTP_URL", "smtp://127.0.0.1:2525"),
        ("MAIL_FROM", "Licences <licences@example.com>"),
        ("LICENCE_SIGNING_KEYS", &format!("ed1:{SIGNING_SEED}")),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect()
}

/// Mail timings short enough for a test to watch a retry happen.
pub fn quick_mailer() -> MailerOptions {
    MailerOptions {
        poll_interval: Duration::from_millis(100),
        retry_base: Duration::from_millis(200),
        retry_max: Duration::from_secs(1),
        lease: Duration::from_secs(10),
        smtp_timeout: Duration::from_secs(3),
        ..MailerOptions::default()
    }
}

/// A running licence-server on a fresh, migrated database reached through a cuttable proxy, with
/// a real SMTP server, a builds directory holding a release, and a clock the test controls.
pub struct TestApp {
    pub base: String,
    pub proxy: TcpProxy,
    pub db: TestMariaDb,
    pub smtp: SmtpServer,
    pub builds: ScratchDir,
    pub clock: Arc<ManualClock>,
    pub client: reqwest::Client,
    database_url: String,
    outside: std::path::PathBuf,
}

pub async fn spawn_app() -> TestApp {
    spawn_app_at(Utc::now()).await
}

/// The same, with the application's clock standing at `now`.
pub async fn spawn_app_at(now: DateTime<Utc>) -> TestApp {
    spawn_app_with(now, quick_mailer()).await
}

/// The same, with the sender's timings `mailer`.
pub async fn spawn_app_with(now: DateTime<Utc>, mailer: MailerOptions) -> TestApp {
    let db = TestMariaDb::migrated(licence_server::db::migrate);
    let upstream = testkit::socket_addr_of(db.url()).expect("database address");
    let proxy = TcpProxy::start(upstream).await.expect("start proxy");
    let database_url = testkit::with_host_port(db.url(), proxy.addr());
    let smtp = SmtpServer::start().await.expect("start SMTP server");
    let builds = ScratchDir::new("builds");
    let outside = write_builds(builds.path());
    let clock = ManualClock::new(now);
    let mut app = TestApp {
        base: String::new(),
        proxy,
        db,
        smtp,
        builds,
        clock,
        client: testkit::http::client(),
        database_url,
        outside,
    };
    app.base = app.start_instance_timed(&[], mailer).await;
    app
}

fn write_builds(dir: &Path) -> std::path::PathBuf {
    let manifest = json!({
        "version": "1.8.0",
        "pubDate": "2026-11-20T10:00:00Z",
        "notes": "Faster exports.",
        "files": [
            {"platform": "macos-universal", "name": MAC_BUILD},
            {"platform": "windows-x86_64", "name": WIN_BUILD},
        ],
    });
    std::fs::write(dir.join("latest.json"), manifest.to_string()).expect("write manifest");
    // Several of the service's 512 KiB read buffers and a tail, so that a download reuses them.
    std::fs::write(dir.join(MAC_BUILD), build_bytes(1_300_000, 7)).expect("write build");
    std::fs::write(dir.join(WIN_BUILD), build_bytes(120_000, 11)).expect("write build");
    std::fs::write(dir.join(UNLISTED), build_bytes(1000, 3)).expect("write build");
    let outside = dir
        .parent()
        .expect("scratch directories have a parent")
        .join(format!(
            "{}-{OUTSIDE}",
            dir.file_name().and_then(|n| n.to_str()).unwrap_or("x")
        ));
    std::fs::write(&outside, b"never serve this").expect("write outside file");
    outside
}

pub use testkit::build_bytes;

pub fn sha256_hex(bytes: &[u8]) -> String {
    licence_server::signing::to_hex(&sha2::Sha256::digest(bytes))
}

impl Drop for TestApp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.outside);
    }
}

impl TestApp {
    /// Starts another instance of the service on the same database, SMTP server, builds and
    /// clock, with the key ring `keys`; returns its base address.
    pub async fn start_instance(&self, keys: &str) -> String {
        self.start_instance_with(&[("LICENCE_JWT_KEYS", keys)])
            .await
    }

    /// Starts another instance with `overrides` on top of the test settings.
    pub async fn start_instance_with(&self, overrides: &[(&str, &str)]) -> String {
        self.start_instance_timed(overrides, quick_mailer()).await
    }

    /// The same, with the sender's timings `mailer`.
    pub async fn start_instance_timed(
        &self,
        overrides: &[(&str, &str)],
        mailer: MailerOptions,
    ) -> String {
        let app = self.build_instance(overrides, mailer).await;
        let base = format!("http://127.0.0.1:{}", app.port());
        tokio::spawn(app.run_until_stopped());
        base
    }

    /// Another instance, built but not yet serving.
    pub async fn build_instance(
        &self,
        overrides: &[(&str, &str)],
        mailer: MailerOptions,
    ) -> Application {
        let builds = self.builds.path().to_string_lossy().into_owned();
        let mut env = base_env(&self.database_url, &builds);
        for (k, v) in &mut env {
            if k == "SMTP_URL" {
                *v = self.smtp.url();
            }
        }
        for (name, value) in overrides {
            env.retain(|(k, _)| k != name);
            env.push(((*name).to_owned(), (*value).to_owned()));
        }
        let settings = Settings::from_env(&Env::from_pairs(env)).expect("valid test settings");
        Application::build_with(
            settings,
            Options {
                clock: self.clock.clone(),
                mailer,
            },
        )
        .await
        .expect("build licence-server")
    }

    pub fn outside_path(&self) -> &Path {
        &self.outside
    }

    pub fn conn(&self) -> MysqlConnection {
        self.db.connect()
    }

    /// The key of a licence made directly in the database ([`insert_licence`]).
    pub fn licence(&self, plan: &str, status: &str) -> String {
        insert_licence(&mut self.conn(), plan, status).license_key
    }

    pub async fn post(&self, path: &str, body: &Value, bearer: Option<&str>) -> (u16, Value) {
        answer(self.send("POST", path, bearer, Some(body), None).await).await
    }

    pub async fn post_raw(&self, path: &str, body: &str) -> (u16, Value) {
        let req = self
            .client
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .body(body.to_owned());
        answer(req.send().await.expect("POST")).await
    }

    pub async fn get(&self, path: &str, bearer: Option<&str>) -> (u16, Value) {
        answer(self.send("GET", path, bearer, None, None).await).await
    }

    /// Asserts that `GET path` without a token is refused as the contract says.
    pub async fn assert_get_needs_token(&self, path: &str) {
        let (status, body) = self.get(path, None).await;
        assert_error(status, &body, 401, "INVALID_TOKEN");
    }

    /// A validation by `token` at the replica `base`; the answer.
    pub async fn validate_at(&self, base: &str, token: &str) -> (u16, Value) {
        let resp = self
            .client
            .post(format!("{base}/api/license/validate"))
            .bearer_auth(token)
            .send()
            .await
            .expect("POST");
        answer(resp).await
    }

    /// The value of one series of `/metrics`, named with its labels as it is printed.
    pub async fn metric(&self, series: &str) -> f64 {
        testkit::http::metric(&self.base, series).await
    }

    /// Activates `instance` on `key`; the answer.
    pub async fn activate(&self, key: &str, instance: &str) -> (u16, Value) {
        let mut body = key_and_instance(key, instance);
        body["instanceName"] = json!("Test Mac");
        self.post("/api/license/activate", &body, None).await
    }

    /// Deactivates `instance` on `key` by the key; the answer.
    pub async fn deactivate(&self, key: &str, instance: &str) -> (u16, Value) {
        let body = key_and_instance(key, instance);
        self.post("/api/license/deactivate", &body, None).await
    }

    /// Validates `instance` on `key` by the key; the answer.
    pub async fn validate(&self, key: &str, instance: &str) -> (u16, Value) {
        let body = key_and_instance(key, instance);
        self.post("/api/license/validate", &body, None).await
    }

    /// Validates the installation `token` names; the answer.
    pub async fn validate_by_token(&self, token: &str) -> (u16, Value) {
        self.post("/api/license/validate", &json!({}), Some(token))
            .await
    }

    /// Deactivates `instance` (`None`: the token's own installation) with `token`; the answer.
    pub async fn deactivate_by_token(&self, token: &str, instance: Option<&str>) -> (u16, Value) {
        let body = match instance {
            Some(instance) => json!({"instanceId": instance}),
            None => json!({}),
        };
        self.post("/api/license/deactivate", &body, Some(token))
            .await
    }

    /// Sends `method path` with an optional bearer token, JSON body and `Licence-Nonce`; the
    /// answer as it came.
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        bearer: Option<&str>,
        body: Option<&Value>,
        nonce: Option<&str>,
    ) -> reqwest::Response {
        let mut req = self.client.request(
            method.parse().expect("method"),
            format!("{}{path}", self.base),
        );
        if let Some(t) = bearer {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        if let Some(n) = nonce {
            req = req.header("licence-nonce", n);
        }
        req.send().await.expect("request")
    }

    /// The seat count (`activationUsage`) a validation of `key` by `instance` reports; the
    /// validation must succeed.
    pub async fn seats_seen_by_validate(&self, key: &str, instance: &str) -> Value {
        let (status, body) = self.validate(key, instance).await;
        assert_eq!(status, 200, "{body}");
        body["license"]["activationUsage"].clone()
    }

    /// A token for a fresh activation of `key` on `instance`.
    pub async fn token(&self, key: &str, instance: &str) -> String {
        let (status, body) = self.activate(key, instance).await;
        assert_eq!(status, 200, "{body}");
        body["token"].as_str().expect("token").to_owned()
    }

    /// Delivers a webhook body signed as the payment provider signs it.
    pub async fn webhook(&self, body: &Value) -> (u16, Value) {
        let raw = body.to_string();
        let sig =
            licence_server::signing::webhook_signature(WEBHOOK_SECRET.as_bytes(), raw.as_bytes());
        self.webhook_raw(&raw, &sig).await
    }

    /// Delivers a signed webhook body the service must accept; its answer.
    pub async fn deliver(&self, body: &Value) -> Value {
        let (status, answer) = self.webhook(body).await;
        assert_eq!(status, 200, "{answer}");
        answer
    }

    pub async fn webhook_raw(&self, raw: &str, signature: &str) -> (u16, Value) {
        let resp = self
            .client
            .post(format!("{}/api/webhook/lemonsqueezy", self.base))
            .header("content-type", "application/json")
            .header("x-event-name", "order_created")
            .header("x-signature", signature)
            .body(raw.to_owned())
            .send()
            .await
            .expect("POST webhook");
        answer(resp).await
    }

    pub fn count(&self, table: &str) -> i64 {
        #[derive(QueryableByName)]
        struct N {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            n: i64,
        }
        let n: N = diesel::sql_query(format!("SELECT COUNT(*) AS n FROM {table}"))
            .get_result(&mut self.conn())
            .expect("count");
        n.n
    }

    pub fn key_of_order(&self, order_id: &str) -> Option<String> {
        use licence_server::schema::licence;
        licence::table
            .filter(licence::order_id.eq(order_id))
            .select(licence::license_key)
            .first(&mut self.conn())
            .optional()
            .expect("read licence")
    }
}

pub async fn answer(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap_or_default();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, body)
}

/// The path and query of an absolute address of the service, which must be on its
/// `PUBLIC_BASE_URL`.
pub fn local_path(url: &str) -> String {
    let u = url::Url::parse(url).expect("absolute address");
    assert_eq!(
        u.origin().ascii_serialization(),
        "http://127.0.0.1:8083",
        "PUBLIC_BASE_URL"
    );
    match u.query() {
        Some(q) => format!("{}?{q}", u.path()),
        None => u.path().to_owned(),
    }
}

/// The body that names an installation by its licence key.
pub fn key_and_instance(key: &str, instance: &str) -> Value {
    json!({"licenseKey": key, "instanceId": instance})
}

/// Asserts the contract's error shape and code.
pub fn assert_error(status: u16, body: &Value, want_status: u16, code: &str) {
    assert_eq!(status, want_status, "{body}");
    assert_eq!(body["code"], code, "{body}");
    assert!(
        body["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}"
    );
}

/// A Lemon Squeezy `order_created` payload, trimmed to realistic fields.
pub fn order_created(order_id: u64, variant_id: u64, email: &str) -> Value {
    json!({
        "meta": {"test_mode": true, "event_name": "order_created", "webhook_id": "wh_1"},
        "data": {
            "type": "orders",
            "id": order_id.to_string(),
            "attributes": {
                "store_id": 1,
                "customer_id": 42,
                "identifier": "104e18a2-d755-4d4b-80c4-a6c1dcbe1c10",
                "order_number": order_id,
                "user_name": "Ada <Lovelace>",
                "user_email": email,
                "currency": "EUR",
                "status": "paid",
                "refunded": false,
                "first_order_item": {
                    "id": 7,
                    "order_id": order_id,
                    "product_id": 3,
                    "variant_id": variant_id,
                    "product_name": "Desktop App",
                    "price": 4990
                },
                "created_at": "2026-11-22T06:00:00.000000Z",
                "updated_at": "2026-11-22T06:00:00.000000Z"
            }
        }
    })
}

/// A `subscription_*` payload.
#[allow(clippy::too_many_arguments)]
pub fn subscription_event(
    event: &str,
    subscription_id: u64,
    order_id: u64,
    variant_id: u64,
    status: &str,
    ends_at: Option<&str>,
    updated_at: &str,
    email: &str,
) -> Value {
    json!({
        "meta": {"test_mode": true, "event_name": event},
        "data": {
            "type": "subscriptions",
            "id": subscription_id.to_string(),
            "attributes": {
                "store_id": 1,
                "customer_id": 42,
                "order_id": order_id,
                "product_id": 3,
                "variant_id": variant_id,
                "user_name": "Grace Hopper",
                "user_email": email,
                "status": status,
                "cancelled": status == "cancelled",
                "renews_at": "2026-12-22T06:00:00.000000Z",
                "ends_at": ends_at,
                "created_at": "2026-11-22T06:00:00.000000Z",
                "updated_at": updated_at
            }
        }
    })
}

/// A licence made directly in the database, as a purchase would leave it.
pub fn insert_licence(conn: &mut MysqlConnection, plan: &str, status: &str) -> LicenceRow {
    use licence_server::schema::licence;
    let new = NewLicence {
        id: licence_server::repo::new_id().into(),
        license_key: licence_server::repo::new_licence_key(),
        status: status.to_owned(),
        plan: plan.to_owned(),
        customer_email: "buyer@example.com".to_owned(),
        customer_name: Some("Ada Buyer".to_owned()),
        order_id: None,
        subscription_id: None,
        variant_id: None,
        subscription_synced_at: None,
        expires_at: None,
    };
    diesel::insert_into(licence::table)
        .values(&new)
        .execute(conn)
        .expect("insert licence");
    licence::table
        .find(&new.id)
        .select(LicenceRow::as_select())
        .first(conn)
        .expect("the licence inserted")
}

/// The public keys the service publishes, as the desktop app pins them.
pub async fn trusted_keys(app: &TestApp) -> Vec<PublicKey> {
    let (_, body) = app.get("/api/license/public-keys", None).await;
    body["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .filter_map(|k| PublicKey::from_x(k["kid"].as_str()?, k["x"].as_str()?))
        .collect()
}

/// A client on `base` keeping its state in `dir`, whose clock is the service's moved by `offset`.
pub fn client_at(
    base: &str,
    keys: Vec<PublicKey>,
    dir: &ScratchDir,
    clock: &Arc<ManualClock>,
    offset: chrono::Duration,
) -> LicenceClient {
    let clock = clock.clone();
    LicenceClient::with_keys(
        base,
        keys,
        dir.path().join("licence.json"),
        "desk-1".to_owned(),
    )
    .expect("client")
    .with_clock(move || clock.now() + offset)
}

/// A running service, the keys its desktop clients pin, and a state directory for one client.
pub struct ClientSetup {
    pub app: TestApp,
    pub keys: Vec<PublicKey>,
    pub dir: ScratchDir,
}

impl ClientSetup {
    pub async fn start() -> Self {
        let app = spawn_app().await;
        let keys = trusted_keys(&app).await;
        let dir = ScratchDir::new("licence-client");
        Self { app, keys, dir }
    }

    /// A client of the server at `base` keeping its state in this directory ([`client`]).
    pub fn client_of(&self, base: &str) -> LicenceClient {
        client(base, self.keys.clone(), &self.dir, &self.app.clock)
    }

    /// A new licence of `plan` activated by a client of the service; the client and the key.
    pub async fn activated(&self, plan: &str) -> (LicenceClient, String) {
        let c = self.client_of(&self.app.base);
        let key = self.app.licence(plan, "active");
        c.activate(&key, None).await.expect("activate");
        (c, key)
    }
}

/// [`client_at`] on the service's own time.
pub fn client(
    base: &str,
    keys: Vec<PublicKey>,
    dir: &ScratchDir,
    clock: &Arc<ManualClock>,
) -> LicenceClient {
    client_at(base, keys, dir, clock, chrono::Duration::zero())
}
