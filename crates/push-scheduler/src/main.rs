use std::io::Write;
use std::process::ExitCode;

use clap::Subcommand;
use push::VapidKeyPair;
use push_scheduler::jobs::Job;
use push_scheduler::{Application, Settings};
use service_kit::Env;
use service_kit::cli;

/// What the push-scheduler binary does besides the subcommands every service has.
#[derive(Subcommand)]
enum Own {
    /// Print a fresh VAPID key pair as environment lines.
    VapidKeys,
    /// Run one job once, as if the time were --at, deliver what it queued, print a JSON line.
    Fire {
        /// weekly-weigh-in, meal-lunch, meal-snack, meal-dinner or milestones.
        job: String,
        /// RFC 3339 time to run as (default: now).
        #[arg(long)]
        at: Option<String>,
        /// Seconds to wait for retries of what this run queued before exiting.
        #[arg(long, default_value_t = 30)]
        wait: u64,
    },
}

#[actix_web::main]
async fn main() -> ExitCode {
    cli::main_with::<Application, Own>(clap::command!(), async |command, env| match command {
        Own::VapidKeys => vapid_keys(),
        Own::Fire { job, at, wait } => fire(&env, &job, at.as_deref(), wait).await,
    })
    .await
}

/// Prints a fresh key pair as environment lines.
fn vapid_keys() -> ExitCode {
    let pair = VapidKeyPair::generate();
    let lines = format!(
        "VAPID_PUBLIC_KEY={}
VAPID_PRIVATE_KEY={}
",
        pair.public_key,
        pair.private_key.expose()
    );
    match std::io::stdout().write_all(lines.as_bytes()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

async fn fire(env: &Env, job: &str, at: Option<&str>, wait: u64) -> ExitCode {
    let job: Job = match job.parse() {
        Ok(j) => j,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let at = match at.map(chrono::DateTime::parse_from_rfc3339).transpose() {
        Ok(t) => t
            .map(|t| t.with_timezone(&chrono::Utc))
            .unwrap_or_else(chrono::Utc::now),
        Err(_) => {
            eprintln!("--at must be an RFC 3339 time, e.g. 2026-11-23T09:00:00+01:00");
            return ExitCode::from(2);
        }
    };
    let settings = match Settings::from_env(env) {
        Ok(s) => s,
        Err(err) => return cli::config_failure(&err),
    };
    let outcome = async {
        let pool = pg_store::start(
            &settings.server.database_url,
            settings.server.pool_size,
            push_scheduler::startup::DATABASE_WAIT,
        )
        .await?;
        match push_scheduler::startup::scheduler(&settings, &pool)? {
            Some(s) => {
                // A cron container stopping (SIGTERM) ends the run like `serve`: what is in
                // flight is sent and recorded, nothing else is taken.
                let shutdown = s.shutdown();
                let on_signal = tokio::spawn(async move {
                    cli::stop_signal().await;
                    shutdown.trigger();
                });
                let report = s.fire(job, at, std::time::Duration::from_secs(wait)).await;
                on_signal.abort();
                report.map(Some)
            }
            None => Ok(None),
        }
    }
    .await;
    let line = match outcome {
        Ok(Some(report)) => serde_json::to_string(&report),
        Ok(None) => {
            tracing::warn!("push is off (no VAPID keys): nothing was run");
            serde_json::to_string(&serde_json::json!({
                "job": job.name(), "slot": null, "alreadyRan": false, "queued": 0, "sent": 0,
                "skipped": 0, "removed": 0, "failed": 0, "pending": false, "pushEnabled": false,
            }))
        }
        Err(err) => return cli::startup_failure(&err),
    };
    match line.map(|l| std::io::stdout().write_all(format!("{l}\n").as_bytes())) {
        Ok(Ok(())) => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    }
}
