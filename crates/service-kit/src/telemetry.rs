//! Tracing set up once per process: `RUST_LOG` selects what is recorded, `LOG_FORMAT` chooses
//! human-readable lines for development or JSON for log shippers, and
//! `OTEL_EXPORTER_OTLP_ENDPOINT`, when set, also exports the spans over OTLP (HTTP, protobuf).
//!
//! Every request span carries a `trace_id`, so every line logged while serving a request names
//! its trace: the exported trace's id when export is on, else the caller's W3C `traceparent`
//! trace id or a fresh random one. A log line can thus always be joined to its trace, and lines
//! of one request to each other.

use std::sync::OnceLock;

use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer;
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::config::{ConfigError, Env};

pub const RUST_LOG: &str = "RUST_LOG";
pub const LOG_FORMAT: &str = "LOG_FORMAT";
/// The collector's base address (`http://collector:4318`); traces go to `<base>/v1/traces`.
pub const OTEL_EXPORTER_OTLP_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// The full traces address, overriding the one derived from `OTEL_EXPORTER_OTLP_ENDPOINT`.
pub const OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
/// The `service.name` of exported spans; the executable's name by default.
pub const OTEL_SERVICE_NAME: &str = "OTEL_SERVICE_NAME";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Pretty,
    Json,
}

/// What the tracing variables ask for, checked.
#[derive(Debug)]
pub struct TelemetrySettings {
    pub filter: EnvFilter,
    pub format: LogFormat,
    /// Where to send spans; `None` keeps export off.
    pub otlp_traces: Option<url::Url>,
    pub service_name: String,
}

/// Reads and checks the logging and export variables without installing anything, so that a bad
/// value is reported like every other setting.
pub fn settings(env: &Env) -> Result<TelemetrySettings, ConfigError> {
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
    let otlp_traces = match env.get(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)? {
        Some(raw) => Some(http_url(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, raw)?),
        None => match env.get(OTEL_EXPORTER_OTLP_ENDPOINT)? {
            None => None,
            Some(raw) => {
                let base = http_url(OTEL_EXPORTER_OTLP_ENDPOINT, raw)?;
                // The OTLP specification appends the signal's path to the base address.
                let joined = format!("{}/v1/traces", base.as_str().trim_end_matches('/'));
                Some(http_url(OTEL_EXPORTER_OTLP_ENDPOINT, &joined)?)
            }
        },
    };
    let service_name = match env.get(OTEL_SERVICE_NAME)? {
        Some(name) => name.to_owned(),
        None => std::env::args_os()
            .next()
            .and_then(|arg0| {
                std::path::Path::new(&arg0)
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
            })
            .unwrap_or_else(|| "unknown_service".to_owned()),
    };
    Ok(TelemetrySettings {
        filter,
        format,
        otlp_traces,
        service_name,
    })
}

