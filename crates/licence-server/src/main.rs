use std::process::ExitCode;

use clap::{Parser, Subcommand};
use licence_server::Application;
use licence_server::admin::{self, AdminCommand};
use service_kit::cli::{self, Common};

/// Licences, releases, payments and quotas of the desktop app.
#[derive(Parser)]
#[command(name = "licence-server", version)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    #[command(flatten)]
    Common(Common),
    /// Licence administration (needs only DATABASE_URL).
    #[command(subcommand)]
    Admin(AdminCommand),
}

#[actix_web::main]
async fn main() -> ExitCode {
    let command = Cli::parse()
        .command
        .unwrap_or(Command::Common(Common::Serve));
    cli::with_env(async |env| match command {
        Command::Common(common) => cli::run::<Application>(common, &env).await,
        Command::Admin(command) => match cli::database_url::<Application>(&env) {
            Ok(url) => admin::run(&url, command, &env).await,
            Err(code) => code,
        },
    })
    .await
}
