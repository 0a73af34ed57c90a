//! Building the HTTP server: the same code path for `main` and for tests, which pass port 0.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::web;
use mailer::{Mailer, SenderReadiness, SmtpSettings};
use service_kit::db::PoolReadiness;
use service_kit::metrics::OutboxState;

use crate::clock::{SharedClock, SystemClock};
use crate::db;
use crate::lease::SigningRing;
use crate::mail::MailerOptions;
use crate::releases::Builds;
use crate::repo::outbox::MysqlOutbox;
use crate::routes::{self, AppState};
use crate::settings::Settings;
use crate::tokens::KeyRing;

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
        let mailer = Mailer::start(
            MysqlOutbox { pool: pool.clone() },
            &SmtpSettings {
                url: settings.smtp_url.clone(),
                from: settings.mail_from.clone(),
            },
            options.mailer,
        )?;
        let readiness = Arc::new(SenderReadiness {
            inner: Arc::new(PoolReadiness(pool.clone())),
            health: mailer.health(),
        });

        let limits = settings.http;
        crate::direct::register_metrics();
        let per_worker = usize::try_from(settings.pool_size)
            .unwrap_or(1)
            .div_ceil(limits.workers.get());
        let direct =
            match crate::direct::Target::for_url(settings.database_url.expose(), per_worker) {
                Ok(target) => Some(target),
                Err(why) => {
                    tracing::info!(%why, "validate and consume use the pool only");
                    None
                }
            };
        let state = AppState {
            keys: Arc::new(KeyRing::new(&settings.jwt_keys)),
            signing: Arc::new(SigningRing::new(settings.signing_keys.clone())),
            builds: Builds::new(settings.builds_dir.clone()),
            settings: Arc::new(settings),
            pool: pool.clone(),
            clock: options.clock,
            mail: mailer.clone(),
            permits: Arc::default(),
        };
        let docs = service_kit::openapi::Docs::new(&crate::openapi::document());
        let metrics = service_kit::metrics::ServiceMetrics::new();
        metrics.pool(pool.clone());
        mailer::export_metrics(&metrics, "email", mailer.health());
        metrics.outbox("email", {
            let pool = pool.clone();
            move || email_outbox_state(&pool)
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
                    .app_data(web::Data::new(crate::direct::Direct::new(direct.as_ref())))
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

/// Depth and oldest age of the e-mails not yet sent nor given up, for `/metrics`.
fn email_outbox_state(pool: &db::MyPool) -> Result<OutboxState, String> {
    use diesel::RunQueryDsl;
    use diesel::sql_types::{BigInt, Double};

    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = BigInt)]
        pending: i64,
        #[diesel(sql_type = Double)]
        age: f64,
    }
    let mut conn = pool
        .get_timeout(Duration::from_secs(1))
        .map_err(|e| e.to_string())?;
    let row: Row = diesel::sql_query(
        "SELECT COUNT(*) AS pending,
                CAST(COALESCE(TIMESTAMPDIFF(MICROSECOND, MIN(created_at), UTC_TIMESTAMP(6)), 0) / 1e6 AS DOUBLE) AS age
           FROM email_outbox
          WHERE sent_at IS NULL AND gave_up_at IS NULL",
    )
    .get_result(&mut conn)
    .map_err(|e| e.to_string())?;
    Ok(OutboxState {
        pending: row.pending,
        oldest_age_seconds: row.age.max(0.0),
    })
}
