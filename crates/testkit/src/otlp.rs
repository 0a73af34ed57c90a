//! An OpenTelemetry collector on `http://127.0.0.1:<free port>` that accepts OTLP over HTTP with
//! protobuf bodies (`POST /v1/traces`), decodes every export request with the protocol's own
//! message definitions and keeps the spans, so that a test sees exactly what a service exported.

use std::collections::HashMap;
use std::net::TcpListener;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use actix_web::dev::ServerHandle;
use actix_web::{HttpResponse, web};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use prost::Message;

/// One received span, flattened.
#[derive(Debug, Clone)]
pub struct ReceivedSpan {
    /// The resource's `service.name`.
    pub service: String,
    pub name: String,
    /// 32 lowercase hex digits.
    pub trace_id: String,
    /// 16 lowercase hex digits, empty for a root span.
    pub parent_span_id: String,
    /// `SPAN_KIND_SERVER` and so on, as the protocol numbers them.
    pub kind: i32,
    /// String, integer and boolean attributes, as text.
    pub attributes: HashMap<String, String>,
}

#[derive(Default)]
struct State {
    spans: Vec<ReceivedSpan>,
    /// Bodies that were not an export request.
    malformed: usize,
}

pub struct Collector {
    base: String,
    state: Arc<Mutex<State>>,
    handle: ServerHandle,
}

impl Collector {
    /// Starts the collector; must be called inside a Tokio runtime.
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind collector");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        let state = Arc::new(Mutex::new(State::default()));
        let data = web::Data::from(Arc::clone(&state));
        let handle = crate::http::serve(listener, 1, move |cfg| {
            cfg.app_data(data.clone())
                .app_data(web::PayloadConfig::new(16 * 1024 * 1024))
                .route("/v1/traces", web::post().to(traces));
        });
        Self {
            base,
            state,
            handle,
        }
    }

    /// The value for `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub fn endpoint(&self) -> &str {
        &self.base
    }

    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .spans
            .clone()
    }

    pub fn malformed(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .malformed
    }

    /// Waits until a span satisfies `wanted`, at most `timeout`.
    pub async fn wait_for(
        &self,
        timeout: Duration,
        wanted: impl Fn(&ReceivedSpan) -> bool,
    ) -> Option<ReceivedSpan> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(span) = self.spans().into_iter().find(|s| wanted(s)) {
                return Some(span);
            }
            if tokio::time::Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        drop(self.handle.stop(false));
    }
}

fn text(value: Option<&Value>) -> String {
    match value {
        Some(Value::StringValue(s)) => s.clone(),
        Some(Value::IntValue(i)) => i.to_string(),
        Some(Value::BoolValue(b)) => b.to_string(),
        Some(Value::DoubleValue(d)) => d.to_string(),
        _ => String::new(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

async fn traces(state: web::Data<Mutex<State>>, body: web::Bytes) -> HttpResponse {
    let Ok(request) = ExportTraceServiceRequest::decode(body.as_ref()) else {
        state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .malformed += 1;
        return HttpResponse::BadRequest().finish();
    };
    let mut received = Vec::new();
    for resource_spans in request.resource_spans {
        let service = resource_spans
            .resource
            .iter()
            .flat_map(|r| r.attributes.iter())
            .find(|kv| kv.key == "service.name")
            .map(|kv| text(kv.value.as_ref().and_then(|v| v.value.as_ref())))
            .unwrap_or_default();
        for scope in resource_spans.scope_spans {
            for span in scope.spans {
                received.push(ReceivedSpan {
                    service: service.clone(),
                    name: span.name,
                    trace_id: hex(&span.trace_id),
                    parent_span_id: hex(&span.parent_span_id),
                    kind: span.kind,
                    attributes: span
                        .attributes
                        .iter()
                        .map(|kv| {
                            (
                                kv.key.clone(),
                                text(kv.value.as_ref().and_then(|v| v.value.as_ref())),
                            )
                        })
                        .collect(),
                });
            }
        }
    }
    state
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .spans
        .extend(received);
    HttpResponse::Ok()
        .content_type("application/x-protobuf")
        .body(ExportTraceServiceResponse::default().encode_to_vec())
}
