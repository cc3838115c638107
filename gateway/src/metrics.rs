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
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tower::{Layer, Service};

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
    let denial = result.as_ref().err().and_then(|e| Some((limit_kind(e)?, e.reason())));
    recent::RECENT.record(skill, outcome != "ok", denial);
    let backend_time = info.backend_time();
    CallMetrics::with(CallLabels { operation, binding, skill, backend, outcome }, |metrics| {
        metrics.requests.increment(1);
        metrics.duration.record(elapsed.as_secs_f64());
        if !backend_time.is_zero() {
            metrics.overhead.record(elapsed.saturating_sub(backend_time).as_secs_f64());
        }
    });
    if let Err(error) = result
        && let Some(kind) = limit_kind(error)
    {
        metrics::counter!(LIMITS_HIT, "kind" => kind).increment(1);
    }
}

/// The labels of one call's metrics.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct CallLabels<'a> {
    operation: &'static str,
    binding: &'static str,
    skill: &'a str,
    backend: &'a str,
    outcome: &'static str,
}

/// The handles of one label set's per-call metrics, registered once and kept per thread: looking a
/// handle up in the recorder builds, allocates and hashes its whole key on every call.
struct CallMetrics {
    operation: &'static str,
    binding: &'static str,
    outcome: &'static str,
    skill: Box<str>,
    backend: Box<str>,
    requests: metrics::Counter,
    duration: metrics::Histogram,
    overhead: metrics::Histogram,
}

thread_local! {
    /// [`BACKEND_DURATION`]'s handle per backend.
    static BACKEND_DURATIONS: std::cell::RefCell<crate::hashing::FastMap<Box<str>, metrics::Histogram>> =
        std::cell::RefCell::default();
    /// By the hash of their labels; a hash shared by two label sets holds both.
    static CALL_METRICS: std::cell::RefCell<crate::hashing::FastMap<u64, Vec<CallMetrics>>> =
        std::cell::RefCell::default();
}

impl CallMetrics {
    fn with(labels: CallLabels<'_>, use_them: impl FnOnce(&CallMetrics)) {
        use std::hash::BuildHasher;
        // Fixed seed: the same labels must hash alike on every call of this thread.
        let hash = foldhash::fast::FixedState::default().hash_one(labels);
        CALL_METRICS.with_borrow_mut(|cache| {
            let same = cache.entry(hash).or_default();
            let at = match same.iter().position(|m| m.matches(&labels)) {
                Some(at) => at,
                None => {
                    same.push(CallMetrics::register(labels));
                    same.len() - 1
                }
            };
            use_them(&same[at]);
        });
    }

    fn matches(&self, labels: &CallLabels<'_>) -> bool {
        self.operation == labels.operation
            && self.binding == labels.binding
            && self.outcome == labels.outcome
            && *self.skill == *labels.skill
            && *self.backend == *labels.backend
    }

    fn register(labels: CallLabels<'_>) -> CallMetrics {
        let CallLabels { operation, binding, skill, backend, outcome } = labels;
        let requests = [
            ("operation", operation.to_owned()),
            ("binding", binding.to_owned()),
            ("skill", skill.to_owned()),
            ("backend", backend.to_owned()),
            ("outcome", outcome.to_owned()),
        ];
        CallMetrics {
            operation,
            binding,
            outcome,
            skill: skill.into(),
            backend: backend.into(),
            requests: metrics::counter!(REQUESTS, &requests),
            duration: metrics::histogram!(REQUEST_DURATION, "operation" => operation),
            overhead: metrics::histogram!(OVERHEAD, "operation" => operation),
        }
    }
}

/// Records how long `backend` took to answer a call, through a handle each thread registers once
/// per backend (as [`CallMetrics`] does for the per-call metrics).
pub fn record_backend_duration(backend: &str, seconds: f64) {
    BACKEND_DURATIONS.with_borrow_mut(|handles| match handles.get(backend) {
        Some(histogram) => histogram.record(seconds),
        None => {
            let histogram = metrics::histogram!(BACKEND_DURATION, "backend" => backend.to_owned());
            histogram.record(seconds);
            handles.insert(backend.into(), histogram);
        }
    });
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

#[cfg(test)]
mod tests {
    use super::*;

    fn cached() -> usize {
        CALL_METRICS.with_borrow(|cache| cache.values().map(Vec::len).sum())
    }

    #[test]
    fn a_label_set_registers_its_handles_once() {
        let labels = |skill, outcome| CallLabels {
            operation: "SendMessage",
            binding: "JSONRPC",
            skill,
            backend: "echo",
            outcome,
        };
        let before = cached();
        for _ in 0..3 {
            CallMetrics::with(labels("echo", "ok"), |m| assert_eq!(&*m.skill, "echo"));
        }
        assert_eq!(cached(), before + 1);
        CallMetrics::with(labels("review", "ok"), |m| assert_eq!(&*m.skill, "review"));
        CallMetrics::with(labels("echo", "backend_5xx"), |m| assert_eq!(m.outcome, "backend_5xx"));
        assert_eq!(cached(), before + 3);
    }

    #[test]
    fn a_backend_registers_its_duration_handle_once() {
        let cached = || BACKEND_DURATIONS.with_borrow(|handles| handles.len());
        let before = cached();
        for backend in ["echo", "echo", "review", "echo"] {
            record_backend_duration(backend, 0.001);
        }
        assert_eq!(cached(), before + 2);
    }
}
