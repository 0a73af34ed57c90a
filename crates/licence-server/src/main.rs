use std::process::ExitCode;

use clap::Subcommand;
use licence_server::Application;
use licence_server::admin::{self, AdminCommand};
use service_kit::cli;

/// What the licence-server binary does besides the subcommands every service has.
#[derive(Subcommand)]
enum Own {
    /// Licence administration (needs only DATABASE_URL).
    #[command(subcommand)]
    Admin(AdminCommand),
}

#[actix_web::main]
async fn main() -> ExitCode {
    cli::main_with::<Application, Own>(clap::command!(), async |Own::Admin(command), env| {
        cli::with_database_url::<Application>(&env, async |url| {
            admin::run(&url, command, &env).await
        })
        .await
    })
    .await
}
