//! Distributed traces: a span per A2A call, exported by OTLP/HTTP when an endpoint is configured
//! (off otherwise). W3C `traceparent` from callers is the span's parent; backends receive the
//! gateway's span as theirs, so a trace runs caller → gateway → agent.

use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use a2a_core::{A2aError, CallRequest};
use a2a_policies::audit::TraceId;
use futures::future::BoxFuture;
use http::{HeaderMap, HeaderName, HeaderValue, Response};
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracer, SdkTracerProvider};
use tower::{Layer, Service, ServiceExt};

pub use crate::config::TelemetryConfig;

static INSTALLED: std::sync::OnceLock<Arc<Telemetry>> = std::sync::OnceLock::new();

/// The trace layer of the installed exporter, if any.
pub fn installed_layer() -> Option<TraceLayer> {
    INSTALLED.get().map(|t| t.layer())
}

/// Sends the installed exporter's last spans (at exit).
pub fn shutdown_installed() {
    if let Some(telemetry) = INSTALLED.get()
        && let Err(error) = telemetry.provider.shutdown()
    {
        tracing::warn!(%error, "trace export did not shut down cleanly");
    }
}

/// The exporter; shut it down at exit so the last spans are sent.
pub struct Telemetry {
    provider: SdkTracerProvider,
    tracer: Arc<SdkTracer>,
}

impl Telemetry {
    /// Starts OTLP export when the config names an endpoint.
    pub fn start(config: &TelemetryConfig) -> anyhow::Result<Option<Telemetry>> {
        let Some(endpoint) = &config.otlp_endpoint else { return Ok(None) };
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpJson)
            .with_endpoint(format!("{}/v1/traces", endpoint.trim_end_matches('/')))
            .build()?;
        let batch = BatchConfigBuilder::default().with_scheduled_delay(config.export_interval).build();
        let processor = BatchSpanProcessor::builder(exporter).with_batch_config(batch).build();
        let resource = opentelemetry_sdk::Resource::builder().with_service_name(config.service_name.clone()).build();
        let provider = SdkTracerProvider::builder().with_span_processor(processor).with_resource(resource).build();
        let tracer = Arc::new(provider.tracer("a2a-gateway"));
        Ok(Some(Telemetry { provider, tracer }))
    }

    pub fn layer(&self) -> TraceLayer {
        TraceLayer { tracer: self.tracer.clone() }
    }

    /// Makes this the process's exporter: every stack built afterwards traces its calls.
    pub fn install(self) -> Arc<Telemetry> {
        let telemetry = Arc::new(self);
        let _ = INSTALLED.set(telemetry.clone());
        telemetry
    }
}

struct HeaderReader<'a>(&'a HeaderMap);

impl Extractor for HeaderReader<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }
    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(HeaderName::as_str).collect()
    }
}

struct HeaderWriter<'a>(&'a mut HeaderMap);

impl Injector for HeaderWriter<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (HeaderName::try_from(key), HeaderValue::try_from(value)) {
            self.0.insert(name, value);
        }
    }
}

/// The caller's trace context, from `traceparent` / `tracestate`.
pub fn extract(headers: &HeaderMap) -> Context {
    TraceContextPropagator::new().extract(&HeaderReader(headers))
}

/// Writes `context` as `traceparent` / `tracestate`.
pub fn inject(context: &Context, headers: &mut HeaderMap) {
    TraceContextPropagator::new().inject_context(context, &mut HeaderWriter(headers));
}

/// A server span per call, child of the caller's trace; its context replaces the caller's
/// `traceparent` on the way in, so the backend call becomes its child.
#[derive(Clone)]
pub struct TraceLayer {
    tracer: Arc<SdkTracer>,
}

impl<S> Layer<S> for TraceLayer {
    type Service = TraceService<S>;
    fn layer(&self, inner: S) -> TraceService<S> {
        TraceService { inner, tracer: self.tracer.clone() }
    }
}

#[derive(Clone)]
pub struct TraceService<S> {
    inner: S,
    tracer: Arc<SdkTracer>,
}

