//! The scheduler process: its health and readiness endpoints, built the same way for `main` and
//! for tests, which pass port 0.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::web;
use nutrition_store::{PgPool, PoolReadiness};

use crate::settings::Settings;

/// The scheduler for these settings; `None` when push is off.
pub fn scheduler(
    settings: &Settings,
    pool: &nutrition_store::PgPool,
) -> anyhow::Result<Option<crate::Scheduler>> {
    let Some(vapid) = settings.vapid.clone() else {
        return Ok(None);
    };
    let sender = push::Sender::new(vapid, settings.allow_http_endpoints)?;
    // Each send in flight holds a pooled connection; leave two for runs and the probe.
    let workers = usize::try_from(settings.pool_size.saturating_sub(2).max(1)).unwrap_or(1);
    Ok(Some(crate::Scheduler::new(pool.clone(), sender, workers)))
}

/// How long start-up waits for Postgres before giving up.
pub const DATABASE_WAIT: Duration = Duration::from_secs(60);

pub struct Application {
    port: u16,
    server: Server,
}

/// What handlers share.
#[derive(Clone)]
pub struct AppState {
    pub settings: Arc<Settings>,
    pub pool: PgPool,
}

impl Application {
    /// Migrates the database, binds `settings.listen_addr` and prepares the server.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let pool =
            nutrition_store::start(&settings.database_url, settings.pool_size, DATABASE_WAIT)
                .await?;
        match scheduler(&settings, &pool)? {
            Some(s) => {
                tokio::spawn(s.serve());
            }
            None => tracing::warn!("push is off (no VAPID keys): no job runs and nothing is sent"),
        }
        let listener = TcpListener::bind(settings.listen_addr)?;
        let port = listener.local_addr()?.port();
        let state = AppState {
            settings: Arc::new(settings),
            pool: pool.clone(),
        };
        let server =
            service_kit::http::server(listener, Arc::new(PoolReadiness(pool)), move |cfg| {
                cfg.app_data(web::Data::new(state.clone()));
            })?;
        tracing::info!(port, "push-scheduler health endpoints listening");
        Ok(Self { port, server })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Serves until SIGTERM or SIGINT, then drains open requests.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        self.server.await
    }
}
