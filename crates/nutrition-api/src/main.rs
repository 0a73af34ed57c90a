use std::process::ExitCode;

use clap::Parser;
use service_kit::cli::{self, Common};

/// The signed-in user's API under /me.
#[derive(Parser)]
#[command(name = "nutrition-api", version)]
struct Cli {
    #[command(subcommand)]
    command: Option<Common>,
}

#[actix_web::main]
async fn main() -> ExitCode {
    let command = Cli::parse().command.unwrap_or_default();
    cli::with_env(async |env| cli::run::<nutrition_api::Application>(command, &env).await).await
}