impl<S, B> Service<CallRequest> for TraceService<S>
where
    S: Service<CallRequest, Response = Response<B>, Error = A2aError> + Clone + Send + 'static,
    S::Future: Send,
    B: Send + 'static,
{
    type Response = Response<B>;
    type Error = A2aError;
    type Future = BoxFuture<'static, Result<Response<B>, A2aError>>;

    fn poll_ready(&mut self, _cx: &mut TaskContext<'_>) -> Poll<Result<(), A2aError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: CallRequest) -> Self::Future {
        let inner = self.inner.clone();
        let parent = extract(request.headers());
        let (binding, task_id) = (request.body().call.binding, request.body().call.task_id.clone());
        let operation = request.body().call.operation.method_name();
        let span = self
            .tracer
            .span_builder(format!("a2a {operation}"))
            .with_kind(SpanKind::Server)
            .start_with_context(self.tracer.as_ref(), &parent);
        let context = parent.with_span(span);
        let trace_id = context.span().span_context().trace_id().to_string();
        request.extensions_mut().insert(TraceId(Arc::from(trace_id)));
        inject(&context, request.headers_mut());
        let info = request.body().info.clone();
        Box::pin(async move {
            let result = inner.oneshot(request).await;
            let span = context.span();
            let mut attributes = vec![KeyValue::new("a2a.operation", operation)];
            attributes.push(KeyValue::new("a2a.binding", binding.to_string()));
            if let Some(task_id) = task_id {
                attributes.push(KeyValue::new("a2a.task_id", task_id));
            }
            attributes.push(KeyValue::new("a2a.request_id", info.request_id().to_string()));
            if let Some(caller) = info.caller() {
                attributes.push(KeyValue::new("a2a.caller", caller.id.to_string()));
            }
            if let Some(route) = info.route() {
                attributes.push(KeyValue::new("a2a.backend", route.backend.to_string()));
                if let Some(skill) = &route.skill {
                    attributes.push(KeyValue::new("a2a.skill", skill.clone()));
                }
            }
            if let Some(reason) = info.route_reason() {
                attributes.push(KeyValue::new("a2a.skill.resolved_by", reason.to_string()));
            }
            match &result {
                Ok(response) => {
                    attributes.push(KeyValue::new("http.response.status_code", i64::from(response.status().as_u16())));
                    attributes.push(KeyValue::new("a2a.outcome", "ok"));
                }
                Err(error) => {
                    attributes.push(KeyValue::new("a2a.outcome", error.reason()));
                    span.set_status(Status::error(error.reason()));
                }
            }
            span.set_attributes(attributes);
            span.end();
            result
        })
    }
}

/// The span of one call to a backend, child of the call's server span (whose context the trace
/// layer wrote into the request headers); `headers` carry this span's own `traceparent` on.
pub struct BackendCall {
    context: Context,
    pub headers: HeaderMap,
}

/// Starts a client span for a call to `backend`, when traces are exported.
pub fn backend_call(headers: &HeaderMap, backend: &str) -> Option<BackendCall> {
    let telemetry = INSTALLED.get()?;
    let parent = extract(headers);
    let span = telemetry
        .tracer
        .span_builder(format!("a2a backend {backend}"))
        .with_kind(SpanKind::Client)
        .with_attributes([KeyValue::new("a2a.backend", backend.to_string())])
        .start_with_context(telemetry.tracer.as_ref(), &parent);
    let context = parent.with_span(span);
    let mut headers = headers.clone();
    inject(&context, &mut headers);
    Some(BackendCall { context, headers })
}

impl BackendCall {
    /// Ends the span; `error` names what went wrong, if anything.
    pub fn finish(self, error: Option<&str>) {
        let span = self.context.span();
        if let Some(reason) = error {
            span.set_status(Status::error(reason.to_string()));
        }
        span.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_round_trips() {
        let mut headers = HeaderMap::new();
        headers.insert("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".parse().unwrap());
        let context = extract(&headers);
        assert_eq!(context.span().span_context().trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        let mut out = HeaderMap::new();
        inject(&context, &mut out);
        assert_eq!(out["traceparent"], headers["traceparent"]);
    }
}
