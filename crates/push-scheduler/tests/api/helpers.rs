use push_scheduler::{Application, Settings};
use service_kit::Env;
use testkit::postgres::TestPostgres;
use testkit::proxy::TcpProxy;

/// A running push-scheduler on a fresh, migrated database reached through a cuttable proxy.
pub struct TestApp {
    pub base: String,
    pub proxy: TcpProxy,
    pub db: TestPostgres,
}

pub async fn spawn_app() -> TestApp {
    let db = TestPostgres::migrated(pg_store::migrate);
    let upstream = testkit::socket_addr_of(db.url()).expect("database address");
    let proxy = TcpProxy::start(upstream).await.expect("start proxy");
    let url = testkit::postgres::as_role(
        &testkit::with_host_port(db.url(), proxy.addr()),
        "push_scheduler_svc",
    );
    let env = Env::from_pairs([
        ("DATABASE_URL", url.as_str()),
        ("DATABASE_POOL_SIZE", "4"),
        ("LISTEN_ADDR", "127.0.0.1:0"),
    ]);
    let settings = Settings::from_env(&env).expect("valid test settings");
    let app = Application::build(settings)
        .await
        .expect("build push-scheduler");
    let base = format!("http://127.0.0.1:{}", app.port());
    tokio::spawn(app.run_until_stopped());
    TestApp { base, proxy, db }
}

/// A database, a push service that verifies and decrypts, and VAPID keys: what `fire` and `serve`
/// run against.
pub struct World {
    pub db: TestPostgres,
    pub push: testkit::push_service::FakePushService,
    pub env: Vec<(String, String)>,
}

pub struct Person {
    pub id: String,
    pub device: testkit::push_service::FakeSubscription,
}

/// Profile switches of a test user.
#[derive(Clone, Copy)]
pub struct Profile {
    pub meal_reminders: bool,
    pub weekly_weigh_in: bool,
    pub milestones: bool,
    pub paused_until: Option<chrono::DateTime<chrono::Utc>>,
}

impl Default for Profile {
    fn default() -> Self {
        Self {
            meal_reminders: true,
            weekly_weigh_in: true,
            milestones: true,
            paused_until: None,
        }
    }
}

impl World {
    pub async fn new() -> Self {
        let db = TestPostgres::migrated(pg_store::migrate);
        let push = testkit::push_service::FakePushService::start().await;
        let pair = push::VapidKeyPair::generate();
        let env = vec![
            ("DATABASE_URL".to_owned(), db.url().to_owned()),
            ("DATABASE_POOL_SIZE".to_owned(), "6".to_owned()),
            ("LISTEN_ADDR".to_owned(), "127.0.0.1:0".to_owned()),
            ("VAPID_PUBLIC_KEY".to_owned(), pair.public_key.clone()),
            (
                "VAPID_PRIVATE_KEY".to_owned(),
                pair.private_key.expose().to_owned(),
            ),
            (
                "VAPID_SUBJECT".to_owned(),
                "mailto:ops@example.com".to_owned(),
            ),
            ("PUSH_ALLOW_HTTP_ENDPOINTS".to_owned(), "true".to_owned()),
            ("RUST_LOG".to_owned(), "warn".to_owned()),
        ];
        Self { db, push, env }
    }

    pub fn sql(&self, query: &str) {
        use diesel::RunQueryDsl;
        let mut conn = self.db.connect();
        diesel::sql_query(query).execute(&mut conn).expect("sql");
    }

    pub fn count(&self, query: &str) -> i64 {
        self.db.count(query)
    }

    /// A user with one registered device and the given switches; `profile: None` means the user
    /// never changed a setting (no profile row).
    pub fn person(&self, email: &str, profile: Option<Profile>) -> Person {
        self.person_on(email, profile, &self.push)
    }

