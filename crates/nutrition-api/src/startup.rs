//! Building the HTTP server: the same code path for `main` and for tests, which pass port 0.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::{HttpRequest, web};
use chrono::Utc;
use session::{SessionError, SessionLayer};

use crate::repo::Repo;
use crate::repo::db::{Gauges, Target, TargetReadiness};

use crate::settings::Settings;
use crate::state::{AppState, TestPushes};

/// Largest request body: a full meal plan (62 days of 8 slots with titles) is about 130 KiB.
const BODY_LIMIT: usize = 256 * 1024;

/// How long start-up waits for Postgres before giving up.
pub const DATABASE_WAIT: Duration = Duration::from_secs(60);

/// Test-push sends this process has in flight at most, whoever asked.
pub const TEST_PUSH_SENDS: usize = 16;
/// How long one test send may take: the whole test push must end inside the 10 s drain.
const TEST_SEND_TIMEOUT: Duration = Duration::from_secs(5);

pub struct Application {
    port: u16,
    server: Server,
    test_pushes: Arc<TestPushes>,
}

service_kit::service!(Application, settings: crate::settings, document: crate::openapi::document,
    migrate: |url| pg_store::connect_and_migrate(url, DATABASE_WAIT));

impl Application {
    /// Migrates the database (synchronous diesel on a connection of its own, the only statements
    /// not sent through [`Repo`]), binds `settings.server.listen_addr` and prepares the server.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let url = settings.server.database_url.clone();
        let applied =
            tokio::task::spawn_blocking(move || pg_store::connect_and_migrate(&url, DATABASE_WAIT))
                .await??;
        if !applied.is_empty() {
            tracing::info!(?applied, "applied database migrations");
        }
        // Refused before anything binds: there is no other way to the database at run time.
        let target = Target::for_url(settings.server.database_url.expose()).map_err(|reason| {
            anyhow::anyhow!(
                "DATABASE_URL: nutrition-api's driver cannot follow it as libpq would: {reason}"
            )
        })?;
        let listener = TcpListener::bind(settings.server.listen_addr)?;
        let port = listener.local_addr()?.port();
        let layer = SessionLayer::with_lookup(
            Arc::new(settings.auth.clone()),
            Arc::new(|req: &HttpRequest, token: String| {
                let repo = req.app_data::<web::Data<Repo>>().cloned();
                Box::pin(async move {
                    let repo = repo.ok_or_else(|| {
                        SessionError::Internal("the repository is not registered".into())
                    })?;
                    Ok(crate::repo::session::verify(&repo, &token, Utc::now()).await?)
                })
            }),
        );
        let catalogue = domain::recipes::Catalogue::load()
            .map_err(|e| anyhow::anyhow!("recipe catalogue: {e}"))?;
        let push = match &settings.push.vapid {
            Some(vapid) => Some(push::Sender::with_timeout(
                vapid.clone(),
                settings.push.allow_http_endpoints,
                TEST_SEND_TIMEOUT,
            )?),
            None => {
                tracing::info!("push is off: no VAPID keys configured");
                None
            }
        };
        let limits = settings.server.http;
        // DATABASE_POOL_SIZE is the process's: each worker has its share.
        let per_worker = (settings.server.pool_size as usize).div_ceil(limits.workers.get());
        let docs = service_kit::openapi::Docs::new(&crate::openapi::document());
        let test_pushes = Arc::new(TestPushes::new(TEST_PUSH_SENDS));
        let state = AppState {
            settings: Arc::new(settings),
            catalogue: Arc::new(catalogue),
            push,
            test_pushes: Arc::clone(&test_pushes),
        };
        let metrics = service_kit::metrics::ServiceMetrics::new();
        let gauges = Gauges::default();
        metrics.pool_state({
            let gauges = gauges.clone();
            move || gauges.state()
        });
        let server = service_kit::http::server_with(
            listener,
            Arc::new(TargetReadiness(target.clone())),
            metrics,
            limits,
            move |cfg| {
                cfg.app_data(web::Data::new(state.clone()))
                    // Made here, so once per worker thread: its connections are that worker's own.
                    .app_data(web::Data::new(Repo::new(
                        target.clone(),
                        per_worker,
                        &gauges,
                    )))
                    .app_data(service_kit::http::BodyLimit(BODY_LIMIT))
                    .app_data(web::Data::new(layer.clone()))
                    .configure(service_kit::openapi::mount(docs.clone()))
                    .configure(crate::routes::config);
            },
        )?;
        tracing::info!(port, "nutrition-api listening");
        Ok(Self {
            port,
            server,
            test_pushes,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Serves until SIGTERM or SIGINT, then drains open requests; test pushes under way start no
    /// further send and answer with what they have.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let test_pushes = Arc::clone(&self.test_pushes);
        let on_signal = tokio::spawn(async move {
            service_kit::cli::stop_signal().await;
            test_pushes.stop();
        });
        let served = self.server.await;
        on_signal.abort();
        served
    }
}
