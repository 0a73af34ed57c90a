use auth::{Application, Settings};
use reqwest::header::{HeaderMap, SET_COOKIE};
use serde_json::Value;
use service_kit::Env;
use testkit::postgres::TestPostgres;
use testkit::proxy::TcpProxy;

pub const SECRET: &str = "test-secret-0123456789abcdef-0123456789";
pub const BASE_URL: &str = "http://localhost:8080";
pub const COOKIE: &str = "digiuno.session_token";
/// The fields of better-auth's session object.
pub const SESSION_FIELDS: [&str; 7] = [
    "id",
    "userId",
    "expiresAt",
    "createdAt",
    "updatedAt",
    "ipAddress",
    "userAgent",
];

/// A running auth service on a fresh, migrated database reached through a cuttable proxy.
pub struct TestApp {
    pub base: String,
    pub proxy: TcpProxy,
    pub db: TestPostgres,
    pub http: reqwest::Client,
}

/// A second service on the same database (another auth replica, or nutrition-api).
pub struct Peer {
    pub base: String,
}

pub fn env_for(database_url: &str, extra: &[(String, String)]) -> Env {
    let mut pairs: Vec<(String, String)> = vec![
        ("DATABASE_URL".into(), database_url.into()),
        ("DATABASE_POOL_SIZE".into(), "4".into()),
        ("LISTEN_ADDR".into(), "127.0.0.1:0".into()),
        ("AUTH_SECRET".into(), SECRET.into()),
        ("AUTH_BASE_URL".into(), BASE_URL.into()),
        // Tests sign in often; the rate-limit tests set their own limits.
        ("AUTH_RATE_LIMIT_MAX".into(), "10000".into()),
        ("AUTH_MAIL_RATE_LIMIT_MAX".into(), "10000".into()),
        ("AUTH_SIGN_IN_GLOBAL_MAX".into(), "100000".into()),
        ("AUTH_SIGN_IN_FAILURES_MAX".into(), "10000".into()),
        ("AUTH_SIGN_IN_EMAIL_FAILURES_MAX".into(), "10000".into()),
    ];
    for (k, v) in extra {
        pairs.retain(|(key, _)| key != k);
        pairs.push((k.clone(), v.clone()));
    }
    Env::from_pairs(pairs)
}

pub async fn spawn_app() -> TestApp {
    spawn_with(&[]).await
}

pub async fn spawn_with(extra: &[(String, String)]) -> TestApp {
    spawn_on(extra, false).await
}

/// Like [`spawn_with`], with the database connections unencrypted, so that the proxy can count
/// the statements the service sends.
pub async fn spawn_counting(extra: &[(String, String)]) -> TestApp {
    spawn_on(extra, true).await
}

async fn spawn_on(extra: &[(String, String)], plain: bool) -> TestApp {
    let db = TestPostgres::migrated(pg_store::migrate);
    let upstream = testkit::socket_addr_of(db.url()).expect("database address");
    let proxy = TcpProxy::start(upstream).await.expect("start proxy");
    let mut url =
        testkit::postgres::as_role(&testkit::with_host_port(db.url(), proxy.addr()), "auth_svc");
    if plain {
        url.push(if url.contains('?') { '&' } else { '?' });
        url.push_str("sslmode=disable");
    }
    let settings = Settings::from_env(&env_for(&url, extra)).expect("valid test settings");
    let app = Application::build(settings).await.expect("build auth");
    let base = format!("http://127.0.0.1:{}", app.port());
    tokio::spawn(app.run_until_stopped());
    TestApp {
        base,
        proxy,
        db,
        http: testkit::http::client(),
    }
}

/// Another auth instance on `app`'s database.
pub async fn spawn_auth_replica(app: &TestApp, extra: &[(String, String)]) -> Peer {
    let url = testkit::postgres::as_role(app.db.url(), "auth_svc");
    let settings = Settings::from_env(&env_for(&url, extra)).expect("valid test settings");
    let replica = Application::build(settings)
        .await
        .expect("build auth replica");
    let base = format!("http://127.0.0.1:{}", replica.port());
    tokio::spawn(replica.run_until_stopped());
    Peer { base }
}

/// nutrition-api on `app`'s database, with the same secret.
pub async fn spawn_nutrition(app: &TestApp) -> Peer {
    spawn_nutrition_with(app, &[]).await
}

/// [`spawn_nutrition`] with extra settings.
pub async fn spawn_nutrition_with(app: &TestApp, extra: &[(String, String)]) -> Peer {
    let settings = nutrition_api::Settings::from_env(&env_for(
        &testkit::postgres::as_role(app.db.url(), "nutrition_api_svc"),
        extra,
    ))
    .expect("valid settings");
    let api = nutrition_api::Application::build(settings)
        .await
        .expect("build nutrition-api");
    let base = format!("http://127.0.0.1:{}", api.port());
    tokio::spawn(api.run_until_stopped());
    Peer { base }
}

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: HeaderMap,
    pub text: String,
    pub body: Value,
}

