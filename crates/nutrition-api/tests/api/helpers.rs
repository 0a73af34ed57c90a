use chrono::Utc;
use diesel::RunQueryDsl;
use nutrition_api::{Application, Settings};
use reqwest::Method;
use serde_json::Value;
use service_kit::Env;
use session::AuthSettings;
use testkit::postgres::TestPostgres;
use testkit::proxy::TcpProxy;

pub const SECRET: &str = "test-secret-0123456789abcdef-0123456789";
pub const BASE_URL: &str = "http://localhost:8080";

/// A running nutrition-api on a fresh, migrated database reached through a cuttable proxy.
pub struct TestApp {
    pub base: String,
    pub proxy: TcpProxy,
    pub db: TestPostgres,
    pub http: reqwest::Client,
    auth: AuthSettings,
}

/// A signed-in user: the session cookie a browser would hold.
#[derive(Clone)]
pub struct User {
    pub id: String,
    pub cookie: String,
}

pub fn env_pairs(database_url: &str) -> Vec<(String, String)> {
    vec![
        ("DATABASE_URL".into(), database_url.into()),
        ("DATABASE_POOL_SIZE".into(), "8".into()),
        ("LISTEN_ADDR".into(), "127.0.0.1:0".into()),
        ("AUTH_SECRET".into(), SECRET.into()),
        ("AUTH_BASE_URL".into(), BASE_URL.into()),
    ]
}

pub async fn spawn_app() -> TestApp {
    spawn_with(&[]).await
}

/// A service with extra settings (VAPID keys, the push endpoint policy).
pub async fn spawn_with(extra: &[(String, String)]) -> TestApp {
    spawn_on(extra, false).await
}

/// Like [`spawn_app`], with the database connections unencrypted, so that the proxy can count
/// the statements the service sends.
pub async fn spawn_counting() -> TestApp {
    spawn_on(&[], true).await
}

async fn spawn_on(extra: &[(String, String)], plain: bool) -> TestApp {
    let db = TestPostgres::migrated(pg_store::migrate);
    let upstream = testkit::socket_addr_of(db.url()).expect("database address");
    let proxy = TcpProxy::start(upstream).await.expect("start proxy");
    let mut url = testkit::postgres::as_role(
        &testkit::with_host_port(db.url(), proxy.addr()),
        "nutrition_api_svc",
    );
    if plain {
        url.push(if url.contains('?') { '&' } else { '?' });
        url.push_str("sslmode=disable");
    }
    let (base, auth) = start(&url, extra).await;
    TestApp {
        base,
        proxy,
        db,
        http: testkit::http::client(),
        auth,
    }
}

async fn start(database_url: &str, extra: &[(String, String)]) -> (String, AuthSettings) {
    let mut pairs = env_pairs(database_url);
    pairs.extend(extra.iter().cloned());
    let env = Env::from_pairs(pairs);
    let settings = Settings::from_env(&env).expect("valid test settings");
    let auth = settings.auth.clone();
    let app = Application::build(settings)
        .await
        .expect("build nutrition-api");
    let base = format!("http://127.0.0.1:{}", app.port());
    tokio::spawn(app.run_until_stopped());
    (base, auth)
}

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub body: Value,
    pub text: String,
    pub headers: reqwest::header::HeaderMap,
}

