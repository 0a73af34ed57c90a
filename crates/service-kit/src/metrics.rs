//! Prometheus metrics at `GET /metrics`.
//!
//! Two kinds live side by side. Process-wide counters and histograms (requests, the database
//! pool's waiters, a service's domain outcomes) sit in the `prometheus` crate's default registry,
//! registered once on first use. Gauges that describe a resource right now (pool connections,
//! outbox depth and age) belong to one [`ServiceMetrics`] and are refreshed on each scrape by
//! the probes registered with [`ServiceMetrics::on_scrape`], which run on the blocking pool.
//!
//! Requests are labelled with the route *pattern* (`/me/fast-events/{id}`), never the raw path,
//! and unknown routes share one label, so a client cannot grow the series without bound.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{CONTENT_TYPE, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{HttpResponse, web};
pub use prometheus;
use prometheus::{
    Encoder, GaugeVec, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};

/// The label of requests that matched no route.
pub const UNMATCHED_ROUTE: &str = "unmatched";

fn register<C: prometheus::core::Collector + Clone + 'static>(collector: C) -> C {
    // Registration fails only for a duplicate name, which is a programming error caught by the
    // tests; the collector still counts, it is just not exported twice.
    if let Err(err) = prometheus::register(Box::new(collector.clone())) {
        tracing::warn!(error = %err, "metric registered twice");
    }
    collector
}

/// A process-wide counter in the default registry.
pub fn counter(name: &str, help: &str) -> IntCounter {
    register(IntCounter::new(name, help).expect("valid metric definition"))
}

/// A process-wide counter family in the default registry.
pub fn counter_vec(name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    register(IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric definition"))
}

static REQUESTS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "http_requests_total",
        "HTTP requests answered, by method, route pattern and status code.",
        &["method", "route", "status"],
    )
});

static DURATION: LazyLock<HistogramVec> = LazyLock::new(|| {
    register(
        HistogramVec::new(
            HistogramOpts::new(
                "http_request_duration_seconds",
                "Time from the request's arrival to its response, by method and route pattern.",
            )
            .buckets(vec![
                0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
            ]),
            &["method", "route"],
        )
        .expect("valid metric definition"),
    )
});

static IN_FLIGHT: LazyLock<IntGauge> = LazyLock::new(|| {
    register(
        IntGauge::new("http_requests_in_flight", "Requests being handled now.")
            .expect("valid metric definition"),
    )
});

/// Requests waiting for a database connection right now (process-wide, see `db::run`).
pub static POOL_WAITING: LazyLock<IntGauge> = LazyLock::new(|| {
    register(
        IntGauge::new(
            "db_pool_waiting",
            "Tasks waiting for a connection from the database pool.",
        )
        .expect("valid metric definition"),
    )
});

/// Checkouts that gave up after the pool's timeout (answered 503).
pub static POOL_TIMEOUTS: LazyLock<prometheus::IntCounter> = LazyLock::new(|| {
    register(
        prometheus::IntCounter::new(
            "db_pool_checkout_timeouts_total",
            "Database connection checkouts that timed out.",
        )
        .expect("valid metric definition"),
    )
});

/// Registers the process-wide families, so that each is exported (at zero) from the first
/// scrape on instead of appearing only with its first event.
pub fn init_process_metrics() {
    LazyLock::force(&REQUESTS);
    LazyLock::force(&DURATION);
    LazyLock::force(&IN_FLIGHT);
    LazyLock::force(&POOL_WAITING);
    LazyLock::force(&POOL_TIMEOUTS);
}

type Probe = Box<dyn Fn() + Send + Sync>;

/// What a pool probe reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolState {
    pub in_use: usize,
    pub idle: usize,
    pub max: usize,
}

/// What an outbox probe reports.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OutboxState {
    pub pending: i64,
    pub oldest_age_seconds: f64,
}

struct Inner {
    registry: Registry,
    probes: Mutex<Vec<Arc<Probe>>>,
    /// Route pattern -> the counter family counting its outcomes.
    outcomes: Mutex<HashMap<String, IntCounterVec>>,
    outbox_pending: IntGaugeVec,
    outbox_age: GaugeVec,
    outbox_up: IntGaugeVec,
}

/// The metrics of one running service: its scrape-time gauges and the outcome counters of
/// chosen routes. Cheap to clone.
#[derive(Clone)]
pub struct ServiceMetrics {
    inner: Arc<Inner>,
}