impl Resp {
    pub fn set_cookies(&self) -> Vec<String> {
        self.headers
            .get_all(SET_COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(str::to_owned)
            .collect()
    }

    /// The full `Set-Cookie` of the session cookie, if the response sets it.
    pub fn session_set_cookie(&self) -> Option<String> {
        self.set_cookies()
            .into_iter()
            .find(|c| c.starts_with(&format!("{COOKIE}=")))
    }

    /// `name=value` of the session cookie, as a browser would send it back.
    pub fn session_cookie(&self) -> Option<String> {
        self.session_set_cookie()
            .and_then(|c| c.split(';').next().map(str::to_owned))
    }

    /// Asserts `seen == expected` about this answer, showing its text if not.
    #[track_caller]
    fn assert_shows<T: PartialEq + std::fmt::Debug>(&self, seen: &T, expected: &T) {
        assert_eq!(seen, expected, "{}", self.text);
    }

    /// Asserts better-auth's plain success: 200 with `{"status": true}`.
    #[track_caller]
    pub fn assert_status_true(&self) {
        let expected = serde_json::json!({ "status": true });
        self.assert_shows(&(self.status, &self.body), &(200, &expected));
    }

    /// Asserts the email-OTP routes' plain success: 200 with `{"success": true}`.
    #[track_caller]
    pub fn assert_success_true(&self) {
        let expected = serde_json::json!({ "success": true });
        self.assert_shows(&(self.status, &self.body), &(200, &expected));
    }

    /// Asserts that this is the refusal `status` with the error `code`.
    #[track_caller]
    pub fn assert_refused(&self, status: u16, code: &str) {
        self.assert_shows(&self.status_and_code(), &(status, Some(code)));
    }

    /// The id of the user in this answer (sign-up, sign-in, session).
    pub fn user_id(&self) -> String {
        self.body["user"]["id"].as_str().expect("id").to_owned()
    }

    /// The status with the error body's `code`, to compare in one assertion.
    pub fn status_and_code(&self) -> (u16, Option<&str>) {
        (self.status, self.body["code"].as_str())
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }
}

/// Sends a hand-built request (one the JSON helpers below cannot express) and reads its answer.
pub async fn send(req: reqwest::RequestBuilder) -> Resp {
    read(req.send().await.expect("request")).await
}

pub async fn read(resp: reqwest::Response) -> Resp {
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let text = resp.text().await.unwrap_or_default();
    let body = serde_json::from_str(&text).unwrap_or(Value::Null);
    Resp {
        status,
        headers,
        text,
        body,
    }
}

/// Awaits `requests` together and asserts that exactly one of them succeeded; answers every
/// response and the statuses (in the order of `requests`).
pub async fn only_one_succeeds<F>(requests: impl IntoIterator<Item = F>) -> (Vec<Resp>, Vec<u16>)
where
    F: std::future::Future<Output = Resp>,
{
    let answers = futures_util::future::join_all(requests).await;
    let statuses: Vec<u16> = answers.iter().map(|r| r.status).collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    (answers, statuses)
}

/// Request helpers against any service base URL. A cookie-carrying write gets the trusted
/// `Origin`, as a browser on the site would send.
pub async fn post_json(
    http: &reqwest::Client,
    url: &str,
    body: &Value,
    cookie: Option<&str>,
) -> Resp {
    let mut req = http.post(url).json(body);
    if let Some(c) = cookie {
        req = req.header("cookie", c).header("origin", BASE_URL);
    }
    read(req.send().await.expect("POST")).await
}

pub async fn get(http: &reqwest::Client, url: &str, cookie: Option<&str>) -> Resp {
    let mut req = http.get(url);
    if let Some(c) = cookie {
        req = req.header("cookie", c);
    }
    read(req.send().await.expect("GET")).await
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn post(&self, path: &str, body: Value, cookie: Option<&str>) -> Resp {
        post_json(&self.http, &self.url(path), &body, cookie).await
    }

    pub async fn get(&self, path: &str, cookie: Option<&str>) -> Resp {
        get(&self.http, &self.url(path), cookie).await
    }

    /// Signs a new user up; returns the session cookie pair and the response.
    pub async fn sign_up(&self, email: &str, password: &str) -> (String, Resp) {
        let resp = self.try_sign_up("Test User", email, password).await;
        assert_eq!(resp.status, 200, "sign-up failed: {}", resp.text);
        let cookie = resp
            .session_cookie()
            .expect("sign-up sets the session cookie");
        (cookie, resp)
    }

    /// Signs a new user up with a session a day old, no longer fresh enough for sensitive
    /// changes without the password; returns the cookie pair and the user's id.
    pub async fn sign_up_stale(&self, email: &str, password: &str) -> (String, String) {
        let (cookie, signed_up) = self.sign_up(email, password).await;
        let id = signed_up.user_id();
        self.age_sessions(&id, "created_at", "25 hours");
        (cookie, id)
    }

    /// `POST /api/auth/sign-up/email`, with no cookie, whatever the answer.
    pub async fn try_sign_up(&self, name: &str, email: &str, password: &str) -> Resp {
        let person = serde_json::json!({ "name": name, "email": email, "password": password });
        self.post("/api/auth/sign-up/email", person, None).await
    }

    /// `POST /api/auth/sign-in/email`, with no cookie.
    pub async fn sign_in(&self, email: &str, password: &str) -> Resp {
        let credentials = serde_json::json!({ "email": email, "password": password });
        self.post("/api/auth/sign-in/email", credentials, None)
            .await
    }

    /// Signs an existing user in; returns the new session's cookie pair.
    pub async fn sign_in_cookie(&self, email: &str, password: &str) -> String {
        let resp = self.sign_in(email, password).await;
        assert_eq!(resp.status, 200, "sign-in failed: {}", resp.text);
        resp.session_cookie()
            .expect("sign-in sets the session cookie")
    }

    /// `POST /api/auth/reset-password` with a token from a reset link.
    pub async fn reset_password(&self, token: &str, new_password: &str) -> Resp {
        let reset = serde_json::json!({ "newPassword": new_password, "token": token });
        self.post("/api/auth/reset-password", reset, None).await
    }

    /// `POST /api/auth/request-password-reset` for `email`, with no cookie.
    pub async fn request_password_reset(&self, email: &str) -> Resp {
        let request = serde_json::json!({ "email": email });
        self.post("/api/auth/request-password-reset", request, None)
            .await
    }

    /// `POST /api/auth/send-verification-email` for `email`.
    pub async fn send_verification_email(&self, email: &str, cookie: Option<&str>) -> Resp {
        let request = serde_json::json!({ "email": email });
        self.post("/api/auth/send-verification-email", request, cookie)
            .await
    }

    /// `POST /api/auth/confirm-password`.
    pub async fn confirm_password(&self, password: &str, cookie: Option<&str>) -> Resp {
        let proof = serde_json::json!({ "password": password });
        self.post("/api/auth/confirm-password", proof, cookie).await
    }

    /// `POST /api/auth/change-password`, without `revokeOtherSessions`.
    pub async fn change_password(&self, current: &str, new: &str, cookie: &str) -> Resp {
        let change = serde_json::json!({ "currentPassword": current, "newPassword": new });
        self.post("/api/auth/change-password", change, Some(cookie))
            .await
    }

    /// `POST /api/auth/delete-user` with `body` (a password, a callback, or nothing).
    pub async fn delete_user(&self, body: Value, cookie: &str) -> Resp {
        self.post("/api/auth/delete-user", body, Some(cookie)).await
    }

    /// `POST /api/auth/sign-in/social` for `provider`, with no cookie.
    pub async fn sign_in_social(&self, provider: &str) -> Resp {
        let start = serde_json::json!({ "provider": provider });
        self.post("/api/auth/sign-in/social", start, None).await
    }

    pub fn sql(&self, query: &str) -> usize {
        use diesel::RunQueryDsl;
        let mut conn = self.db.connect();
        diesel::sql_query(query).execute(&mut conn).expect("sql")
    }

    /// Moves `column` (`created_at`, `proven_at`) of every session of `user_id` back by
    /// `interval` (SQL, e.g. `25 hours`), as if that much time had passed.
    pub fn age_sessions(&self, user_id: &str, column: &str, interval: &str) {
        self.sql(&format!(
            "UPDATE auth.session SET {column} = now() - interval '{interval}' WHERE user_id = '{user_id}'"
        ));
    }

    /// One text value from the database.
    pub fn scalar(&self, query: &str) -> Option<String> {
        use diesel::RunQueryDsl;
        #[derive(diesel::QueryableByName)]
        struct V {
            #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
            v: Option<String>,
        }
        let mut conn = self.db.connect();
        diesel::sql_query(query)
            .get_result::<V>(&mut conn)
            .ok()
            .and_then(|r| r.v)
    }

    pub fn count(&self, table: &str) -> i64 {
        self.scalar(&format!("SELECT count(*)::text AS v FROM {table}"))
            .and_then(|v| v.parse().ok())
            .unwrap_or(-1)
    }
}