    /// [`Self::person`] whose device is subscribed at another push service.
    pub fn person_on(
        &self,
        email: &str,
        profile: Option<Profile>,
        service: &testkit::push_service::FakePushService,
    ) -> Person {
        let id = session::ids::id();
        self.sql(&format!(
            "INSERT INTO auth.\"user\" (id, name, email) VALUES ('{id}', 'T', '{email}')"
        ));
        if let Some(p) = profile {
            let paused = p
                .paused_until
                .map(|t| format!("'{}'", t.to_rfc3339()))
                .unwrap_or_else(|| "NULL".into());
            self.sql(&format!(
                "INSERT INTO nutrition.profile (user_id, meal_reminders, weekly_weigh_in, fasting_milestones, fasting_paused_until)
                 VALUES ('{id}', {}, {}, {}, {paused})",
                p.meal_reminders, p.weekly_weigh_in, p.milestones
            ));
        }
        let device = self.device(&id, service);
        Person { id, device }
    }

    /// A running fast of `person` started at `started`.
    pub fn fast(
        &self,
        person: &Person,
        started: chrono::DateTime<chrono::Utc>,
        hours: i64,
        notified: &[&str],
    ) -> String {
        let id = session::ids::id();
        let end = started + chrono::Duration::hours(hours);
        // As nutrition-api starts a fast: the run finds it when its first milestone falls due.
        let keys: Vec<String> = notified.iter().map(|k| (*k).to_owned()).collect();
        let next = domain::fasting::next_milestone_at(started, end, &keys, None)
            .map(|t| format!("'{}'", t.to_rfc3339()))
            .unwrap_or_else(|| "NULL".into());
        let notified = format!("{{{}}}", notified.join(","));
        self.sql(&format!(
            "INSERT INTO nutrition.fast_event (id, user_id, status, protocol, started_at, planned_end_at, notified_milestones, next_milestone_at)
             VALUES ('{id}', '{}', 'IN_PROGRESS', '{hours}:0', '{}', '{}', '{notified}', {next})",
            person.id,
            started.to_rfc3339(),
            end.to_rfc3339()
        ));
        id
    }

    /// `push-scheduler fire <job> --at <at>` as a real process; its JSON line.
    pub fn fire(&self, job: &str, at: &str, wait_secs: u64) -> serde_json::Value {
        let out = self
            .fire_command(job, at, wait_secs)
            .output()
            .expect("run fire");
        assert!(
            out.status.success(),
            "fire failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout.lines().last().unwrap_or_default();
        serde_json::from_str(line)
            .unwrap_or_else(|_| panic!("one JSON line expected, got {stdout:?}"))
    }

    pub fn fire_command(&self, job: &str, at: &str, wait_secs: u64) -> std::process::Command {
        let env: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let wait = wait_secs.to_string();
        testkit::process::command(
            std::path::Path::new(env!("CARGO_BIN_EXE_push-scheduler")),
            &["fire", job, "--at", at, "--wait", &wait],
            &env,
        )
    }

    /// The `kind`s of the messages `person`'s device received, decrypted.
    pub fn kinds(&self, person: &Person) -> Vec<String> {
        self.push
            .received(&person.device)
            .iter()
            .map(|m| {
                let v: serde_json::Value =
                    serde_json::from_slice(&m.plaintext).expect("JSON payload");
                v["kind"].as_str().unwrap_or_default().to_owned()
            })
            .collect()
    }
}

impl World {
    /// Another device of the user `user_id`, subscribed at `service`.
    pub fn device(
        &self,
        user_id: &str,
        service: &testkit::push_service::FakePushService,
    ) -> testkit::push_service::FakeSubscription {
        let device = service.subscribe();
        self.sql(&format!(
            "INSERT INTO nutrition.device_token (id, user_id, platform, endpoint, p256dh, auth)
             VALUES ('{}', '{user_id}', 'web', '{}', '{}', '{}')",
            session::ids::id(),
            device.endpoint,
            device.p256dh,
            device.auth
        ));
        device
    }

    /// `push-scheduler serve` as a real process on a free port.
    pub fn serve(&self, name: &str, dir: &testkit::stack::ScratchDir) -> testkit::stack::Process {
        self.serve_at(name, dir).0
    }

