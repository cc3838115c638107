//! Prometheus metrics: a layer that counts and times every A2A call (gateway overhead and backend
//! time apart), plus gauges read at scrape time (backend health, open streams, live tasks). Names
//! follow the OpenTelemetry semantic conventions where one exists (`http.server.request.duration`),
//! `a2a.*` otherwise, in Prometheus spelling.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Instant;

use a2a_core::{A2aError, CallRequest, RequestInfo};
use http::Response;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tower::{Layer, Service};

pub mod calls;
pub mod recent;

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
/// It holds the counters and gauges recorded through the `metrics` macros; the per-call series
/// live in [`calls`], appended by [`render`].
pub fn install() -> Option<PrometheusHandle> {
    PrometheusBuilder::new().install_recorder().ok()
}

/// The whole exposition: the recorder's series, then the per-call ones.
pub fn render(handle: &PrometheusHandle) -> String {
    let mut out = handle.render();
    if !out.is_empty() && !out.ends_with("\n\n") {
        out.push('\n');
    }
    calls::render(&mut out);
    out
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

impl<S, B> Service<CallRequest> for MetricsService<S>
where
    S: Service<CallRequest, Response = Response<B>, Error = A2aError>,
{
    type Response = Response<B>;
    type Error = A2aError;
    type Future = MetricsFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), A2aError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: CallRequest) -> Self::Future {
        // gRPC calls are JSON-RPC inside; they are counted under the binding their caller used.
        let grpc = request.extensions().get::<crate::protocol::grpc::GrpcCall>().is_some();
        let context = request.body();
        let binding = if grpc { "GRPC" } else { context.call.binding.as_str() };
        let operation = context.call.operation.method_name();
        let info = context.info.clone();
        let started = Instant::now();
        MetricsFuture { inner: self.inner.call(request), started, operation, binding, info }
    }
}

pin_project_lite::pin_project! {
    /// The answer of [`MetricsService`]: the inner answer, recorded as it completes.
    pub struct MetricsFuture<F> {
        #[pin]
        inner: F,
        started: Instant,
        operation: &'static str,
        binding: &'static str,
        info: RequestInfo,
    }
}

impl<F, B> Future for MetricsFuture<F>
where
    F: Future<Output = Result<Response<B>, A2aError>>,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let result = ready!(this.inner.poll(cx));
        record(&result, this.started.elapsed(), this.operation, this.binding, this.info);
        Poll::Ready(result)
    }
}

/// Counts and times one finished call.
fn record<B>(
    result: &Result<Response<B>, A2aError>,
    elapsed: std::time::Duration,
    operation: &'static str,
    binding: &'static str,
    info: &RequestInfo,
) {
    let outcome = match result {
        Ok(response) => status_class(response.status().as_u16()),
        Err(error) => error.reason(),
    };
    let route = info.route();
    let skill = route.as_ref().and_then(|r| r.skill.as_deref()).unwrap_or_default();
    let backend = route.as_ref().map_or("", |r| &*r.backend);
    let refused = result.as_ref().err().and_then(|e| Some((limit_kind(e)?, e.reason())));
    recent::RECENT.record(skill, outcome != "ok", refused);
    let backend_time = info.backend_time();
    let overhead = (!backend_time.is_zero()).then(|| elapsed.saturating_sub(backend_time));
    calls::record_call(calls::CallLabels { operation, binding, skill, backend, outcome }, elapsed, overhead);
    if let Some((kind, _)) = refused {
        calls::record_limit_hit(kind);
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

/// The policy that refused a call, for the limits-hit counter (one of [`calls::LIMIT_KINDS`]).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_limit_kind_is_one_the_series_knows() {
        let refusals = [
            A2aError::Unauthenticated { message: "x".into(), challenge: "Bearer".into() },
            A2aError::PermissionDenied("x".into()),
            A2aError::RateLimited { message: "x".into(), retry_after: std::time::Duration::from_secs(1) },
            A2aError::TooManyTasks { held: 1, limit: 1 },
            A2aError::Validation { message: "x".into(), violations: Vec::new() },
        ];
        for error in &refusals {
            let kind = limit_kind(error).expect("a limit");
            assert!(calls::LIMIT_KINDS.contains(&kind), "{kind}");
        }
    }
}
