use std::process::ExitCode;

use clap::{Parser, Subcommand};
use nutrition_api::{Application, Settings};
use service_kit::{Env, cli};

/// The signed-in user's API under /me.
#[derive(Parser)]
#[command(name = "nutrition-api", version)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve HTTP until SIGTERM (the default).
    Serve,
    /// Apply pending database migrations and exit.
    Migrate,
    /// Exit 0 when the running service answers /ready.
    Healthcheck,
    /// Print the OpenAPI 3.1 document (the one `/openapi.json` serves) and exit; needs no
    /// configuration and no database.
    Openapi,
}

#[actix_web::main]
async fn main() -> ExitCode {
    cli::process_init();
    let cli = Cli::parse();
    let env = Env::load();
    if let Err(err) = service_kit::telemetry::init(&env) {
        return cli::config_failure(&err);
    }
    match cli.command.unwrap_or(Command::Serve) {
        Command::Openapi => cli::print_openapi(&nutrition_api::openapi::document()),
        Command::Healthcheck => cli::healthcheck(
            env.listen_addr(nutrition_api::settings::DEFAULT_LISTEN_ADDR),
            "/ready",
        ),
        Command::Migrate => match nutrition_api::settings::database_url(&env) {
            Err(err) => cli::config_failure(&err),
            Ok(url) => cli::migration_report(pg_store::connect_and_migrate(
                &url,
                nutrition_api::startup::DATABASE_WAIT,
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
