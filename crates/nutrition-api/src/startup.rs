//! Building the HTTP server: the same code path for `main` and for tests, which pass port 0.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::web;
use nutrition_store::PoolReadiness;
use session::SessionLayer;

use crate::settings::Settings;
use crate::state::AppState;

/// Largest request body: a full meal plan (62 days of 8 slots with titles) is about 130 KiB.
const BODY_LIMIT: usize = 256 * 1024;

/// How long start-up waits for Postgres before giving up.
pub const DATABASE_WAIT: Duration = Duration::from_secs(60);

pub struct Application {
    port: u16,
    server: Server,
}

impl Application {
    /// Migrates the database, binds `settings.listen_addr` and prepares the server.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let pool =
            nutrition_store::start(&settings.database_url, settings.pool_size, DATABASE_WAIT)
                .await?;
        let listener = TcpListener::bind(settings.listen_addr)?;
        let port = listener.local_addr()?.port();
        let layer = SessionLayer {
            settings: Arc::new(settings.auth.clone()),
            pool: pool.clone(),
        };
        let catalogue = domain::recipes::Catalogue::load()
            .map_err(|e| anyhow::anyhow!("recipe catalogue: {e}"))?;
        let push = match &settings.vapid {
            Some(vapid) => Some(push::Sender::new(
                vapid.clone(),
                settings.allow_http_endpoints,
            )?),
            None => {
                tracing::info!("push is off: no VAPID keys configured");
                None
            }
        };
        let state = AppState {
            settings: Arc::new(settings),
            pool: pool.clone(),
            catalogue: Arc::new(catalogue),
            push,
        };
        let server =
            service_kit::http::server(listener, Arc::new(PoolReadiness(pool)), move |cfg| {
                cfg.app_data(web::Data::new(state.clone()))
                    .app_data(service_kit::http::BodyLimit(BODY_LIMIT))
                    .app_data(web::Data::new(layer.clone()))
                    .configure(crate::routes::config);
            })?;
        tracing::info!(port, "nutrition-api listening");
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
