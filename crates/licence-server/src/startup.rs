//! Building the HTTP server: the same code path for `main` and for tests, which pass port 0.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::web;
use service_kit::db::PoolReadiness;

use crate::clock::{SharedClock, SystemClock};
use crate::db;
use crate::mail::{self, MailWaker, MailerOptions};
use crate::releases::Builds;
use crate::routes::{self, AppState};
use crate::settings::Settings;
use crate::tokens::KeyRing;

/// How long start-up waits for MariaDB before giving up.
pub const DATABASE_WAIT: Duration = Duration::from_secs(60);

pub struct Application {
    port: u16,
    server: Server,
}

/// What production takes from the system and tests choose: the clock and the mail timings.
#[derive(Debug, Clone)]
pub struct Options {
    pub clock: SharedClock,
    pub mailer: MailerOptions,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            clock: Arc::new(SystemClock),
            mailer: MailerOptions::default(),
        }
    }
}

impl Application {
    /// Migrates the database, binds `settings.listen_addr` and prepares the server.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        Self::build_with(settings, Options::default()).await
    }

    pub async fn build_with(settings: Settings, options: Options) -> anyhow::Result<Self> {
        let url = settings.database_url.clone();
        let applied =
            tokio::task::spawn_blocking(move || db::connect_and_migrate(&url, DATABASE_WAIT))
                .await??;
        if !applied.is_empty() {
            tracing::info!(?applied, "applied database migrations");
        }
        let pool = db::pool(&settings.database_url, settings.pool_size);
        let listener = TcpListener::bind(settings.listen_addr)?;
        let port = listener.local_addr()?.port();

        // SMTP is only contacted when there is mail: an unreachable server delays mail, never
        // the start.
        let waker = MailWaker::default();
        mail::spawn_sender(
            pool.clone(),
            &settings.smtp_url,
            settings.mail_from.clone(),
            options.mailer,
            waker.clone(),
        );

        let state = AppState {
            keys: Arc::new(KeyRing::new(&settings.jwt_keys)),
            builds: Builds::new(settings.builds_dir.clone()),
            settings: Arc::new(settings),
            pool: pool.clone(),
            clock: options.clock,
            mail: waker,
        };
        let server =
            service_kit::http::server(listener, Arc::new(PoolReadiness(pool)), move |cfg| {
                cfg.app_data(web::Data::new(state.clone()))
                    // The desktop app's historical probe; same meaning as /ready.
                    .service(
                        routes::resource("/api/health")
                            .route(web::get().to(service_kit::http::ready)),
                    )
                    .configure(routes::config);
            })?;
        tracing::info!(port, "licence-server listening");
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
