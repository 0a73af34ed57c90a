use std::process::ExitCode;

use auth::{Application, Settings};
use clap::{Parser, Subcommand};
use service_kit::{Env, cli};

/// Sign-up, sign-in and sessions for the nutrition product.
#[derive(Parser)]
#[command(name = "auth", version)]
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
    /// Copy users, accounts and live sessions from a better-auth 1.x database (its scrypt
    /// passwords keep working and become argon2id at the next sign-in); safe to run again.
    ImportBetterAuth {
        /// The better-auth application's Postgres database (`postgres://…`).
        #[arg(long = "from", value_name = "POSTGRES_URL")]
        from: String,
    },
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
        Command::Openapi => cli::print_openapi(&auth::openapi::document()),
        Command::Healthcheck => cli::healthcheck(
            env.listen_addr(auth::settings::DEFAULT_LISTEN_ADDR),
            "/ready",
        ),
        Command::Migrate => match auth::settings::database_url(&env) {
            Err(err) => cli::config_failure(&err),
            Ok(url) => cli::migration_report(pg_store::connect_and_migrate(
                &url,
                auth::startup::DATABASE_WAIT,
            )),
        },
        Command::ImportBetterAuth { from } => match auth::settings::database_url(&env) {
            Err(err) => cli::config_failure(&err),
            Ok(url) => import(&url, &from),
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

/// Migrates the target, copies, and prints the report as one JSON line.
fn import(target: &service_kit::Secret, source: &str) -> ExitCode {
    use diesel::Connection;
    let outcome =
        pg_store::connect_and_migrate(target, auth::startup::DATABASE_WAIT).and_then(|_| {
            let mut to = diesel::PgConnection::establish(target.expose())?;
            let mut from = diesel::PgConnection::establish(source)
                .map_err(|e| anyhow::anyhow!("cannot connect to the better-auth database: {e}"))?;
            auth::import::import(&mut from, &mut to)
        });
    match outcome {
        Ok(report) => {
            println!("{}", serde_json::to_string(&report).unwrap_or_default());
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("import-better-auth failed: {err}");
            ExitCode::FAILURE
        }
    }
}
