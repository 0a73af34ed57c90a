use std::process::ExitCode;

use clap::{Parser, Subcommand};
use licence_server::admin::{self, AdminCommand};
use licence_server::{Application, Settings};
use service_kit::{Env, cli};

/// Licences, releases, payments and quotas of the desktop app.
#[derive(Parser)]
#[command(name = "licence-server", version)]
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
    /// Licence administration (needs only DATABASE_URL).
    #[command(subcommand)]
    Admin(AdminCommand),
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
        Command::Openapi => cli::print_openapi(&licence_server::openapi::document()),
        Command::Healthcheck => cli::healthcheck(
            env.listen_addr(licence_server::settings::DEFAULT_LISTEN_ADDR),
            "/ready",
        ),
        Command::Migrate => match licence_server::settings::database_url(&env) {
            Err(err) => cli::config_failure(&err),
            Ok(url) => cli::migration_report(licence_server::db::connect_and_migrate(
                &url,
                licence_server::startup::DATABASE_WAIT,
            )),
        },
        Command::Admin(command) => match licence_server::settings::database_url(&env) {
            Err(err) => cli::config_failure(&err),
            Ok(url) => admin::run(&url, command).await,
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
