//! Prometheus metrics: a layer that counts and times every A2A call (gateway overhead and backend
//! time apart), plus gauges read at scrape time (backend health, open streams, live tasks). Names
//! follow the OpenTelemetry semantic conventions where one exists (`http.server.request.duration`),
//! `a2a.*` otherwise, in Prometheus spelling.

use std::sync::atomic::{AtomicI64, Ordering};
use std::task::{Context, Poll};
use std::time::Instant;

use a2a_core::{A2aCall, A2aError, RequestInfo};
use bytes::Bytes;
use futures::future::BoxFuture;
use http::{Request, Response};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tower::{Layer, Service, ServiceExt};

pub const REQUESTS: &str = "a2a_requests_total";
pub const REQUEST_DURATION: &str = "http_server_request_duration_seconds";
pub const OVERHEAD: &str = "a2a_gateway_overhead_seconds";
pub const BACKEND_DURATION: &str = "a2a_backend_request_duration_seconds";
pub const LIMITS_HIT: &str = "a2a_limits_hit_total";
/// Skills chosen by the resolver for messages that named none, by rule (`single`, `lexical`).
pub const SKILL_RESOLUTIONS: &str = "a2a_skill_resolutions_total";
/// Push-notification deliveries to callers' webhooks, by outcome (`delivered`, `failed`).
pub const PUSH_DELIVERIES: &str = "a2a_push_deliveries_total";
/// Push notifications given up on (retries spent, or the caller's queue full), by reason.
pub const PUSH_DEAD_LETTERS: &str = "a2a_push_dead_letters_total";
/// Webhook URLs refused by the address screen.
pub const PUSH_REFUSED: &str = "a2a_push_refused_total";

/// SSE streams being relayed right now.
pub static OPEN_STREAMS: AtomicI64 = AtomicI64::new(0);

/// Installs the process-wide recorder; `None` if one is installed already (tests, a second run).
pub fn install() -> Option<PrometheusHandle> {
    // From 50 µs (a gateway hop) to a minute (a blocking task).
    let buckets = [
        0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
        10.0, 30.0, 60.0,
    ];
    PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &buckets)
        .ok()?
        .install_recorder()
        .ok()
}

/// Counts and times each call: by operation, binding, skill, backend and outcome.
#[derive(Clone, Default)]
pub struct MetricsLayer;

impl<S> Layer<S> for MetricsLayer {
    type Service = MetricsService<S>;
    fn layer(&self, inner: S) -> MetricsService<S> {
        MetricsService { inner }
    }
}

#[derive(Clone)]
pub struct MetricsService<S> {
    inner: S,
}

impl<S, B> Service<Request<Bytes>> for MetricsService<S>
where
    S: Service<Request<Bytes>, Response = Response<B>, Error = A2aError> + Clone + Send + 'static,
    S::Future: Send,
    B: Send + 'static,
{
    type Response = Response<B>;
    type Error = A2aError;
    type Future = BoxFuture<'static, Result<Response<B>, A2aError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), A2aError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Bytes>) -> Self::Future {
        let inner = self.inner.clone();
        // gRPC calls are JSON-RPC inside; they are counted under the binding their caller used.
        let grpc = request.extensions().get::<crate::protocol::grpc::GrpcCall>().is_some();
        let call = request.extensions().get::<A2aCall>().map(|c| {
            let binding = if grpc { "GRPC".to_owned() } else { c.binding.to_string() };
            (c.operation.method_name(), binding)
        });
        let info = request.extensions().get::<RequestInfo>().cloned();
        Box::pin(async move {
            let started = Instant::now();
            let result = inner.oneshot(request).await;
            let elapsed = started.elapsed();
            let outcome = match &result {
                Ok(response) => status_class(response.status().as_u16()),
                Err(error) => error.reason(),
            };
            let (operation, binding) = call.unwrap_or(("unknown", a2a_core::Binding::Rest.to_string()));
            let route = info.as_ref().and_then(|i| i.route());
            let skill = route.and_then(|r| r.skill.clone()).unwrap_or_default();
            let backend = route.map(|r| r.backend.to_string()).unwrap_or_default();
            let denial = result.as_ref().err().and_then(|e| Some((limit_kind(e)?, e.reason())));
            crate::admin::stats::RECENT.record(&skill, outcome != "ok", denial);
            let labels = [
                ("operation", operation.to_string()),
                ("binding", binding),
                ("skill", skill),
                ("backend", backend),
                ("outcome", outcome.to_string()),
            ];
            metrics::counter!(REQUESTS, &labels).increment(1);
            metrics::histogram!(REQUEST_DURATION, "operation" => operation).record(elapsed.as_secs_f64());
            let backend_time = info.as_ref().map(RequestInfo::backend_time).unwrap_or_default();
            if !backend_time.is_zero() {
                metrics::histogram!(OVERHEAD, "operation" => operation)
                    .record(elapsed.saturating_sub(backend_time).as_secs_f64());
            }
            if let Err(error) = &result
                && let Some(kind) = limit_kind(error)
            {
                metrics::counter!(LIMITS_HIT, "kind" => kind).increment(1);
            }
            result
        })
    }
}

fn status_class(status: u16) -> &'static str {
    match status {
        200..=299 => "ok",
        400..=499 => "backend_4xx",
        500..=599 => "backend_5xx",
        _ => "other",
    }
}

/// The policy that refused a call, for the limits-hit counter.
fn limit_kind(error: &A2aError) -> Option<&'static str> {
    Some(match error {
        A2aError::Unauthenticated { .. } => "authentication",
        A2aError::PermissionDenied(_) => "permission",
        A2aError::RateLimited { .. } => "rate",
        A2aError::TooManyTasks { .. } => "concurrency",
        A2aError::Validation { .. } | A2aError::PayloadTooLarge(_) => "validation",
        _ => return None,
    })
}

/// Counts one relayed stream for as long as it lives.
pub struct OpenStream;

impl OpenStream {
    pub fn new() -> OpenStream {
        OPEN_STREAMS.fetch_add(1, Ordering::Relaxed);
        OpenStream
    }
}

impl Default for OpenStream {
    fn default() -> Self {
        OpenStream::new()
    }
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        OPEN_STREAMS.fetch_sub(1, Ordering::Relaxed);
    }
}
