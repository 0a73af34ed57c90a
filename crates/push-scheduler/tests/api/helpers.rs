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
    let db = TestPostgres::migrated(nutrition_store::migrate);
    let upstream = testkit::socket_addr_of(db.url()).expect("database address");
    let proxy = TcpProxy::start(upstream).await.expect("start proxy");
    let url = testkit::with_host_port(db.url(), proxy.addr());
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
        let db = TestPostgres::migrated(nutrition_store::migrate);
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
        use diesel::RunQueryDsl;
        #[derive(diesel::QueryableByName)]
        struct C {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            n: i64,
        }
        let mut conn = self.db.connect();
        diesel::sql_query(query)
            .get_result::<C>(&mut conn)
            .map(|c| c.n)
            .unwrap_or(-1)
    }

    /// A user with one registered device and the given switches; `profile: None` means the user
    /// never changed a setting (no profile row).
    pub fn person(&self, email: &str, profile: Option<Profile>) -> Person {
        let id = session::ids::id();
        let device = self.push.subscribe();
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
        self.sql(&format!(
            "INSERT INTO nutrition.device_token (id, user_id, platform, endpoint, p256dh, auth)
             VALUES ('{}', '{id}', 'web', '{}', '{}', '{}')",
            session::ids::id(),
            device.endpoint,
            device.p256dh,
            device.auth
        ));
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
        let notified = format!("{{{}}}", notified.join(","));
        self.sql(&format!(
            "INSERT INTO nutrition.fast_event (id, user_id, status, protocol, started_at, planned_end_at, notified_milestones)
             VALUES ('{id}', '{}', 'IN_PROGRESS', '{hours}:0', '{}', '{}', '{notified}')",
            person.id,
            started.to_rfc3339(),
            (started + chrono::Duration::hours(hours)).to_rfc3339()
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