    /// [`Self::serve`], with the address it listens on.
    pub fn serve_at(
        &self,
        name: &str,
        dir: &testkit::stack::ScratchDir,
    ) -> (testkit::stack::Process, String) {
        let addr = format!("127.0.0.1:{}", testkit::stack::free_port());
        let env: Vec<(&str, &str)> = self
            .env
            .iter()
            .filter(|(k, _)| k != "LISTEN_ADDR")
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .chain([("LISTEN_ADDR", addr.as_str())])
            .collect();
        let process = testkit::stack::Process::start(
            name,
            std::path::Path::new(env!("CARGO_BIN_EXE_push-scheduler")),
            &["serve"],
            &env,
            dir.path(),
        );
        (process, format!("http://{addr}"))
    }

    /// The decrypted payloads a device received.
    pub fn payloads(
        &self,
        device: &testkit::push_service::FakeSubscription,
    ) -> Vec<serde_json::Value> {
        self.push
            .received(device)
            .iter()
            .map(testkit::push_service::Delivered::json)
            .collect()
    }
}

/// nutrition-api running in this process on the world's database, as the users' browsers reach it.
pub struct Api {
    pub base: String,
    auth: session::AuthSettings,
    http: reqwest::Client,
}

/// A signed-in user of [`Api`].
#[derive(Clone)]
pub struct ApiUser {
    pub id: String,
    pub cookie: String,
}

pub struct ApiResp {
    pub status: u16,
    pub body: serde_json::Value,
}

const API_BASE_URL: &str = "http://localhost:8080";

impl Api {
    pub async fn start(world: &World) -> Self {
        let mut pairs = world.env.clone();
        pairs.retain(|(k, _)| k != "RUST_LOG");
        pairs.push((
            "AUTH_SECRET".to_owned(),
            "test-secret-0123456789abcdef-0123456789".to_owned(),
        ));
        pairs.push(("AUTH_BASE_URL".to_owned(), API_BASE_URL.to_owned()));
        let settings =
            nutrition_api::Settings::from_env(&Env::from_pairs(pairs)).expect("valid settings");
        let auth = settings.auth.clone();
        let app = nutrition_api::Application::build(settings)
            .await
            .expect("build nutrition-api");
        let base = format!("http://127.0.0.1:{}", app.port());
        tokio::spawn(app.run_until_stopped());
        Self {
            base,
            auth,
            http: testkit::http::client(),
        }
    }

    /// A user with a session, as auth would have created them.
    pub fn user(&self, world: &World, email: &str) -> ApiUser {
        let id = session::ids::id();
        world.sql(&format!(
            "INSERT INTO auth.\"user\" (id, name, email) VALUES ('{id}', 'Test', '{email}')"
        ));
        let mut conn = world.db.connect();
        let s = session::store::create(
            &mut conn,
            &session::UserId::from(id.clone()),
            true,
            &Default::default(),
            chrono::Utc::now(),
        )
        .expect("session");
        let set = session::cookie::set_session(&self.auth, &s.token, true);
        let cookie = set.split(';').next().expect("pair").to_owned();
        ApiUser { id, cookie }
    }

    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        user: &ApiUser,
        body: Option<serde_json::Value>,
    ) -> ApiResp {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("cookie", &user.cookie)
            .header("origin", API_BASE_URL);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("request");
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap_or_default();
        assert_ne!(status, 500, "{text}");
        ApiResp {
            status,
            body: serde_json::from_str(&text).unwrap_or(serde_json::Value::Null),
        }
    }

    /// Starts a 16:8 fast for `user` at `started`; returns its id.
    pub async fn start_fast(
        &self,
        user: &ApiUser,
        started: chrono::DateTime<chrono::Utc>,
    ) -> String {
        let r = self
            .call(
                reqwest::Method::POST,
                "/me/fast-events",
                user,
                Some(serde_json::json!({ "protocol": "16:8", "startedAt": service_kit::time::format(&started) })),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.body);
        r.body["id"].as_str().expect("id").to_owned()
    }

    pub async fn register(
        &self,
        user: &ApiUser,
        device: &testkit::push_service::FakeSubscription,
    ) -> ApiResp {
        self.call(
            reqwest::Method::POST,
            "/me/device-tokens",
            user,
            Some(serde_json::json!({ "platform": "web", "endpoint": device.endpoint, "keys": { "p256dh": device.p256dh, "auth": device.auth } })),
        )
        .await
    }
}
