//! What the binaries' `main` functions share: the subcommands every service has, how a bad
//! setting ends the process, the `healthcheck` subcommand and the report of `migrate`.

use std::net::SocketAddr;
use std::process::ExitCode;

use crate::config::{ConfigError, Env, Secret};

/// The subcommands of every service's binary; a binary adds its own beside them with
/// `#[command(flatten)]`.
#[derive(clap::Subcommand, Clone, Copy, Debug, Default)]
pub enum Common {
    /// Serve HTTP until SIGTERM (the default).
    #[default]
    Serve,
    /// Apply pending database migrations and exit.
    Migrate,
    /// Exit 0 when the running service answers /ready.
    Healthcheck,
    /// Print the OpenAPI 3.1 document (the one `/openapi.json` serves) and exit; needs no
    /// configuration and no database.
    Openapi,
}

/// What [`run`] needs to know of a service.
#[allow(async_fn_in_trait)]
pub trait Service {
    /// Where `serve` listens unless LISTEN_ADDR says otherwise.
    const DEFAULT_LISTEN_ADDR: &'static str;
    type Settings;
    /// The OpenAPI document it serves.
    fn document() -> Document;
    /// DATABASE_URL alone, for the subcommands that need nothing else.
    fn database_url(env: &Env) -> Result<Secret, ConfigError>;
    /// Applies the pending migrations; returns their versions.
    fn migrate(url: &Secret) -> anyhow::Result<Vec<String>>;
    fn settings(env: &Env) -> Result<Self::Settings, ConfigError>;
    /// Starts the service and serves until it is stopped; `Err` when it could not start.
    async fn serve(settings: Self::Settings) -> anyhow::Result<std::io::Result<()>>;
}

/// Implements [`Service`] for a service's `Application` (with its `build` and
/// `run_until_stopped`), from its settings module (`Settings` with `from_env`,
/// `DEFAULT_LISTEN_ADDR`, `database_url`), its OpenAPI document and its migration.
#[macro_export]
macro_rules! service {
    ($app:ty, settings: $($settings:ident)::+, document: $document:path, migrate: $migrate:expr $(,)?) => {
        impl $crate::cli::Service for $app {
            const DEFAULT_LISTEN_ADDR: &'static str = $($settings)::+::DEFAULT_LISTEN_ADDR;
            type Settings = $($settings)::+::Settings;

            fn document() -> $crate::cli::Document {
                $document()
            }

            fn database_url(env: &$crate::Env) -> Result<$crate::Secret, $crate::ConfigError> {
                $($settings)::+::database_url(env)
            }

            fn migrate(url: &$crate::Secret) -> anyhow::Result<Vec<String>> {
                ($migrate)(url)
            }

            fn settings(env: &$crate::Env) -> Result<Self::Settings, $crate::ConfigError> {
                Self::Settings::from_env(env)
            }

            async fn serve(settings: Self::Settings) -> anyhow::Result<std::io::Result<()>> {
                let app = Self::build(settings).await?;
                $crate::cli::return_start_up_memory();
                Ok(app.run_until_stopped().await)
            }
        }
    };
}

