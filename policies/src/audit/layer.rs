//! The audit layer: sits right inside the gateway's decode layer, so it sees every decoded request,
//! lets it through the inner policies and the forwarder, and records the outcome — `denied` for a
//! refusal by authentication, permissions, rate or concurrency limits or validation, otherwise
//! `request` (and, for a send the backend answered, `task.received` if the observer has not
//! written it yet). Caller and route are read from [`RequestInfo`] after the inner call, since
//! inner layers set them.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{HeaderMap, Response};
use tower::{Layer, Service};

use super::Audit;
use super::record::{DenialExtra, Kind, Outcome, Record};
use super::requests::{CallFacts, InFlight, logs_content};
use a2a_core::{A2aError, CallRequest};

/// The W3C trace id of a request (32 lower-case hex digits), as a request extension. The gateway
/// inserts it when it starts or continues a trace; without it the layer reads a well-formed
/// `traceparent` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceId(pub Arc<str>);

#[derive(Debug, Clone)]
pub struct AuditLayer {
    audit: Audit,
}

impl AuditLayer {
    pub fn new(audit: Audit) -> AuditLayer {
        AuditLayer { audit }
    }
}

impl<S> Layer<S> for AuditLayer {
    type Service = AuditService<S>;

    fn layer(&self, inner: S) -> AuditService<S> {
        AuditService { inner, audit: self.audit.clone() }
    }
}

#[derive(Debug, Clone)]
pub struct AuditService<S> {
    inner: S,
    audit: Audit,
}

impl<S, B> Service<CallRequest> for AuditService<S>
where
    S: Service<CallRequest, Response = Response<B>, Error = A2aError>,
{
    type Response = Response<B>;
    type Error = A2aError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), A2aError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: CallRequest) -> Self::Future {
        if self.audit.inner.sink.refusing() {
            // `fail_closed`: a call the log cannot record is not served, and the caller may retry.
            // The refusal is counted and reported in one `audit.refused` record once the log
            // writes again.
            self.audit.inner.sink.refused();
            let error = A2aError::AuditUnavailable { retry_after: REFUSED_RETRY_AFTER };
            return ResponseFuture { inner: None, pending: None, refused: Some(error) };
        }
        let facts = call_facts(&request, &self.audit.inner.content_skills);
        let info = request.body().info.clone();
        let flight = self.audit.inner.requests.begin(info, facts);
        ResponseFuture {
            inner: Some(Box::pin(self.inner.call(request))),
            pending: Some((self.audit.clone(), flight)),
            refused: None,
        }
    }
}

fn call_facts(request: &CallRequest, content_skills: &[Box<str>]) -> CallFacts {
    let context = request.body();
    let call = &context.call;
    // A skill the call names is the skill it is routed by; one that names none learns its skill
    // from routing, after this layer.
    let keep_content =
        !content_skills.is_empty() && call.skill_id.as_deref().is_none_or(|named| logs_content(content_skills, named));
    let trace_id = match request.extensions().get::<TraceId>() {
        Some(trace) => Some(trace.0.clone()),
        None => trace_id_of(request.headers()),
    };
    CallFacts {
        binding: call.binding,
        operation: call.operation,
        task_id: call.task_id.as_deref().map(Arc::from),
        context_id: call.context_id.as_deref().map(Arc::from),
        skill: call.skill_id.as_deref().map(Arc::from),
        trace_id,
        // Written only for sends that may be logged with content: the checked message's parts, as
        // the body the agent gets writes them.
        parts: context
            .checked
            .message()
            .filter(|_| keep_content)
            .and_then(|message| serde_json::value::to_raw_value(&message.parts).ok()),
    }
}

/// The trace id of a well-formed `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`), not all zeros.
fn trace_id_of(headers: &HeaderMap) -> Option<Arc<str>> {
    let value = headers.get("traceparent")?.to_str().ok()?.trim();
    let mut fields = value.split('-');
    let (version, trace, parent, flags) = (fields.next()?, fields.next()?, fields.next()?, fields.next()?);
    let hex = |s: &str, len: usize| s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let well_formed = hex(version, 2) && version != "ff" && hex(trace, 32) && hex(parent, 16) && hex(flags, 2);
    (well_formed && (version != "00" || fields.next().is_none()) && trace.bytes().any(|b| b != b'0'))
        .then(|| Arc::from(trace))
}

/// Records the outcome when the inner future completes, or `abandoned` when it is dropped first.
pub struct ResponseFuture<F> {
    inner: Option<Pin<Box<F>>>,
    pending: Option<(Audit, Arc<InFlight>)>,
    refused: Option<A2aError>,
}

/// When a caller refused because the log cannot write may try again.
const REFUSED_RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

impl<F> std::fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}