impl Default for ServiceMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl ServiceMetrics {
    pub fn new() -> Self {
        let registry = Registry::new();
        let outbox_pending = IntGaugeVec::new(
            Opts::new(
                "outbox_pending",
                "Messages waiting in an outbox to be delivered, by outbox.",
            ),
            &["outbox"],
        )
        .expect("valid metric definition");
        let outbox_age = GaugeVec::new(
            Opts::new(
                "outbox_oldest_age_seconds",
                "Age of the oldest message still waiting in an outbox (0 when empty).",
            ),
            &["outbox"],
        )
        .expect("valid metric definition");
        let outbox_up = IntGaugeVec::new(
            Opts::new(
                "outbox_probe_up",
                "1 when the last scrape could read the outbox, 0 when its query failed.",
            ),
            &["outbox"],
        )
        .expect("valid metric definition");
        for collector in [
            Box::new(outbox_pending.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(outbox_age.clone()),
            Box::new(outbox_up.clone()),
        ] {
            registry
                .register(collector)
                .expect("fresh registry, distinct names");
        }
        Self {
            inner: Arc::new(Inner {
                registry,
                probes: Mutex::new(Vec::new()),
                outcomes: Mutex::new(HashMap::new()),
                outbox_pending,
                outbox_age,
                outbox_up,
            }),
        }
    }

    /// Depth and oldest age of the outbox `name`, read by `probe` (a query) on each scrape.
    /// A failing probe leaves the last values, sets `outbox_probe_up` to 0 and is logged at debug
    /// level: the database being down already shows in `/ready` and the pool gauges.
    pub fn outbox(
        &self,
        name: &'static str,
        probe: impl Fn() -> Result<OutboxState, String> + Send + Sync + 'static,
    ) {
        let pending = self.inner.outbox_pending.with_label_values(&[name]);
        let age = self.inner.outbox_age.with_label_values(&[name]);
        let up = self.inner.outbox_up.with_label_values(&[name]);
        self.on_scrape(move || match probe() {
            Ok(state) => {
                pending.set(state.pending);
                age.set(state.oldest_age_seconds);
                up.set(1);
            }
            Err(error) => {
                up.set(0);
                tracing::debug!(%error, outbox = name, "outbox metrics unavailable");
            }
        });
    }

    /// A gauge family of this service, set by a probe registered with [`Self::on_scrape`].
    pub fn gauge_vec(&self, name: &str, help: &str, labels: &[&str]) -> GaugeVec {
        let gauge = GaugeVec::new(Opts::new(name, help), labels).expect("valid metric definition");
        if let Err(err) = self.inner.registry.register(Box::new(gauge.clone())) {
            tracing::warn!(error = %err, "metric registered twice");
        }
        gauge
    }

    /// A counter family of this service, for counts kept elsewhere and copied on each scrape.
    pub fn int_counter_vec(&self, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
        let counter =
            IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric definition");
        if let Err(err) = self.inner.registry.register(Box::new(counter.clone())) {
            tracing::warn!(error = %err, "metric registered twice");
        }
        counter
    }

    fn int_gauge_vec(&self, name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
        let gauge =
            IntGaugeVec::new(Opts::new(name, help), labels).expect("valid metric definition");
        if let Err(err) = self.inner.registry.register(Box::new(gauge.clone())) {
            tracing::warn!(error = %err, "metric registered twice");
        }
        gauge
    }

    /// Runs `probe` (which may block, e.g. on a query) before each scrape.
    pub fn on_scrape(&self, probe: impl Fn() + Send + Sync + 'static) {
        if let Ok(mut probes) = self.inner.probes.lock() {
            probes.push(Arc::new(Box::new(probe)));
        }
    }

    /// Connections of `pool` in use and idle, and its maximum, refreshed on each scrape.
    pub fn pool<M: diesel::r2d2::ManageConnection>(&self, pool: diesel::r2d2::Pool<M>) {
        self.pool_state(move || {
            let state = pool.state();
            PoolState {
                in_use: state.connections.saturating_sub(state.idle_connections) as usize,
                idle: state.idle_connections as usize,
                max: pool.max_size() as usize,
            }
        });
    }

    /// Connections in use and idle, and the maximum, as `probe` reads them on each scrape.
    pub fn pool_state(&self, probe: impl Fn() -> PoolState + Send + Sync + 'static) {
        let connections = self.int_gauge_vec(
            "db_pool_connections",
            "Connections of the database pool, by state.",
            &["state"],
        );
        let max = self.int_gauge_vec(
            "db_pool_max_connections",
            "Size limit of the database pool.",
            &[],
        );
        let gauge = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        self.on_scrape(move || {
            let state = probe();
            connections
                .with_label_values(&["idle"])
                .set(gauge(state.idle));
            connections
                .with_label_values(&["in_use"])
                .set(gauge(state.in_use));
            max.with_label_values(&[] as &[&str]).set(gauge(state.max));
        });
    }

    /// Counts the answers of `routes` (patterns as mounted) in `name{route, outcome}`, where
    /// outcome is `ok` (below 400), `refused` (4xx) or `error` (5xx): sign-ins and their failures,
    /// quota consumptions and refusals.
    pub fn route_outcomes(&self, name: &str, help: &str, routes: &[&str]) {
        let family = counter_vec(name, help, &["route", "outcome"]);
        if let Ok(mut outcomes) = self.inner.outcomes.lock() {
            for route in routes {
                for outcome in ["ok", "refused", "error"] {
                    // Present from the start, so that rates exist before the first event.
                    family.with_label_values(&[route, outcome]);
                }
                outcomes.insert((*route).to_owned(), family.clone());
            }
        }
    }

    fn count_outcome(&self, route: &str, status: u16) {
        let family = match self.inner.outcomes.lock() {
            Ok(outcomes) => outcomes.get(route).cloned(),
            Err(_) => None,
        };
        if let Some(family) = family {
            let outcome = match status {
                0..400 => "ok",
                400..500 => "refused",
                _ => "error",
            };
            family.with_label_values(&[route, outcome]).inc();
        }
    }

    /// The text exposition of everything: process-wide families and this service's gauges.
    fn render(&self) -> Result<Vec<u8>, prometheus::Error> {
        let probes: Vec<Arc<Probe>> = match self.inner.probes.lock() {
            Ok(probes) => probes.clone(),
            Err(_) => Vec::new(),
        };
        for probe in probes {
            probe();
        }
        let mut families = prometheus::gather();
        families.extend(self.inner.registry.gather());
        let mut out = Vec::new();
        TextEncoder::new().encode(&families, &mut out)?;
        Ok(out)
    }
}

/// Middleware recording every request's count and latency by route pattern and status.
pub async fn record(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let started = Instant::now();
    let route = req
        .match_pattern()
        .unwrap_or_else(|| UNMATCHED_ROUTE.to_owned());
    let method = req.method().as_str().to_owned();
    let metrics = req.app_data::<web::Data<ServiceMetrics>>().cloned();
    let in_flight = InFlight::start();
    let result = next.call(req).await;
    drop(in_flight);
    let status = match &result {
        Ok(resp) => resp.status().as_u16(),
        Err(err) => err.as_response_error().status_code().as_u16(),
    };
    observe(
        &method,
        &route,
        status,
        started,
        metrics.as_ref().map(|m| m.get_ref()),
    );
    result
}

/// Counts one answered request, for [`record`] and for the requests served before actix (see
/// [`crate::files`]), so that both show up alike on `/metrics`.
pub(crate) fn observe(
    method: &str,
    route: &str,
    status: u16,
    started: Instant,
    metrics: Option<&ServiceMetrics>,
) {
    REQUESTS
        .with_label_values(&[method, route, &status.to_string()])
        .inc();
    DURATION
        .with_label_values(&[method, route])
        .observe(started.elapsed().as_secs_f64());
    if let Some(metrics) = metrics {
        metrics.count_outcome(route, status);
    }
}

/// Counts a request in flight for as long as it lives.
pub(crate) struct InFlight;

impl InFlight {
    pub(crate) fn start() -> Self {
        IN_FLIGHT.inc();
        Self
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        IN_FLIGHT.dec();
    }
}

/// `GET /metrics` in the Prometheus text format.
pub async fn handler(metrics: web::Data<ServiceMetrics>) -> HttpResponse {
    let metrics = metrics.get_ref().clone();
    match web::block(move || metrics.render()).await {
        Ok(Ok(body)) => HttpResponse::Ok()
            .insert_header((
                CONTENT_TYPE,
                HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
            ))
            .body(body),
        Ok(Err(err)) => {
            tracing::warn!(error = %err, "metrics could not be encoded");
            HttpResponse::InternalServerError().finish()
        }
        Err(_) => HttpResponse::ServiceUnavailable().finish(),
    }
}
