use nutrition_api::{Application, Settings};
use service_kit::Env;
use testkit::postgres::TestPostgres;
use testkit::proxy::TcpProxy;

pub const SECRET: &str = "test-secret-0123456789abcdef-0123456789";

/// A running nutrition-api on a fresh, migrated database reached through a cuttable proxy.
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
        ("AUTH_SECRET", SECRET),
        ("AUTH_BASE_URL", "http://localhost:8080"),
    ]);
    let settings = Settings::from_env(&env).expect("valid test settings");
    let app = Application::build(settings)
        .await
        .expect("build nutrition-api");
    let base = format!("http://127.0.0.1:{}", app.port());
    tokio::spawn(app.run_until_stopped());
    TestApp { base, proxy, db }
}