/// Gives the pages that start-up work freed (migrations, building the OpenAPI document, the
/// workers' factories) back to the operating system. glibc keeps freed memory below the top of
/// its heaps for reuse, and what start-up freed is never needed again: auth's idle resident
/// memory falls by about 1.8 MiB (from 20.3 MiB) with it. Called once, after `build`, when every
/// worker has built its services.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[expect(
    unsafe_code,
    reason = "malloc_trim has no safe binding; see ARCHITECTURE.md"
)]
pub fn return_start_up_memory() {
    // SAFETY: malloc_trim takes no pointer and releases only memory the allocator holds free.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Other allocators give freed memory back by themselves.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn return_start_up_memory() {}

/// A service's OpenAPI document.
pub type Document = utoipa::openapi::OpenApi;

/// The start of every `main`: process set-up, the environment, tracing; then `main` with the
/// environment, or the exit status of a bad tracing setting.
pub async fn with_env(main: impl AsyncFnOnce(Env) -> ExitCode) -> ExitCode {
    process_init();
    let env = Env::load();
    match crate::telemetry::init(&env) {
        Ok(()) => main(env).await,
        Err(err) => config_failure(&err),
    }
}

// The command line of a binary with subcommands of its own, `E`, beside the [`Common`] ones (not a
// doc comment: clap would show it as the binary's description).
#[derive(clap::Parser)]
struct WithOwn<E: clap::Subcommand> {
    #[command(subcommand)]
    command: Option<Subcommands<E>>,
}

#[derive(clap::Subcommand)]
enum Subcommands<E: clap::Subcommand> {
    #[command(flatten)]
    Common(Common),
    #[command(flatten)]
    Own(E),
}

/// The whole `main` of service `S` whose binary has subcommands of its own: `binary` is its
/// `clap::command!()` (name, version and description from its Cargo.toml), `own` runs its own
/// subcommands, and [`Common::Serve`] runs when none is given.
pub async fn main_with<S: Service, E: clap::Subcommand>(
    binary: clap::Command,
    own: impl AsyncFnOnce(E, Env) -> ExitCode,
) -> ExitCode {
    use clap::{Args, FromArgMatches};
    // The subcommands' doc comments would otherwise become the binary's description.
    let about = binary.get_about().cloned();
    let matches = WithOwn::<E>::augment_args(binary)
        .about(about.unwrap_or_default())
        .long_about(None::<&str>)
        .get_matches();
    let command = WithOwn::<E>::from_arg_matches(&matches)
        .unwrap_or_else(|err| err.exit())
        .command
        .unwrap_or(Subcommands::Common(Common::Serve));
    with_env(async |env| match command {
        Subcommands::Common(common) => run::<S>(common, &env).await,
        Subcommands::Own(command) => own(command, env).await,
    })
    .await
}

/// Runs one of the [`Common`] subcommands of service `S`.
pub async fn run<S: Service>(command: Common, env: &Env) -> ExitCode {
    match command {
        Common::Openapi => print_openapi(&S::document()),
        Common::Healthcheck => healthcheck(env.listen_addr(S::DEFAULT_LISTEN_ADDR), "/ready"),
        Common::Migrate => {
            with_database_url::<S>(env, async |url| migration_report(S::migrate(&url))).await
        }
        Common::Serve => match S::settings(env) {
            Err(err) => config_failure(&err),
            Ok(settings) => match S::serve(settings).await {
                Ok(outcome) => served(outcome),
                Err(err) => startup_failure(&err),
            },
        },
    }
}

/// Runs `command`, a subcommand that needs DATABASE_URL and nothing else, or returns the exit
/// status of a bad DATABASE_URL.
pub async fn with_database_url<S: Service>(
    env: &Env,
    command: impl AsyncFnOnce(Secret) -> ExitCode,
) -> ExitCode {
    match S::database_url(env) {
        Ok(url) => command(url).await,
        Err(err) => config_failure(&err),
    }
}

/// Process-wide set-up, first thing in `main`. OpenSSL (used by libpq, the MariaDB client, TLS
/// and Web Push encryption) otherwise frees its global state in an `atexit` handler while other
/// threads, such as a pool still opening a connection, may be using it; the process then dies of
/// a segmentation fault instead of exiting cleanly. Initialising it first with `NO_ATEXIT`, as
/// `openssl::init` does, keeps that handler from ever being registered.
pub fn process_init() {
    openssl::init();
    raise_open_files_limit();
}

/// The soft and hard limit of open files after start-up, for the log line of `serve`.
static OPEN_FILES: std::sync::OnceLock<Result<(u64, u64), String>> = std::sync::OnceLock::new();

/// Raises the soft limit of open files to the hard limit. Every connection and every pooled
/// database connection is a descriptor, and distributions often start services with a soft
/// limit of 1024 while allowing far more.
pub fn raise_open_files_limit() {
    let outcome = rlimit::increase_nofile_limit(u64::MAX)
        .map_err(|e| e.to_string())
        .and_then(|_| rlimit::getrlimit(rlimit::Resource::NOFILE).map_err(|e| e.to_string()));
    let _ = OPEN_FILES.set(outcome);
}

/// What [`raise_open_files_limit`] achieved, if it ran.
pub fn open_files_limit() -> Option<&'static Result<(u64, u64), String>> {
    OPEN_FILES.get()
}

/// Exit status for a configuration error (`EX_CONFIG` of sysexits.h).
pub const EXIT_CONFIG: u8 = 78;

/// Prints the one line an operator needs and returns the exit status.
pub fn config_failure(err: &ConfigError) -> ExitCode {
    eprintln!("invalid configuration: {err}");
    ExitCode::from(EXIT_CONFIG)
}

/// `healthcheck`: exit 0 when the service on `addr` answers `path` with 2xx.
pub fn healthcheck(addr: Result<SocketAddr, ConfigError>, path: &str) -> ExitCode {
    match addr {
        Err(err) => config_failure(&err),
        Ok(addr) if crate::probe::http_ok(addr, path) => ExitCode::SUCCESS,
        Ok(addr) => {
            eprintln!("{addr}{path} is not ready");
            ExitCode::FAILURE
        }
    }
}

/// `migrate`: reports what was applied.
pub fn migration_report(outcome: anyhow::Result<Vec<String>>) -> ExitCode {
    match outcome {
        Ok(versions) if versions.is_empty() => {
            eprintln!("database schema is up to date");
            ExitCode::SUCCESS
        }
        Ok(versions) => {
            eprintln!(
                "applied {} migration(s): {}",
                versions.len(),
                versions.join(", ")
            );
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("migration failed: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// The end of `serve`: exit 0 after a clean drain.
pub fn served(outcome: std::io::Result<()>) -> ExitCode {
    crate::telemetry::shutdown();
    match outcome {
        Ok(()) => {
            tracing::info!("stopped");
            ExitCode::SUCCESS
        }
        Err(err) => {
            tracing::error!(error = %err, "server failed");
            ExitCode::FAILURE
        }
    }
}

/// Resolves at the first SIGTERM or SIGINT. The HTTP server hears them too and drains on them;
/// what runs beside it (senders, schedulers) waits here to stop with it.
pub async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        // Without signal handlers nothing can ask the process to stop this way.
        _ => std::future::pending::<()>().await,
    }
}

/// A failure while starting (database never came up, address in use).
pub fn startup_failure(err: &anyhow::Error) -> ExitCode {
    tracing::error!(error = format!("{err:#}"), "start-up failed");
    eprintln!("start-up failed: {err:#}");
    ExitCode::FAILURE
}

/// `<binary> openapi`: writes the service's complete OpenAPI document to stdout, for clients that
/// generate their types from it at build time without running the service.
pub fn print_openapi(doc: &utoipa::openapi::OpenApi) -> ExitCode {
    use std::io::Write;
    let docs = crate::openapi::Docs::new(doc);
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{}", docs.json()).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("cannot write the document: {err}");
            ExitCode::FAILURE
        }
    }
}
