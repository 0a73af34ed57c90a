//! The scheduler process: its health and readiness endpoints, built the same way for `main` and
//! for tests, which pass port 0.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::web;
use pg_store::{PgPool, PoolReadiness};

use crate::settings::Settings;

/// The scheduler for these settings; `None` when push is off.
pub fn scheduler(
    settings: &Settings,
    pool: &pg_store::PgPool,
) -> anyhow::Result<Option<crate::Scheduler>> {
    let Some(vapid) = settings.push.vapid.clone() else {
        return Ok(None);
    };
    let sender = push::Sender::with_options(
        vapid,
        push::SenderOptions {
            policy: settings.push.endpoints.clone(),
            ..push::SenderOptions::default()
        },
    )?;
    // Each sender holds a pooled connection; leave two for the sends that outlast their batch
    // (the keeper's, `deliver::Keeper`) and two for runs and the probe.
    let workers = usize::try_from(settings.server.pool_size.saturating_sub(4).max(1)).unwrap_or(1);
    Ok(Some(crate::Scheduler::new(pool.clone(), sender, workers)))
}

/// How long start-up waits for Postgres before giving up.
pub const DATABASE_WAIT: Duration = Duration::from_secs(60);

/// How long a stopping `serve` waits for the senders to settle what they hold: longer than one
/// send may take, so that every message in flight is recorded.
pub const STOP_GRACE: Duration = Duration::from_secs(15);

pub struct Application {
    port: u16,
    server: Server,
    /// The running scheduler and how to stop it; `None` when push is off.
    scheduler: Option<(Arc<crate::deliver::Shutdown>, tokio::task::JoinHandle<()>)>,
}

/// What handlers share.
#[derive(Clone)]
pub struct AppState {
    pub settings: Arc<Settings>,
    pub pool: PgPool,
}

service_kit::service!(
    Application,
    settings: crate::settings,
    document: crate::openapi::document,
    migrate: |url| pg_store::connect_and_migrate(url, DATABASE_WAIT),
);

impl Application {
    /// Migrates the database, binds `settings.server.listen_addr` and prepares the server.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let pool = pg_store::start(
            &settings.server.database_url,
            settings.server.pool_size,
            DATABASE_WAIT,
        )
        .await?;
        let scheduler = match scheduler(&settings, &pool)? {
            Some(s) => {
                let shutdown = s.shutdown();
                Some((shutdown, tokio::spawn(s.serve())))
            }
            None => {
                tracing::warn!("push is off (no VAPID keys): no job runs and nothing is sent");
                None
            }
        };
        let listener = TcpListener::bind(settings.server.listen_addr)?;
        let port = listener.local_addr()?.port();
        let limits = settings.server.http;
        let state = AppState {
            settings: Arc::new(settings),
            pool: pool.clone(),
        };
        let docs = service_kit::openapi::Docs::new(&crate::openapi::document());
        let metrics = service_kit::metrics::ServiceMetrics::new();
        metrics.pool(pool.clone());
        metrics.outbox("push", {
            let pool = pool.clone();
            move || pg_store::outbox::state(&pool, "FROM scheduler.outbox WHERE status = 'pending'")
        });
        crate::deliver::register_metrics();
        let server = service_kit::http::server_with(
            listener,
            Arc::new(PoolReadiness(pool)),
            metrics,
            limits,
            move |cfg| {
                cfg.app_data(web::Data::new(state.clone()))
                    .configure(service_kit::openapi::mount(docs.clone()));
            },
        )?;
        tracing::info!(port, "push-scheduler health endpoints listening");
        Ok(Self {
            port,
            server,
            scheduler,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Serves until SIGTERM or SIGINT. Then the scheduler starts no run and takes no message,
    /// the senders finish what they hold (up to [`STOP_GRACE`]), and open requests drain.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let Some((shutdown, serving)) = self.scheduler else {
            return self.server.await;
        };
        let on_signal = {
            let shutdown = Arc::clone(&shutdown);
            tokio::spawn(async move {
                service_kit::cli::stop_signal().await;
                shutdown.trigger();
            })
        };
        let served = self.server.await;
        shutdown.trigger();
        on_signal.abort();
        if tokio::time::timeout(STOP_GRACE, serving).await.is_err() {
            tracing::warn!("senders still busy when stopping; their messages stay queued");
        }
        served
    }
}
