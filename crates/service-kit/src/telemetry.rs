//! Tracing set up once per process: `RUST_LOG` selects what is recorded, `LOG_FORMAT` chooses
//! human-readable lines for development or JSON for log shippers.

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::FmtSpan;

use crate::config::{ConfigError, Env};

pub const RUST_LOG: &str = "RUST_LOG";
pub const LOG_FORMAT: &str = "LOG_FORMAT";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Pretty,
    Json,
}

/// Reads and checks the two logging variables without installing anything, so that a bad value
/// is reported like every other setting.
pub fn settings(env: &Env) -> Result<(EnvFilter, LogFormat), ConfigError> {
    let filter = match env.get(RUST_LOG)? {
        None => EnvFilter::new("info"),
        Some(raw) => EnvFilter::try_new(raw).map_err(|_| {
            ConfigError::new(
                RUST_LOG,
                "must be a tracing filter such as info or auth=debug,info",
            )
        })?,
    };
    let format = match env.get(LOG_FORMAT)?.map(str::to_ascii_lowercase).as_deref() {
        None | Some("pretty") | Some("text") => LogFormat::Pretty,
        Some("json") => LogFormat::Json,
        Some(_) => return Err(ConfigError::new(LOG_FORMAT, "must be pretty or json")),
    };
    Ok((filter, format))
}

/// Installs the global subscriber. Logs go to stderr so that subcommands can keep stdout for
/// their machine-readable output.
pub fn init(env: &Env) -> Result<(), ConfigError> {
    let (filter, format) = settings(env)?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_span_events(FmtSpan::NONE);
    // A second initialisation (tests starting several services in one process) is harmless.
    let _ = match format {
        LogFormat::Pretty => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_filter_and_format() {
        let bad = Env::from_pairs([("RUST_LOG", "info,[[[")]);
        assert_eq!(settings(&bad).unwrap_err().var, "RUST_LOG");
        let bad = Env::from_pairs([("LOG_FORMAT", "xml")]);
        assert_eq!(settings(&bad).unwrap_err().var, "LOG_FORMAT");
        let good = Env::from_pairs([("RUST_LOG", "warn,auth=debug"), ("LOG_FORMAT", "JSON")]);
        assert_eq!(settings(&good).expect("valid").1, LogFormat::Json);
    }
}
