//! Building the HTTP server: the same code path for `main` and for tests, which pass port 0.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::web;
use mailer::{Mailer, SenderReadiness, SmtpSettings};

use crate::clock::{SharedClock, SystemClock};
use crate::db;
use crate::lease::SigningRing;
use crate::mail::MailerOptions;
use crate::releases::Builds;
use crate::repo::Db;
use crate::repo::outbox::MysqlOutbox;
use crate::routes::{self, AppState};
use crate::settings::Settings;
use crate::tokens::KeyRing;

/// The connections of the e-mail sender, `/ready` and `/metrics`, beside the workers'.
const OUTBOX_CONNECTIONS: usize = 2;

/// How long start-up waits for MariaDB before giving up.
pub const DATABASE_WAIT: Duration = Duration::from_secs(60);

pub struct Application {
    port: u16,
    server: Server,
    mailer: Mailer,
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

service_kit::service!(
    Application,
    settings: crate::settings,
    document: crate::openapi::document,
    migrate: |url| crate::db::connect_and_migrate(url, DATABASE_WAIT),
);

impl Application {
    /// Migrates the database, binds `settings.server.listen_addr` and prepares the server.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        Self::build_with(settings, Options::default()).await
    }

    pub async fn build_with(settings: Settings, options: Options) -> anyhow::Result<Self> {
        // A URL this client cannot follow stops the start before anything is changed.
        let opts = db::connect_options(&settings.server.database_url)?;
        let url = settings.server.database_url.clone();
        let applied =
            tokio::task::spawn_blocking(move || db::connect_and_migrate(&url, DATABASE_WAIT))
                .await??;
        if !applied.is_empty() {
            tracing::info!(?applied, "applied database migrations");
        }
        let listener = TcpListener::bind(settings.server.listen_addr)?;
        let port = listener.local_addr()?.port();

        // The sender's statements, `/ready` and the outbox's figures run off the workers, on a
        // small pool of their own.
        let outbox = MysqlOutbox::new(db::pool(&opts, OUTBOX_CONNECTIONS))?;
        // SMTP is only contacted when there is mail: an unreachable server delays mail, never
        // the start.
        let mailer = Mailer::start(
            outbox.clone(),
            &SmtpSettings {
                url: settings.smtp_url.clone(),
                from: settings.mail_from.clone(),
            },
            options.mailer,
        )?;
        let readiness = Arc::new(SenderReadiness {
            inner: Arc::new(outbox.clone()),
            health: mailer.health(),
        });

        let limits = settings.server.http;
        // Each worker has its own connections: a connection's socket is driven by the event loop
        // of the thread that opened it.
        let per_worker = usize::try_from(settings.server.pool_size)
            .unwrap_or(1)
            .div_ceil(limits.workers.get());
        let state = AppState {
            keys: Arc::new(KeyRing::new(&settings.jwt_keys)),
            signing: Arc::new(SigningRing::new(settings.signing_keys.clone())),
            builds: Builds::new(settings.builds_dir.clone()),
            settings: Arc::new(settings),
            clock: options.clock,
            mail: mailer.clone(),
            permits: Arc::default(),
        };
        let docs = service_kit::openapi::Docs::new(&crate::openapi::document());
        let metrics = service_kit::metrics::ServiceMetrics::new();
        let pools = service_kit::adb::Pools::default();
        metrics.pool_state({
            let pools = pools.clone();
            move || pools.state()
        });
        mailer::export_metrics(&metrics, "email", mailer.health());
        metrics.outbox("email", {
            let outbox = outbox.clone();
            move || outbox.state().map_err(|e| e.to_string())
        });
        metrics.route_outcomes(
            "licence_quota_consumptions_total",
            "Quota consumptions by outcome (ok: consumed, refused: over quota or not allowed).",
            &["/api/usage/consume"],
        );
        let files = routes::download::file_route(state.clone());
        let server = service_kit::http::server_with_files(
            listener,
            readiness,
            metrics,
            limits,
            Some(files),
            move |cfg| {
                cfg.app_data(web::Data::new(state.clone()))
                    // Called on each worker's thread: its connections are its own.
                    .app_data(web::Data::new(Db::new(
                        pools.register(db::pool(&opts, per_worker)),
                    )))
                    // The desktop app's historical probe; same meaning as /ready.
                    .service(
                        routes::resource("/api/health")
                            .route(web::get().to(service_kit::http::ready)),
                    )
                    .configure(service_kit::openapi::mount(docs.clone()))
                    .configure(routes::config);
            },
        )?;
        tracing::info!(port, "licence-server listening");
        Ok(Self {
            port,
            server,
            mailer,
        })
    }

    /// The e-mail sender: its health for `/ready` and the metrics.
    pub fn mailer(&self) -> &Mailer {
        &self.mailer
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Serves until SIGTERM or SIGINT, then drains open requests and lets the e-mail sender
    /// finish the message it is sending.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let served = self.server.await;
        self.mailer.stop().await;
        served
    }
}
