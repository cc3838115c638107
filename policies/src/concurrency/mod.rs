//! Per-caller live-task limits: a caller may hold at most N tasks that are submitted, working,
//! input-required or auth-required. Open HTTP requests are not what is counted — tasks are.
//!
//! How a slot is held:
//! 1. A call that creates a task (SendMessage / SendStreamingMessage without `taskId`) reserves a
//!    *pending* slot before it is forwarded, so concurrent requests cannot overshoot the limit;
//!    a caller already at its limit is refused with [`A2aError::TooManyTasks`]. Continuations of a
//!    task and every other operation pass through untouched.
//! 2. The gateway reports what answers say through [`TaskObserver`](a2a_core::TaskObserver) (unary
//!    answers, stream events, later GetTask / CancelTask answers). The first fact naming a task in
//!    the answer to the reserving request — matched by [`RequestInfo::request_id`], which the
//!    gateway puts in each [`TaskEvent`](a2a_core::TaskEvent) — turns the reservation into a lease on
//!    that task (backend + task id). If that task is already terminal, the reservation just ends.
//! 3. When the answer is over without naming a live task (an error, a plain message, a stream that
//!    broke off before its first task event) the reservation ends: the guard travels with the
//!    response body ([`LeaseBody`]) and is released when the body ends or is dropped, and at once
//!    when the inner service fails or the request is abandoned.
//! 4. A lease ends when any observation reports its task terminal (matched by backend + task id,
//!    whichever request it came in), or when `lease_ttl` has passed since it was taken — the bound
//!    for tasks whose end the gateway never sees.
//!
//! A task created by a stream that broke off before naming it is not leased (the gateway never
//! learns its id). An expired slot is given back when a caller at its limit asks for one (at most
//! 100 ms late: expired slots are looked for at most that often). Memory is bounded: expired slots
//! are dropped every eighth of `lease_ttl` (at least every second), and callers holding nothing every
//! second, as reservations come (or by [`LiveTasks::sweep`] on the owner's timer).
//!
//! Construction is cheap and in-process: `let live = LiveTasks::new(&config)?;`, then
//! `ConcurrencyLayer::new(live.clone())`, and register `live` as a
//! [`TaskObserver`](a2a_core::TaskObserver). The layer's response body type is [`LeaseBody<B>`] around
//! the inner body `B`.

mod shared;
mod table;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use futures::future::BoxFuture;
use http_body::{Body, Frame, SizeHint};
use serde::Deserialize;
use tower::{Layer, Service};

pub use self::shared::{LeaseVerdict, SharedLeases};
pub use self::table::{LiveTasks, Reservation, Reserving};
use a2a_core::{A2aError, CallRequest};

/// The `concurrency` section of the policy configuration.
///
/// ```yaml
/// concurrency:
///   default_max_live_tasks: 20
///   callers: {"apikey:ci": 5}
///   lease_ttl: 1h
/// ```
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConcurrencyConfig {
    /// Live tasks a caller may hold unless named below.
    #[serde(default = "default_max_live_tasks")]
    pub default_max_live_tasks: usize,
    /// Limits for particular callers, keyed by `Caller.id` exactly as authentication sets it.
    #[serde(default)]
    pub callers: BTreeMap<String, usize>,
    /// How long a lease lasts at most (e.g. `90s`, `1h`): set it above the longest task you expect.
    #[serde(default = "default_lease_ttl", with = "a2a_core::duration")]
    #[schemars(with = "a2a_core::duration::Text")]
    pub lease_ttl: Duration,
}

impl Default for ConcurrencyConfig {
    fn default() -> Self {
        ConcurrencyConfig {
            default_max_live_tasks: default_max_live_tasks(),
            callers: BTreeMap::new(),
            lease_ttl: default_lease_ttl(),
        }
    }
}

fn default_max_live_tasks() -> usize {
    20
}

fn default_lease_ttl() -> Duration {
    Duration::from_secs(3600)
}

/// Reserves live-task slots for task-creating calls; see the module docs.
#[derive(Clone)]
pub struct ConcurrencyLayer {
    live: Arc<LiveTasks>,
}

