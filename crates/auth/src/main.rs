use std::process::ExitCode;

use auth::Application;
use clap::{Parser, Subcommand};
use service_kit::cli::{self, Common};

/// Sign-up, sign-in and sessions for the nutrition product.
#[derive(Parser)]
#[command(name = "auth", version)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    #[command(flatten)]
    Common(Common),
    /// Copy users, accounts and live sessions from a better-auth 1.x database (its scrypt
    /// passwords keep working and become argon2id at the next sign-in); safe to run again.
    ImportBetterAuth {
        /// The better-auth application's Postgres database (`postgres://…`).
        #[arg(long = "from", value_name = "POSTGRES_URL")]
        from: String,
    },
}

#[actix_web::main]
async fn main() -> ExitCode {
    let command = Cli::parse()
        .command
        .unwrap_or(Command::Common(Common::Serve));
    cli::with_env(async |env| match command {
        Command::Common(common) => cli::run::<Application>(common, &env).await,
        Command::ImportBetterAuth { from } => match cli::database_url::<Application>(&env) {
            Ok(url) => import(&url, &from),
            Err(code) => code,
        },
    })
    .await
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
