//! Building the HTTP server: the same code path for `main` and for tests, which pass port 0.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::web;
use mailer::{Mailer, SenderReadiness};
use pg_store::{PgPool, PoolReadiness};
use service_kit::http::ReadinessProbe;
use session::SessionLayer;

use crate::password;
use crate::repo::outbox::PgOutbox;
use crate::repo::{rate_limits, sessions, verification};
use crate::settings::Settings;
use crate::state::AppState;

/// How long start-up waits for Postgres before giving up.
pub const DATABASE_WAIT: Duration = Duration::from_secs(60);
/// How often expired sessions, OAuth states and rate-limit counters are deleted.
const MAINTENANCE_EVERY: Duration = Duration::from_secs(600);

pub struct Application {
    port: u16,
    server: Server,
    mailer: Option<Mailer>,
}

service_kit::service!(Application, settings: crate::settings, document: crate::openapi::document,
    migrate: |url| pg_store::connect_and_migrate(url, DATABASE_WAIT));

impl Application {
    /// Migrates the database, binds `settings.server.listen_addr` and prepares the server.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        Self::build_with(settings, mailer::Options::default()).await
    }

    /// The same, with the e-mail sender's timings `mail` (tests shorten them).
    pub async fn build_with(settings: Settings, mail: mailer::Options) -> anyhow::Result<Self> {
        let pool = pg_store::start(
            &settings.server.database_url,
            settings.server.pool_size,
            DATABASE_WAIT,
        )
        .await?;
        let decoy_hash: Arc<str> = tokio::task::spawn_blocking(password::decoy).await?.into();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        let hashes = password::HashPool::start(settings.hash_concurrency as usize)?;
        let listener = TcpListener::bind(settings.server.listen_addr)?;
        let port = listener.local_addr()?.port();
        let limits = service_kit::http::Limits {
            blocking_threads: Some(settings.server.pool_size as usize),
            ..settings.server.http
        };
        let mailer = match &settings.smtp {
            Some(smtp) => Some(Mailer::start(PgOutbox { pool: pool.clone() }, smtp, mail)?),
            None => None,
        };
        let database: ReadinessProbe = Arc::new(PoolReadiness(pool.clone()));
        let readiness: ReadinessProbe = match &mailer {
            Some(m) => Arc::new(SenderReadiness {
                inner: database,
                health: m.health(),
            }),
            None => database,
        };
        let passkeys =
            crate::passkey::relying_party(&settings.auth.base_url, crate::two_factor::ISSUER)
                .map(Arc::new);
        if passkeys.is_none() {
            tracing::warn!("passkeys are off: AUTH_BASE_URL names its host by an IP address");
        }
        let settings = Arc::new(settings);
        let state = AppState {
            settings: Arc::clone(&settings),
            db: crate::repo::Db::new(pool.clone()),
            decoy_hash,
            hashes,
            http,
            mailer: mailer.clone(),
            passkeys: passkeys.clone(),
        };
        let layer = SessionLayer::with_pool(Arc::new(settings.auth.clone()), pool.clone());
        tokio::spawn(maintenance(pool.clone()));
        let docs = service_kit::openapi::Docs::new(&crate::openapi::document());
        let metrics = service_kit::metrics::ServiceMetrics::new();
        metrics.pool(pool.clone());
        // The table exists whether or not mail is switched on: its depth is worth watching either way.
        metrics.outbox("mail", {
            let pool = pool.clone();
            move || {
                pg_store::outbox::state(
                    &pool,
                    "FROM auth.mail_outbox WHERE sent_at IS NULL AND parked_at IS NULL",
                )
            }
        });
        if let Some(mailer) = &mailer {
            mailer::export_metrics(&metrics, "mail", mailer.health());
        }
        metrics.route_outcomes(
            "auth_sign_ins_total",
            "Sign-in attempts by route and outcome (ok, refused: wrong credentials or limited, error).",
            &["/api/auth/sign-in/email", "/api/auth/sign-in/social"],
        );
        metrics.route_outcomes(
            "auth_sign_ups_total",
            "Sign-up attempts by route and outcome.",
            &["/api/auth/sign-up/email"],
        );
        let server =
            service_kit::http::server_with(listener, readiness, metrics, limits, move |cfg| {
                cfg.app_data(web::Data::new(state.clone()))
                    .app_data(web::Data::new(layer.clone()))
                    .configure(service_kit::openapi::mount(docs.clone()))
                    .configure(crate::routes::config);
            })?;
        tracing::info!(port, "auth listening");
        Ok(Self {
            port,
            server,
            mailer,
        })
    }

    /// The e-mail sender, when `SMTP_URL` is set.
    pub fn mailer(&self) -> Option<&Mailer> {
        self.mailer.as_ref()
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Serves until SIGTERM or SIGINT, then drains open requests and lets the e-mail sender
    /// finish the message it is sending.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let served = self.server.await;
        if let Some(mailer) = &self.mailer {
            mailer.stop().await;
        }
        served
    }
}

/// Deletes what has expired, so the tables do not grow without bound. Every replica runs it;
/// the deletes are idempotent.
async fn maintenance(pool: PgPool) {
    let mut tick = tokio::time::interval(MAINTENANCE_EVERY);
    loop {
        tick.tick().await;
        let pool = pool.clone();
        let outcome =
            tokio::task::spawn_blocking(move || -> anyhow::Result<(usize, usize, usize)> {
                let mut conn = pool.get()?;
                let now = chrono::Utc::now();
                let sessions = sessions::delete_expired(&mut conn, now)?;
                let states = verification::delete_expired(&mut conn, now)?;
                let counters = rate_limits::prune(&mut conn)?;
                Ok((sessions, states, counters))
            })
            .await;
        match outcome {
            Ok(Ok((sessions, states, counters))) => {
                tracing::debug!(sessions, states, counters, "deleted expired rows");
            }
            Ok(Err(e)) => tracing::warn!(error = %e, "maintenance failed"),
            Err(e) => tracing::warn!(error = %e, "maintenance task failed"),
        }
    }
}
