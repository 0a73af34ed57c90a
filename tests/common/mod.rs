//! The whole stack as it runs in production, minus containers: the four service binaries as
//! processes on fresh databases, behind nginx configured from `deploy/nginx.local.conf.template`.

use std::time::Duration;

use testkit::http::wait_for_status;
use testkit::mariadb::TestMariaDb;
use testkit::postgres::TestPostgres;
use testkit::stack::{Nginx, Process, ScratchDir, bin, free_port};

pub const SECRET: &str = "e2e-secret-0123456789abcdef-0123456789";
const KEY: &str = "e2e-signing-key-0123456789abcdef-01234";
const DOWNLOAD_KEY: &str = "e2e-download-key-0123456789abcdef-0123";
const WEBHOOK_SECRET: &str = "e2e-webhook-secret-0123";

/// licence-server's settings that every stack in these tests shares: the payment provider's
/// variant per plan and the mail catcher to send licence mail to.
pub const LICENCE_PLANS_AND_MAIL: [(&str, &str); 6] = [
    ("PAYMENT_VARIANT_BASIC", "1"),
    ("PAYMENT_VARIANT_PRO", "2"),
    ("PAYMENT_VARIANT_PREMIUM", "3"),
    ("PAYMENT_VARIANT_ANNUAL", "4"),
    ("SMTP_URL", "smtp://127.0.0.1:2525"),
    ("MAIL_FROM", "Licences <licences@example.com>"),
];

/// A paid order of the Pro plan as the payment provider delivers it to the stack's
/// licence-server: the body and its `X-Signature`.
#[allow(dead_code)]
pub fn signed_purchase(order_id: &str, email: &str, name: &str) -> (String, String) {
    use hmac::{Hmac, Mac};
    use sha2::Sha256;

    let event = serde_json::json!({
        "meta": { "event_name": "order_created" },
        "data": { "type": "orders", "id": order_id, "attributes": {
            "user_email": email, "user_name": name, "status": "paid",
            "first_order_item": { "variant_id": 2 } } }
    })
    .to_string();
    let mut mac = Hmac::<Sha256>::new_from_slice(WEBHOOK_SECRET.as_bytes()).expect("HMAC key");
    mac.update(event.as_bytes());
    let signature = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    (event, signature)
}

// Each test binary includes this module and uses a different part of it.
#[allow(dead_code)]
pub struct Stack {
    pub nginx: Nginx,
    pub auth: Process,
    pub nutrition: Process,
    pub scheduler: Process,
    pub licence: Process,
    pub ports: [u16; 4],
    pub pg: TestPostgres,
    pub my: TestMariaDb,
    /// The public address the services were told, nginx's port on the stack's host name.
    public: String,
    _dir: ScratchDir,
}

#[allow(dead_code)]
impl Stack {
    /// The public address, as a browser sees it.
    pub fn base(&self) -> String {
        self.public.clone()
    }
}

#[allow(dead_code)]
pub async fn start_stack() -> Stack {
    start_stack_with(&[]).await
}

/// The stack with `push_env` (VAPID keys, endpoint rules) added to nutrition-api and push-scheduler.
#[allow(dead_code)]
pub async fn start_stack_with(push_env: &[(&str, &str)]) -> Stack {
    start_stack_full(&[], push_env, None, LOOPBACK).await
}

/// [`start_stack_with`], every service logging at `rust_log` (`RUST_LOG`) when given.
#[allow(dead_code)]
pub async fn start_stack_logging(push_env: &[(&str, &str)], rust_log: Option<&str>) -> Stack {
    start_stack_full(&[], push_env, rust_log, LOOPBACK).await
}

/// The stack with `auth_extra` added to auth (e.g. `SMTP_URL` of a test SMTP server) and
/// `push_env` to nutrition-api and push-scheduler.
#[allow(dead_code)]
pub async fn start_stack_configured(
    auth_extra: &[(&str, &str)],
    push_env: &[(&str, &str)],
) -> Stack {
    start_stack_full(auth_extra, push_env, None, LOOPBACK).await
}

/// [`start_stack_configured`] with the public address `http://localhost:<port>` instead of
/// `http://127.0.0.1:<port>`: the services are told that one (`AUTH_BASE_URL`, licence-server's
/// `PUBLIC_BASE_URL`) and [`Stack::base`] answers it, so a browser opens the stack by that name.
/// For what needs a host name: passkeys, whose relying party is the public host and which no
/// browser offers on an IP address. nginx still listens on 127.0.0.1, where `localhost` resolves.
#[allow(dead_code)]
pub async fn start_stack_on_localhost(
    auth_extra: &[(&str, &str)],
    push_env: &[(&str, &str)],
) -> Stack {
    start_stack_full(auth_extra, push_env, None, "localhost").await
}