impl<F, B> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response<B>, A2aError>>,
{
    type Output = Result<Response<B>, A2aError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(Err(this.refused.take().unwrap_or(A2aError::Internal)));
        };
        let result = std::task::ready!(inner.as_mut().poll(cx));
        if let Some((audit, flight)) = this.pending.take() {
            match &result {
                Ok(response) => audit.answered(&flight, response.status()),
                Err(error) => audit.refused(&flight, error),
            }
        }
        Poll::Ready(result)
    }
}

impl<F> Drop for ResponseFuture<F> {
    fn drop(&mut self) {
        if let Some((audit, flight)) = self.pending.take() {
            let record = Kind::Request {
                outcome: Outcome::Abandoned,
                status: None,
                duration: flight.info.started().elapsed(),
                reason: None,
                detail: None,
            };
            audit.inner.sink.send(Record::event(flight.common(), record));
            audit.inner.requests.remove(&flight);
        }
    }
}

impl Audit {
    fn answered(&self, flight: &Arc<InFlight>, status: http::StatusCode) {
        let inner = &self.inner;
        let success = !(status.is_client_error() || status.is_server_error());
        if success && flight.take_received() {
            let content = flight.content(&inner.content_skills);
            inner.sink.send(Record::event(flight.common(), Kind::Received { content }));
        }
        let record = Kind::Request {
            outcome: if success { Outcome::Ok } else { Outcome::Error },
            status: Some(status.as_u16()),
            duration: flight.info.started().elapsed(),
            reason: None,
            detail: None,
        };
        inner.sink.send(Record::event(flight.common(), record));
        let stream_follows = success && flight.call.operation.is_streaming();
        inner.requests.answered(flight, stream_follows);
    }

    fn refused(&self, flight: &Arc<InFlight>, error: &A2aError) {
        let inner = &self.inner;
        let duration = flight.info.started().elapsed();
        let detail = flight.info.denial_detail().map(str::to_owned);
        let record = match denial(error) {
            Some((category, extra)) => Kind::Denied { category, reason: error.reason(), detail, duration, extra },
            None => {
                Kind::Request { outcome: Outcome::Error, status: None, duration, reason: Some(error.reason()), detail }
            }
        };
        inner.sink.send(Record::event(flight.common(), record));
        inner.requests.remove(flight);
    }
}

/// The refusals that are denials, by category; anything else is a failed request.
fn denial(error: &A2aError) -> Option<(&'static str, DenialExtra)> {
    Some(match error {
        A2aError::Unauthenticated { .. } => ("authentication", DenialExtra::None),
        A2aError::PermissionDenied(_) => ("permission", DenialExtra::None),
        A2aError::RateLimited { retry_after, .. } => ("rate", DenialExtra::RetryAfter(*retry_after)),
        A2aError::TooManyTasks { held, limit } => ("concurrency", DenialExtra::Tasks { held: *held, limit: *limit }),
        A2aError::Validation { violations, .. } => {
            ("validation", DenialExtra::Violations(violations.iter().map(|v| v.pointer.clone()).collect()))
        }
        A2aError::PayloadTooLarge(_) => ("validation", DenialExtra::None),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("traceparent", value.parse().unwrap());
        headers
    }

    /// The gateway's decode layer needs a `Send` service and future.
    #[test]
    fn the_service_and_its_future_are_send() {
        fn send<T: Send + 'static>(_: &T) {}
        type Inner = tower::util::BoxCloneService<CallRequest, Response<()>, A2aError>;
        fn future_is_send(service: &mut AuditService<Inner>, request: CallRequest) {
            send(&service.call(request));
        }
        let _ = future_is_send;
    }

    #[test]
    fn trace_id_comes_only_from_a_well_formed_traceparent() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert_eq!(trace_id_of(&headers(good)).as_deref(), Some("4bf92f3577b34da6a3ce929d0e0e4736"));
        for bad in [
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "garbage",
        ] {
            assert_eq!(trace_id_of(&headers(bad)), None, "{bad}");
        }
        assert_eq!(trace_id_of(&HeaderMap::new()), None);
    }

    #[test]
    fn only_policy_refusals_are_denials() {
        let denied = [
            A2aError::Unauthenticated { message: "m".into(), challenge: "Bearer".into() },
            A2aError::PermissionDenied("m".into()),
            A2aError::RateLimited { message: "m".into(), retry_after: std::time::Duration::from_secs(1) },
            A2aError::TooManyTasks { held: 2, limit: 2 },
            A2aError::Validation { message: "m".into(), violations: vec![] },
        ];
        let categories: Vec<_> = denied.iter().map(|e| denial(e).unwrap().0).collect();
        assert_eq!(categories, ["authentication", "permission", "rate", "concurrency", "validation"]);
        for other in [A2aError::TaskNotFound, A2aError::BackendUnavailable("x".into()), A2aError::Internal] {
            assert!(denial(&other).is_none());
        }
    }
}
