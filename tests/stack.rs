//! The whole stack as it runs in production, minus containers: the four service binaries as
//! processes on fresh databases, behind nginx configured from `deploy/nginx.local.conf.template`.

use std::time::Duration;

use testkit::http::{get_json, wait_for_status};
use testkit::mariadb::TestMariaDb;
use testkit::postgres::TestPostgres;
use testkit::stack::{Nginx, Process, ScratchDir, bin, free_port};

const SECRET: &str = "e2e-secret-0123456789abcdef-0123456789";
const KEY: &str = "e2e-signing-key-0123456789abcdef-01234";

struct Stack {
    nginx: Nginx,
    auth: Process,
    nutrition: Process,
    scheduler: Process,
    licence: Process,
    ports: [u16; 4],
    _pg: TestPostgres,
    _my: TestMariaDb,
    _dir: ScratchDir,
}

async fn start_stack() -> Stack {
    let pg = TestPostgres::empty();
    let my = TestMariaDb::empty();
    let dir = ScratchDir::new("stack");
    let logs = dir.path();
    let ports = [free_port(), free_port(), free_port(), free_port()];
    let addr = |i: usize| format!("127.0.0.1:{}", ports[i]);
    let (a, n, s, l) = (addr(0), addr(1), addr(2), addr(3));
    let keys = format!("k1:{KEY}");
    let builds = logs.to_string_lossy().into_owned();
    let auth_env = [
        ("DATABASE_URL", pg.url()),
        ("LISTEN_ADDR", a.as_str()),
        ("AUTH_SECRET", SECRET),
        ("AUTH_BASE_URL", "http://localhost:8080"),
    ];
    let nutrition_env = [
        ("DATABASE_URL", pg.url()),
        ("LISTEN_ADDR", n.as_str()),
        ("AUTH_SECRET", SECRET),
        ("AUTH_BASE_URL", "http://localhost:8080"),
    ];
    let scheduler_env = [("DATABASE_URL", pg.url()), ("LISTEN_ADDR", s.as_str())];
    let licence_env = [
        ("DATABASE_URL", my.url()),
        ("LISTEN_ADDR", l.as_str()),
        ("PUBLIC_BASE_URL", "http://localhost:8080"),
        ("LICENCE_JWT_KEYS", keys.as_str()),
        ("DOWNLOAD_SIGNING_SECRET", KEY),
        ("BUILDS_DIR", builds.as_str()),
        ("PAYMENT_WEBHOOK_SECRET", "e2e-webhook-secret-0123"),
        ("PAYMENT_VARIANT_BASIC", "1"),
        ("PAYMENT_VARIANT_PRO", "2"),
        ("PAYMENT_VARIANT_PREMIUM", "3"),
        ("PAYMENT_VARIANT_ANNUAL", "4"),
        ("SMTP_URL", "smtp://127.0.0.1:2525"),
        ("MAIL_FROM", "Licences <licences@example.com>"),
    ];
    // The three Postgres services start together on an empty database: whichever wins the
    // advisory lock migrates, the others wait and find nothing to do.
    let auth = Process::start("auth", &bin("auth"), &[], &auth_env, logs);
    let nutrition = Process::start(
        "nutrition-api",
        &bin("nutrition-api"),
        &[],
        &nutrition_env,
        logs,
    );
    let scheduler = Process::start(
        "push-scheduler",
        &bin("push-scheduler"),
        &["serve"],
        &scheduler_env,
        logs,
    );
    let licence = Process::start(
        "licence-server",
        &bin("licence-server"),
        &[],
        &licence_env,
        logs,
    );
    for (name, port) in ["auth", "nutrition-api", "push-scheduler", "licence-server"]
        .iter()
        .zip(ports)
    {
        let status = wait_for_status(
            &format!("http://127.0.0.1:{port}/ready"),
            200,
            Duration::from_secs(60),
        )
        .await;
        assert_eq!(status, Some(200), "{name} never became ready");
    }
    let nginx = Nginx::start(&a, &n, &l);
    Stack {
        nginx,
        auth,
        nutrition,
        scheduler,
        licence,
        ports,
        _pg: pg,
        _my: my,
        _dir: dir,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn services_answer_behind_nginx_and_stop_cleanly_on_sigterm() {
    let mut stack = start_stack().await;
    let base = stack.nginx.base();

    // auth through nginx.
    let (status, body) = get_json(&format!("{base}/api/auth/ok")).await;
    assert_eq!(
        (status, &body),
        (200, &serde_json::json!({ "ok": true })),
        "{}",
        stack.auth.log()
    );

    // licence-server's historical health route through nginx.
    let (status, body) = get_json(&format!("{base}/api/health")).await;
    assert_eq!(status, 200, "{body}");

    // /me reaches nutrition-api: the service's own answer while it runs, nginx's 503 once it stops.
    let (status, body) = get_json(&format!("{base}/me")).await;
    assert_ne!(status, 503, "{body}");
    assert!(
        body["code"].is_string(),
        "nutrition-api answers in the contract's shape: {body}"
    );

    // Routes the proxy does not know, and the services' internal probes, are not exposed.
    for path in ["/ready", "/health", "/api/nothing"] {
        let (status, body) = get_json(&format!("{base}{path}")).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (404, Some("NOT_FOUND")),
            "{path}"
        );
    }

    // SIGTERM: each service drains and exits 0.
    for process in [
        &mut stack.nutrition,
        &mut stack.auth,
        &mut stack.scheduler,
        &mut stack.licence,
    ] {
        let status = process.terminate(Duration::from_secs(20));
        let name = process.name().to_owned();
        assert!(
            status.is_some_and(|s| s.success()),
            "{name} did not exit 0 on SIGTERM: {status:?}\n{}",
            process.log()
        );
    }
    let (status, body) = get_json(&format!("{base}/me")).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (503, Some("SERVICE_UNAVAILABLE")),
        "nginx reports the stopped upstream"
    );
    for port in stack.ports {
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
            "port {port} still open"
        );
    }
}
