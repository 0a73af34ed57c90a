use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use push::VapidKeyPair;
use push_scheduler::{Application, Settings};
use service_kit::{Env, cli};

/// The scheduled Web Push notifications of the nutrition product.
#[derive(Parser)]
#[command(name = "push-scheduler", version)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the scheduler and its health endpoints until SIGTERM (the default).
    Serve,
    /// Apply pending database migrations and exit.
    Migrate,
    /// Exit 0 when the running scheduler answers /ready.
    Healthcheck,
    /// Print a fresh VAPID key pair as environment lines.
    VapidKeys,
}

#[actix_web::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let env = Env::load();
    if let Err(err) = service_kit::telemetry::init(&env) {
        return cli::config_failure(&err);
    }
    match cli.command.unwrap_or(Command::Serve) {
        Command::VapidKeys => {
            let pair = VapidKeyPair::generate();
            let lines = format!(
                "VAPID_PUBLIC_KEY={}\nVAPID_PRIVATE_KEY={}\n",
                pair.public_key,
                pair.private_key.expose()
            );
            match std::io::stdout().write_all(lines.as_bytes()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(_) => ExitCode::FAILURE,
            }
        }
        Command::Healthcheck => cli::healthcheck(
            env.listen_addr(push_scheduler::settings::DEFAULT_LISTEN_ADDR),
            "/ready",
        ),
        Command::Migrate => match push_scheduler::settings::database_url(&env) {
            Err(err) => cli::config_failure(&err),
            Ok(url) => cli::migration_report(nutrition_store::connect_and_migrate(
                &url,
                push_scheduler::startup::DATABASE_WAIT,
            )),
        },
        Command::Serve => match Settings::from_env(&env) {
            Err(err) => cli::config_failure(&err),
            Ok(settings) => match Application::build(settings).await {
                Ok(app) => cli::served(app.run_until_stopped().await),
                Err(err) => cli::startup_failure(&err),
            },
        },
    }
}