impl Resp {
    /// Reads an answer. No input may ever produce a 500, so every test checks that on every call.
    pub async fn read(resp: reqwest::Response) -> Self {
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let text = resp.text().await.unwrap_or_default();
        assert_ne!(status, 500, "a 500: {text}");
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Self {
            status,
            body,
            text,
            headers,
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The contract's error body with `status` and `code`.
    #[track_caller]
    pub fn assert_code(&self, status: u16, code: &str) {
        let got = (self.status, self.body["code"].as_str());
        assert_eq!(got, (status, Some(code)), "{}", self.text);
    }

    /// [`Self::assert_code`], with a message that says `says` (the field at fault, the limit).
    #[track_caller]
    pub fn assert_error(&self, status: u16, code: &str, says: &str) {
        self.assert_code(status, code);
        let message = self.body["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{message:?} does not say {says:?}");
    }
}

impl TestApp {
    /// A second nutrition-api on the same database, as a replica behind a load balancer; its base
    /// address.
    pub async fn replica(&self, extra: &[(String, String)]) -> String {
        start(self.db.url(), extra).await.0
    }

    /// A user with a session, as auth would have created them.
    pub fn user(&self, email: &str) -> User {
        let mut conn = self.db.connect();
        let id = session::ids::id();
        diesel::sql_query(format!(
            "INSERT INTO auth.\"user\" (id, name, email) VALUES ('{id}', 'Test', '{email}')"
        ))
        .execute(&mut conn)
        .expect("insert user");
        let s = session::store::create(
            &mut conn,
            &id.clone().into(),
            true,
            &Default::default(),
            Utc::now(),
        )
        .expect("session");
        let set = session::cookie::set_session(&self.auth, &s.token, true);
        let cookie = set.split(';').next().expect("pair").to_owned();
        User { id, cookie }
    }

    /// A correctly signed session cookie (`name=value`) for `token`, whether or not such a
    /// session exists.
    pub fn cookie_for_token(&self, token: &str) -> String {
        let set = session::cookie::set_session(&self.auth, token, true);
        set.split(';').next().expect("pair").to_owned()
    }

    pub async fn call(
        &self,
        method: Method,
        path: &str,
        user: Option<&User>,
        body: Option<Value>,
    ) -> Resp {
        self.call_on(&self.base, method, path, user, body).await
    }

    /// [`Self::call`] on another process of the service (see [`Self::replica`]).
    pub async fn call_on(
        &self,
        base: &str,
        method: Method,
        path: &str,
        user: Option<&User>,
        body: Option<Value>,
    ) -> Resp {
        let mut req = self.http.request(method, format!("{base}{path}"));
        if let Some(u) = user {
            req = req.header("cookie", &u.cookie).header("origin", BASE_URL);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("request");
        Resp::read(resp).await
    }

    pub async fn get(&self, path: &str, user: &User) -> Resp {
        self.call(Method::GET, path, Some(user), None).await
    }

    pub async fn post(&self, path: &str, user: &User, body: Value) -> Resp {
        self.call(Method::POST, path, Some(user), Some(body)).await
    }

    pub async fn patch(&self, path: &str, user: &User, body: Value) -> Resp {
        self.call(Method::PATCH, path, Some(user), Some(body)).await
    }

    pub async fn delete(&self, path: &str, user: &User) -> Resp {
        self.call(Method::DELETE, path, Some(user), None).await
    }

    /// A JSON write with an `Idempotency-Key`.
    pub async fn keyed(
        &self,
        method: Method,
        path: &str,
        user: &User,
        key: &str,
        body: Value,
    ) -> Resp {
        let resp = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("cookie", &user.cookie)
            .header("origin", BASE_URL)
            .header("idempotency-key", key)
            .json(&body)
            .send()
            .await
            .expect("request");
        Resp::read(resp).await
    }

    /// A CSV file to the import.
    pub async fn import(&self, user: &User, csv: &str) -> Resp {
        let resp = self
            .http
            .post(format!("{}/me/fast-events/import", self.base))
            .header("cookie", &user.cookie)
            .header("origin", BASE_URL)
            .header("content-type", "text/csv")
            .body(csv.to_owned())
            .send()
            .await
            .expect("request");
        Resp::read(resp).await
    }

    /// Sends a raw body (malformed JSON tests).
    pub async fn raw(&self, method: Method, path: &str, user: &User, body: &str) -> Resp {
        let resp = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("cookie", &user.cookie)
            .header("origin", BASE_URL)
            .header("content-type", "application/json")
            .body(body.to_owned())
            .send()
            .await
            .expect("request");
        Resp::read(resp).await
    }

    pub fn sql(&self, query: &str) -> usize {
        let mut conn = self.db.connect();
        diesel::sql_query(query).execute(&mut conn).expect("sql")
    }

    pub fn count(&self, query: &str) -> i64 {
        self.db.count(query)
    }
}