/// The host of the public address of every stack but [`start_stack_on_localhost`]'s.
const LOOPBACK: &str = "127.0.0.1";

async fn start_stack_full(
    auth_extra: &[(&str, &str)],
    push_env: &[(&str, &str)],
    rust_log: Option<&str>,
    host: &str,
) -> Stack {
    let pg = TestPostgres::empty();
    let my = TestMariaDb::empty();
    let dir = ScratchDir::new("stack");
    let logs = dir.path();
    let ports = [free_port(), free_port(), free_port(), free_port()];
    let proxy_port = free_port();
    let public = format!("http://{host}:{proxy_port}");
    let addr = |i: usize| format!("127.0.0.1:{}", ports[i]);
    let (a, n, s, l) = (addr(0), addr(1), addr(2), addr(3));
    let keys = format!("k1:{KEY}");
    let builds = logs.to_string_lossy().into_owned();
    // As deployed: the migrate command, as the owner of the schemas, before the services, each
    // of which connects as its own role.
    let migrated = testkit::process::run(
        &bin("nutrition-api"),
        &["migrate"],
        &[("DATABASE_URL", pg.url()), ("RUST_LOG", "warn")],
    );
    assert!(migrated.status.success(), "migrate: {migrated:?}");
    let auth_url = testkit::postgres::as_role(pg.url(), "auth_svc");
    let nutrition_url = testkit::postgres::as_role(pg.url(), "nutrition_api_svc");
    let scheduler_url = testkit::postgres::as_role(pg.url(), "push_scheduler_svc");
    let auth_env = [
        ("DATABASE_URL", auth_url.as_str()),
        ("LISTEN_ADDR", a.as_str()),
        ("AUTH_SECRET", SECRET),
        ("AUTH_BASE_URL", public.as_str()),
        // nginx on loopback tells auth the client's address.
        ("TRUSTED_PROXIES", "127.0.0.1"),
    ];
    let mut nutrition_env = vec![
        ("DATABASE_URL", nutrition_url.as_str()),
        ("LISTEN_ADDR", n.as_str()),
        ("AUTH_SECRET", SECRET),
        ("AUTH_BASE_URL", public.as_str()),
    ];
    nutrition_env.extend_from_slice(push_env);
    let mut scheduler_env = vec![
        ("DATABASE_URL", scheduler_url.as_str()),
        ("LISTEN_ADDR", s.as_str()),
    ];
    scheduler_env.extend_from_slice(push_env);
    let mut licence_env: Vec<_> = [
        ("DATABASE_URL", my.url()),
        ("LISTEN_ADDR", l.as_str()),
        ("PUBLIC_BASE_URL", public.as_str()),
        ("LICENCE_JWT_KEYS", keys.as_str()),
        ("DOWNLOAD_SIGNING_SECRET", DOWNLOAD_KEY),
        ("BUILDS_DIR", builds.as_str()),
        ("PAYMENT_WEBHOOK_SECRET", WEBHOOK_SECRET),
        (
            "LICENCE_SIGNING_KEYS",
            "e2e:lq1Y0hzkQmQ8w2o3nQXGJ4n9yQjY1b3cZ5t1dW8eQeE=",
        ),
    ]
    .into_iter()
    .chain(LICENCE_PLANS_AND_MAIL)
    .collect();
    let mut auth_env = auth_env.to_vec();
    if let Some(level) = rust_log {
        for env in [
            &mut auth_env,
            &mut nutrition_env,
            &mut scheduler_env,
            &mut licence_env,
        ] {
            env.push(("RUST_LOG", level));
        }
    }
    auth_env.extend_from_slice(auth_extra);
    // A stack with a mail catcher sends licence mail there too, so that its links can be followed.
    for (name, value) in auth_extra {
        if *name == "SMTP_URL" {
            licence_env.retain(|(k, _)| *k != "SMTP_URL");
            licence_env.push(("SMTP_URL", value));
        }
    }
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
    let nginx = Nginx::start_on(proxy_port, &a, &n, &l);
    Stack {
        nginx,
        auth,
        nutrition,
        scheduler,
        licence,
        ports,
        pg,
        my,
        public,
        _dir: dir,
    }
}