impl ConcurrencyLayer {
    pub fn new(live: Arc<LiveTasks>) -> ConcurrencyLayer {
        ConcurrencyLayer { live }
    }
}

impl<S> Layer<S> for ConcurrencyLayer {
    type Service = ConcurrencyService<S>;

    fn layer(&self, inner: S) -> ConcurrencyService<S> {
        ConcurrencyService { inner, live: self.live.clone() }
    }
}

#[derive(Clone)]
pub struct ConcurrencyService<S> {
    inner: S,
    live: Arc<LiveTasks>,
}

impl<S> ConcurrencyService<S> {
    fn reserve(&self, request: &CallRequest) -> Option<Reserving> {
        let context = request.body();
        let creates_task = context.call.operation.is_send() && context.call.task_id.is_none();
        creates_task.then(|| self.live.reserve_any(&context.caller.id, context.info.request_id()))
    }
}

impl<S, B> Service<CallRequest> for ConcurrencyService<S>
where
    S: Service<CallRequest, Response = http::Response<B>, Error = A2aError> + Clone + Send + 'static,
    S::Future: Send,
    B: Send + 'static,
{
    type Response = http::Response<LeaseBody<B>>;
    type Error = A2aError;
    type Future = ResponseFuture<S::Future, B>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), A2aError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: CallRequest) -> Self::Future {
        match self.reserve(&request) {
            None => ResponseFuture::Forward { future: self.inner.call(request), reservation: None },
            Some(Reserving::Now(Ok(reservation))) => {
                ResponseFuture::Forward { future: self.inner.call(request), reservation: Some(reservation) }
            }
            Some(Reserving::Now(Err(refusal))) => ResponseFuture::Refused { refusal: Some(refusal) },
            Some(Reserving::Shared(reserving)) => {
                // The inner service was readied in `poll_ready`: keep that one for this call.
                let clone = self.inner.clone();
                let mut inner = std::mem::replace(&mut self.inner, clone);
                ResponseFuture::Shared {
                    future: Box::pin(async move {
                        let reservation = reserving.await?;
                        // On an error the reservation drops here: released.
                        let response = inner.call(request).await?;
                        Ok(response.map(|inner| LeaseBody { inner, reservation: Some(reservation) }))
                    }),
                }
            }
        }
    }
}

pin_project_lite::pin_project! {
    /// The answer of [`ConcurrencyService`]: the inner answer with the reservation moved into its body.
    #[project = Projected]
    pub enum ResponseFuture<F, B> {
        Forward { #[pin] future: F, reservation: Option<Reservation> },
        Refused { refusal: Option<A2aError> },
        /// Reserving in a shared store, then forwarding.
        Shared { future: BoxFuture<'static, Result<http::Response<LeaseBody<B>>, A2aError>> },
    }
}

impl<F, B> Future for ResponseFuture<F, B>
where
    F: Future<Output = Result<http::Response<B>, A2aError>>,
{
    type Output = Result<http::Response<LeaseBody<B>>, A2aError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            Projected::Forward { future, reservation } => {
                // On an error the reservation drops with this future's state: released.
                let response = ready!(future.poll(cx))?;
                let reservation = reservation.take();
                Poll::Ready(Ok(response.map(|inner| LeaseBody { inner, reservation })))
            }
            Projected::Refused { refusal } => Poll::Ready(Err(refusal.take().unwrap_or(A2aError::Internal))),
            Projected::Shared { future } => future.as_mut().poll(cx),
        }
    }
}

pin_project_lite::pin_project! {
    /// A response body that holds a pending reservation until the answer is over: its end, an
    /// error, or being dropped (the caller went away) releases the reservation, unless the gateway
    /// bound it to a live task in the meantime. Bytes pass through untouched.
    pub struct LeaseBody<B> {
        #[pin]
        inner: B,
        reservation: Option<Reservation>,
    }
}

impl<B> LeaseBody<B> {
    /// A body holding no reservation.
    pub fn new(inner: B) -> LeaseBody<B> {
        LeaseBody { inner, reservation: None }
    }
}

impl<B: Body> Body for LeaseBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let this = self.project();
        let frame = ready!(this.inner.poll_frame(cx));
        if !matches!(frame, Some(Ok(_))) {
            this.reservation.take();
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests;
