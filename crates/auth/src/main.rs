use std::process::ExitCode;

use auth::Application;
use clap::Subcommand;
use service_kit::cli;

/// What the auth binary does besides the subcommands every service has.
#[derive(Subcommand)]
enum Own {
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
    cli::main_with::<Application, Own>(clap::command!(), async |own, env| {
        let Own::ImportBetterAuth { from } = own;
        cli::with_database_url::<Application>(&env, async |url| import(&url, &from)).await
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