fn http_url(var: &'static str, raw: &str) -> Result<url::Url, ConfigError> {
    let url = url::Url::parse(raw)
        .map_err(|_| ConfigError::new(var, "must be an http:// or https:// address"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(ConfigError::new(
            var,
            "must be an http:// or https:// address",
        ));
    }
    Ok(url)
}

/// The exporting provider, kept for the flush at exit. Set at most once per process.
static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

/// Installs the global subscriber. Logs go to stderr so that subcommands can keep stdout for
/// their machine-readable output.
pub fn init(env: &Env) -> Result<(), ConfigError> {
    let settings = settings(env)?;
    // Colour codes only for a person at a terminal: in a file or a log collector they are noise,
    // and styling every span's fields costs time on every request.
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_span_events(FmtSpan::NONE);
    let fmt = match settings.format {
        LogFormat::Pretty => fmt.boxed(),
        LogFormat::Json => fmt.json().flatten_event(true).boxed(),
    };
    let otel = match settings.otlp_traces {
        None => None,
        Some(endpoint) => {
            let exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_endpoint(endpoint.as_str())
                .build()
                .map_err(|_| {
                    ConfigError::new(
                        OTEL_EXPORTER_OTLP_ENDPOINT,
                        "could not build an OTLP exporter for this address",
                    )
                })?;
            let resource = opentelemetry_sdk::Resource::builder()
                .with_service_name(settings.service_name.clone())
                .build();
            let provider = SdkTracerProvider::builder()
                .with_batch_exporter(exporter)
                .with_resource(resource)
                .build();
            let tracer = provider.tracer(settings.service_name);
            // A second initialisation (tests starting several services in one process) keeps
            // the first provider.
            let _ = PROVIDER.set(provider);
            Some(tracing_opentelemetry::layer().with_tracer(tracer))
        }
    };
    // A second initialisation (tests starting several services in one process) is harmless.
    let _ = tracing_subscriber::registry()
        .with(settings.filter)
        .with(fmt)
        .with(otel)
        .try_init();
    Ok(())
}

/// Sends the spans still buffered; called once the server has stopped.
pub fn shutdown() {
    if let Some(provider) = PROVIDER.get() {
        let _ = provider.force_flush();
        let _ = provider.shutdown();
    }
}

/// Whether spans are exported (`OTEL_EXPORTER_OTLP_ENDPOINT` was set at start-up).
pub fn exporting() -> bool {
    PROVIDER.get().is_some()
}

/// Joins `span` to the caller's trace (W3C `traceparent`) and returns the trace id to log.
/// With export on, the id is the exported span's; otherwise the caller's trace id when it sent a
/// valid one, else `fallback` (a random request id).
pub fn trace_request(
    span: &tracing::Span,
    headers: &actix_web::http::header::HeaderMap,
    fallback: &str,
) -> String {
    let parent = TraceContextPropagator::new().extract(&Headers(headers));
    if exporting() {
        let _ = span.set_parent(parent);
        let id = span.context().span().span_context().trace_id();
        if id != opentelemetry::trace::TraceId::INVALID {
            return id.to_string();
        }
    } else {
        let remote = parent.span().span_context().trace_id();
        if remote != opentelemetry::trace::TraceId::INVALID {
            return remote.to_string();
        }
    }
    fallback.chars().filter(char::is_ascii_hexdigit).collect()
}

struct Headers<'a>(&'a actix_web::http::header::HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
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
        assert_eq!(settings(&good).expect("valid").format, LogFormat::Json);
    }

    #[test]
    fn export_is_off_by_default_and_the_address_is_checked() {
        assert!(
            settings(&Env::from_pairs::<_, &str, &str>([]))
                .expect("valid")
                .otlp_traces
                .is_none()
        );
        for bad in ["collector:4318", "ftp://collector", "http://"] {
            let env = Env::from_pairs([(OTEL_EXPORTER_OTLP_ENDPOINT, bad)]);
            assert_eq!(
                settings(&env).unwrap_err().var,
                OTEL_EXPORTER_OTLP_ENDPOINT,
                "{bad}"
            );
        }
        let env = Env::from_pairs([(OTEL_EXPORTER_OTLP_ENDPOINT, "http://127.0.0.1:4318/")]);
        let url = settings(&env).expect("valid").otlp_traces.expect("on");
        assert_eq!(url.as_str(), "http://127.0.0.1:4318/v1/traces");
        let env = Env::from_pairs([
            (OTEL_EXPORTER_OTLP_ENDPOINT, "http://127.0.0.1:4318"),
            (
                OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
                "https://otel.example/traces",
            ),
        ]);
        let url = settings(&env).expect("valid").otlp_traces.expect("on");
        assert_eq!(url.as_str(), "https://otel.example/traces");
        let env = Env::from_pairs([(OTEL_SERVICE_NAME, "auth-eu")]);
        assert_eq!(settings(&env).expect("valid").service_name, "auth-eu");
    }

    fn with_traceparent(value: &'static str) -> actix_web::http::header::HeaderMap {
        let mut headers = actix_web::http::header::HeaderMap::new();
        headers.insert(
            actix_web::http::header::HeaderName::from_static("traceparent"),
            actix_web::http::header::HeaderValue::from_static(value),
        );
        headers
    }

    #[test]
    fn trace_id_comes_from_traceparent_when_export_is_off() {
        let fallback = "6f1c1a2e-5b0d-4a8e-9a57-3c1b2d4e5f60";
        let span = tracing::info_span!("t");
        assert_eq!(
            trace_request(&span, &actix_web::http::header::HeaderMap::new(), fallback),
            "6f1c1a2e5b0d4a8e9a573c1b2d4e5f60"
        );
        let caller = with_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        assert_eq!(
            trace_request(&span, &caller, fallback),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        // An all-zero trace id is invalid and ignored.
        let invalid = with_traceparent("00-00000000000000000000000000000000-00f067aa0ba902b7-01");
        assert_eq!(
            trace_request(&span, &invalid, fallback),
            "6f1c1a2e5b0d4a8e9a573c1b2d4e5f60"
        );
    }
}
