//! One layer for every policy that looks at a request and lets it through or refuses it: the shape of
//! tower-http's `ValidateRequest` (a named, pin-projected future; `poll_ready` passed through), with
//! a decision that may wait (authentication may fetch keys, a shared rate limit asks Redis).
//!
//! A policy implements [`Check`]; [`CheckLayer`] is the one Layer/Service shell. The check owns the
//! request while it decides and hands it back, so a waiting check needs no copy of what it reads
//! and may add facts (authentication adds the [`Caller`](a2a_core::Caller)); a decision made at once
//! costs no allocation. A refusal is an [`A2aError`], rendered for the caller in one place by the
//! gateway. Layers that must stay with the response (concurrency holds its lease until the body
//! ends, audit records the answer) are not checks.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures::future::BoxFuture;
use tower::{Layer, Service};

use a2a_core::{A2aError, CallRequest};

/// A decision that waits for something outside the process; it owns the request meanwhile.
pub type Pending = BoxFuture<'static, Result<CallRequest, A2aError>>;

/// What a [`Check`] decided about one request.
pub enum Verdict {
    /// Let it through (the request, perhaps with facts added).
    Pass(CallRequest),
    /// Answer the caller with this error; the inner service never sees the request.
    Refuse(A2aError),
    /// Decided later: `Ok` hands the request on.
    Later(Pending),
}

impl From<Result<CallRequest, A2aError>> for Verdict {
    fn from(result: Result<CallRequest, A2aError>) -> Verdict {
        match result {
            Ok(request) => Verdict::Pass(request),
            Err(refusal) => Verdict::Refuse(refusal),
        }
    }
}

/// A policy that admits or refuses requests before the inner service sees them.
pub trait Check: Clone + Send + Sync + 'static {
    fn check(&self, request: CallRequest) -> Verdict;
}

/// Runs a [`Check`] before the inner service.
#[derive(Clone, Debug)]
pub struct CheckLayer<C> {
    check: C,
}

impl<C> CheckLayer<C> {
    pub const fn of(check: C) -> CheckLayer<C> {
        CheckLayer { check }
    }

    /// The policy this layer runs.
    pub fn policy(&self) -> &C {
        &self.check
    }
}

impl<C: Clone, S> Layer<S> for CheckLayer<C> {
    type Service = CheckService<C, S>;

    fn layer(&self, inner: S) -> CheckService<C, S> {
        CheckService { check: self.check.clone(), inner }
    }
}

/// The service of [`CheckLayer`].
#[derive(Clone, Debug)]
pub struct CheckService<C, S> {
    check: C,
    inner: S,
}

impl<C, S> Service<CallRequest> for CheckService<C, S>
where
    C: Check,
    S: Service<CallRequest, Error = A2aError> + Clone,
{
    type Response = S::Response;
    type Error = A2aError;
    type Future = CheckFuture<S>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), A2aError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: CallRequest) -> CheckFuture<S> {
        let state = match self.check.check(request) {
            Verdict::Pass(request) => State::Inner { future: self.inner.call(request) },
            Verdict::Refuse(refusal) => State::Refused { refusal: Some(refusal) },
            Verdict::Later(decision) => {
                // The inner service was readied in `poll_ready`: that one serves this call later.
                let clone = self.inner.clone();
                State::Waiting { decision, inner: Some(std::mem::replace(&mut self.inner, clone)) }
            }
        };
        CheckFuture { state }
    }
}

pin_project_lite::pin_project! {
    /// The response future of [`CheckService`].
    pub struct CheckFuture<S: Service<CallRequest>> {
        #[pin]
        state: State<S>,
    }
}

pin_project_lite::pin_project! {
    #[project = StateProj]
    enum State<S: Service<CallRequest>> {
        Refused { refusal: Option<A2aError> },
        Waiting { decision: Pending, inner: Option<S> },
        Inner { #[pin] future: S::Future },
    }
}

impl<S> Future for CheckFuture<S>
where
    S: Service<CallRequest, Error = A2aError>,
{
    type Output = Result<S::Response, A2aError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.project().state;
        loop {
            let future = match state.as_mut().project() {
                StateProj::Inner { future } => return future.poll(cx),
                StateProj::Refused { refusal } => {
                    return Poll::Ready(Err(refusal.take().expect("CheckFuture polled after completion")));
                }
                StateProj::Waiting { decision, inner } => {
                    let request = ready!(decision.as_mut().poll(cx));
                    let mut inner = inner.take().expect("CheckFuture polled after completion");
                    match request {
                        Ok(request) => inner.call(request),
                        Err(refusal) => return Poll::Ready(Err(refusal)),
                    }
                }
            };
            state.set(State::Inner { future });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tower::ServiceExt;

    use super::*;
    use a2a_core::CallContext;
    use http::Request;

    /// Counts the requests that reach it and answers with the `x` header's value.
    #[derive(Clone, Default)]
    struct Inner(Arc<AtomicUsize>);

    impl Service<CallRequest> for Inner {
        type Response = String;
        type Error = A2aError;
        type Future = std::future::Ready<Result<String, A2aError>>;
        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), A2aError>> {
            Poll::Ready(Ok(()))
        }
        fn call(&mut self, request: CallRequest) -> Self::Future {
            self.0.fetch_add(1, Ordering::SeqCst);
            let x = request.headers().get("x").map(|v| v.to_str().unwrap_or_default().to_owned());
            std::future::ready(Ok(x.unwrap_or_default()))
        }
    }

    /// Passes, refuses or decides later by the request's path; a later pass adds a header.
    #[derive(Clone)]
    struct ByPath;

    impl Check for ByPath {
        fn check(&self, mut request: CallRequest) -> Verdict {
            match request.uri().path() {
                "/pass" => Verdict::Pass(request),
                "/later" => Verdict::Later(Box::pin(async move {
                    tokio::task::yield_now().await;
                    request.headers_mut().insert("x", http::HeaderValue::from_static("added"));
                    Ok(request)
                })),
                "/later-refused" => Verdict::Later(Box::pin(async {
                    Err(A2aError::RateLimited {
                        message: "later".into(),
                        retry_after: std::time::Duration::from_secs(1),
                    })
                })),
                _ => Verdict::Refuse(A2aError::PermissionDenied("now".into())),
            }
        }
    }

    async fn call(path: &str) -> (Result<String, A2aError>, usize) {
        let inner = Inner::default();
        let seen = inner.0.clone();
        let service = CheckLayer::of(ByPath).layer(inner);
        let context = CallContext::for_test(
            a2a_core::A2aCall::new(a2a_core::Binding::JsonRpc, a2a_core::Operation::GetTask),
            "r",
        );
        let answer = service.oneshot(Request::post(path).body(Box::new(context)).unwrap()).await;
        (answer, seen.load(Ordering::SeqCst))
    }

    #[tokio::test]
    async fn a_pass_reaches_the_inner_service_and_a_refusal_does_not() {
        assert_eq!(call("/pass").await, (Ok(String::new()), 1));
        assert!(matches!(call("/no").await, (Err(A2aError::PermissionDenied(_)), 0)));
    }

    #[tokio::test]
    async fn a_later_decision_hands_on_the_request_it_owned() {
        assert_eq!(call("/later").await, (Ok("added".into()), 1));
        assert!(matches!(call("/later-refused").await, (Err(A2aError::RateLimited { .. }), 0)));
    }
}