/// The mail catcher `scripts/stack` runs (maildump, installed by `scripts/test` under
/// `target/mail-catcher`), on free ports: an SMTP server that keeps every mail and lists them as
/// JSON at `/messages/`, so that a test reads a mail as a person reads it on the catcher's page.
#[allow(dead_code)]
pub struct MailCatcher {
    process: Process,
    pub smtp_port: u16,
    pub web_port: u16,
    _dir: ScratchDir,
}

#[allow(dead_code)]
impl MailCatcher {
    pub async fn start() -> Self {
        let bin = std::env::var_os("MAIL_CATCHER_BIN")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../target/mail-catcher/bin/maildump")
            });
        assert!(
            bin.is_file(),
            "{} is missing: scripts/test installs the mail catcher",
            bin.display()
        );
        let dir = ScratchDir::new("mail-catcher");
        let (smtp_port, web_port) = (free_port(), free_port());
        let (smtp, web) = (smtp_port.to_string(), web_port.to_string());
        let process = Process::start(
            "mail-catcher",
            &bin,
            &[
                "--smtp-ip",
                "127.0.0.1",
                "--smtp-port",
                &smtp,
                "--http-ip",
                "127.0.0.1",
                "--http-port",
                &web,
                "--foreground",
            ],
            &[],
            dir.path(),
        );
        let status = wait_for_status(
            &format!("http://127.0.0.1:{web_port}/messages/"),
            200,
            Duration::from_secs(30),
        )
        .await;
        assert_eq!(status, Some(200), "the mail catcher never answered");
        Self {
            process,
            smtp_port,
            web_port,
            _dir: dir,
        }
    }

    pub fn smtp_url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.smtp_port)
    }

    /// The page listing the mails.
    pub fn web(&self) -> String {
        format!("http://127.0.0.1:{}", self.web_port)
    }

    /// The plain text of the newest mail to `to`, waiting for it to arrive.
    pub async fn wait_for_mail_to(&self, to: &str, after: usize) -> String {
        let http = reqwest::Client::new();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let list: serde_json::Value = http
                .get(format!("{}/messages/", self.web()))
                .send()
                .await
                .expect("mail catcher")
                .json()
                .await
                .expect("mail list");
            let ids: Vec<i64> = list["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|m| {
                    m["recipients"]["to"]
                        .as_array()
                        .is_some_and(|to_list| to_list.iter().any(|t| t.as_str() == Some(to)))
                })
                .filter_map(|m| m["id"].as_i64())
                .collect();
            if ids.len() > after {
                let id = ids.iter().max().expect("an id");
                return http
                    .get(format!("{}/messages/{id}.plain", self.web()))
                    .send()
                    .await
                    .expect("mail")
                    .text()
                    .await
                    .expect("mail text");
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no mail to {to} within 30 s\n{}",
                self.process.log()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// The first `http…` address in `text`.
#[allow(dead_code)]
pub fn first_link(text: &str) -> String {
    let start = text.find("http").expect("a link in the mail");
    text[start..]
        .split(|c: char| c.is_whitespace())
        .next()
        .expect("link")
        .to_owned()
}

/// Runs one of the Node scripts under `web/tests` against `base` (the stack's public address),
/// with `extra` in its environment: its output, as `Err` when it failed.
#[allow(dead_code)]
pub fn run_node(script: &str, base: &str, extra: &[(&str, &str)]) -> Result<String, String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../web");
    assert!(
        dir.join("dist/index.html").is_file() && dir.join("node_modules/playwright-core").is_dir(),
        "the web app is not built: run `npm ci && npm run build` in web/ (scripts/test does)"
    );
    let out = std::process::Command::new("node")
        .arg(format!("tests/{script}"))
        .current_dir(dir)
        .env("BASE", base)
        .envs(extra.iter().copied())
        .output()
        .expect("run node");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(text)
    } else {
        Err(text)
    }
}

/// Runs `script` of `tests/node` (better-auth's own client programs) with `args` and `env`: the
/// JSON lines it printed. The test fails when the program does.
#[allow(dead_code)]
pub fn node_client_lines(
    script: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Vec<serde_json::Value> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("node");
    assert!(
        dir.join("node_modules/better-auth").is_dir(),
        "run `npm ci` in tests/node (scripts/test does)"
    );
    let out = std::process::Command::new("node")
        .arg(script)
        .args(args)
        .current_dir(&dir)
        .envs(env.iter().copied())
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{script} {args:?} failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}
