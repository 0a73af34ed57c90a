use licence_server::{Application, Settings};
use service_kit::Env;
use testkit::mariadb::TestMariaDb;
use testkit::proxy::TcpProxy;

pub const KEY: &str = "test-signing-key-0123456789abcdef-0123";

/// The settings every test starts from, with the database at `database_url`.
pub fn base_env(database_url: &str, builds_dir: &str) -> Vec<(String, String)> {
    [
        ("DATABASE_URL", database_url),
        ("DATABASE_POOL_SIZE", "4"),
        ("LISTEN_ADDR", "127.0.0.1:0"),
        ("PUBLIC_BASE_URL", "http://127.0.0.1:8083"),
        ("LICENCE_JWT_KEYS", &format!("k1:{KEY}")),
        ("DOWNLOAD_SIGNING_SECRET", KEY),
        ("BUILDS_DIR", builds_dir),
        ("PAYMENT_WEBHOOK_SECRET", "webhook-secret-0123456789"),
        ("PAYMENT_VARIANT_BASIC", "1001"),
        ("PAYMENT_VARIANT_PRO", "1002"),
        ("PAYMENT_VARIANT_PREMIUM", "1003"),
        ("PAYMENT_VARIANT_ANNUAL", "1004"),
        ("SMTP_URL", "smtp://127.0.0.1:2525"),
        ("MAIL_FROM", "Licences <licences@example.com>"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect()
}

/// A running licence-server on a fresh, migrated database reached through a cuttable proxy.
pub struct TestApp {
    pub base: String,
    pub proxy: TcpProxy,
    pub db: TestMariaDb,
}

pub async fn spawn_app() -> TestApp {
    let db = TestMariaDb::migrated(licence_server::db::migrate);
    let upstream = testkit::socket_addr_of(db.url()).expect("database address");
    let proxy = TcpProxy::start(upstream).await.expect("start proxy");
    let url = testkit::with_host_port(db.url(), proxy.addr());
    let builds = std::env::temp_dir().to_string_lossy().into_owned();
    let settings =
        Settings::from_env(&Env::from_pairs(base_env(&url, &builds))).expect("valid test settings");
    let app = Application::build(settings)
        .await
        .expect("build licence-server");
    let base = format!("http://127.0.0.1:{}", app.port());
    tokio::spawn(app.run_until_stopped());
    TestApp { base, proxy, db }
}
