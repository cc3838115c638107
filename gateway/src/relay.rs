//! The SSE relay: hands each chunk of the backend's stream to the caller as it arrives, unchanged,
//! while a tap reads a copy to learn what the events say about tasks. It adds bytes of its own only
//! where the stream would otherwise fail the caller: a terminal event when the backend's stream breaks
//! off (or the gateway must close it while draining), and — opt-in — a `: ka` comment between events
//! when the backend has been quiet for the keep-alive interval.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use a2a_policies::{A2aError, Source, TaskState};
use bytes::Bytes;
use futures::Stream;
use futures::stream::BoxStream;
use serde_json::Value;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use crate::deadlines::Deadlines;
use crate::observers::{Exchange, Observers};
use crate::protocol::agent_side::ObservedCopy;
use crate::protocol::observe::fact_in;
use crate::protocol::sse::SseParser;
use crate::protocol::synthetic;

const KEEPALIVE: &[u8] = b": ka\r\n\r\n";

/// Reads a copy of the stream. It runs on each chunk before the chunk is handed on, so the directory
/// knows a task before the caller can ask about it; it never waits on anything.
struct Tap {
    parser: SseParser,
    observers: Arc<Observers>,
    exchange: Exchange,
    task_id: Option<String>,
    context_id: Option<String>,
    state: Option<TaskState>,
}

impl Tap {
    fn observe(&mut self, chunk: &[u8]) {
        let Tap { parser, observers, exchange, task_id, context_id, state } = self;
        parser.feed(chunk, &mut |data| {
            let Some(fact) = fact_in(exchange.binding, data, observers.wants_artifacts()) else { return };
            if fact.task_id.is_some() {
                task_id.clone_from(&fact.task_id);
            }
            if fact.context_id.is_some() {
                context_id.clone_from(&fact.context_id);
            }
            if fact.state.is_some() {
                *state = fact.state;
            }
            observers.report(exchange, &fact, Source::Stream);
        });
    }

    /// The task reached a state after which the backend closes the stream anyway.
    fn ended(&self) -> bool {
        self.state.is_some_and(|s| s.is_terminal() || matches!(s, TaskState::InputRequired | TaskState::AuthRequired))
    }
}

/// Per-stream settings from the gateway.
#[derive(Clone)]
pub struct StreamSettings {
    /// Write `: ka` after this long without a backend byte (between events only).
    pub keepalive: Option<Duration>,
    /// Cancelled when the gateway stops draining: open streams are closed with a terminal event.
    pub drain_deadline: CancellationToken,
    /// Task deadlines: a stream whose task expires is closed with a terminal `canceled` event.
    pub deadlines: Option<Arc<Deadlines>>,
}

pub struct Relay {
    inner: BoxStream<'static, reqwest::Result<Bytes>>,
    tap: Tap,
    rpc_id: Option<Value>,
    keepalive: Option<Duration>,
    idle: Option<Pin<Box<tokio::time::Sleep>>>,
    drain: Pin<Box<WaitForCancellationFutureOwned>>,
    deadlines: Option<Arc<Deadlines>>,
    /// Fires when the relayed task's deadline passes (known once the task id is).
    expiry: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
    finished: bool,
    /// Pass-through streams: the tap reads a 1.0 copy, and the caller gets no gateway-written events
    /// (they would be 1.0; the stream just ends).
    copy: Option<ObservedCopy>,
    _open: crate::metrics::OpenStream,
}

impl Relay {
    pub fn new(
        inner: BoxStream<'static, reqwest::Result<Bytes>>,
        observers: Arc<Observers>,
        exchange: Exchange,
        rpc_id: Option<Value>,
        settings: &StreamSettings,
    ) -> Relay {
        let tap = Tap { parser: SseParser::new(), observers, exchange, task_id: None, context_id: None, state: None };
        Relay {
            inner,
            tap,
            rpc_id,
            keepalive: settings.keepalive,
            idle: settings.keepalive.map(|d| Box::pin(tokio::time::sleep(d))),
            drain: Box::pin(settings.drain_deadline.clone().cancelled_owned()),
            deadlines: settings.deadlines.clone(),
            expiry: None,
            finished: false,
            copy: None,
            _open: crate::metrics::OpenStream::new(),
        }
    }

    /// Relays the agent's bytes unchanged to a caller of the agent's dialect; the tap reads them
    /// through `copy`.
    pub fn observing(mut self, copy: ObservedCopy) -> Relay {
        self.copy = Some(copy);
        self
    }

    /// The event that ends a stream the gateway must close, unless the task already ended; it goes
    /// through the tap too, so the directory and the observers learn the task's fate.
    fn closing_event(&mut self, state: TaskState, why: &str) -> Option<Bytes> {
        self.finished = true;
        if self.tap.ended() {
            return None;
        }
        let binding = self.tap.exchange.binding;
        let event = match &self.tap.task_id {
            Some(task_id) => synthetic::status_event(
                binding,
                self.rpc_id.as_ref(),
                task_id,
                self.tap.context_id.as_deref(),
                state,
                why,
            ),
            None => synthetic::error_event(binding, self.rpc_id.as_ref(), &A2aError::BackendUnavailable(why.into())),
        };
        // A half-written event is closed off first so the caller's parser is back between events.
        let mut out = Vec::with_capacity(event.len() + 4);
        if !self.tap.parser.at_boundary() {
            out.extend_from_slice(b"\r\n\r\n");
        }
        out.extend_from_slice(&event);
        self.tap.observe(&out);
        if self.copy.is_some() {
            return None;
        }
        Some(Bytes::from(out))
    }
}

impl Stream for Relay {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.finished {
            return Poll::Ready(None);
        }
        if this.drain.as_mut().poll(cx).is_ready() {
            return Poll::Ready(
                this.closing_event(TaskState::Failed, "the gateway is shutting down; the stream was closed").map(Ok),
            );
        }
        if let Some(expiry) = this.expiry.as_mut()
            && expiry.as_mut().poll(cx).is_ready()
        {
            return Poll::Ready(
                this.closing_event(TaskState::Canceled, "the task passed its deadline and was canceled").map(Ok),
            );
        }
        match this.inner.as_mut().poll_next(cx) {
            Poll::Ready(Some(Ok(bytes))) => {
                match this.copy.as_mut() {
                    Some(copy) => {
                        let v1 = copy.translate(&bytes);
                        this.tap.observe(&v1);
                    }
                    None => this.tap.observe(&bytes),
                }
                if this.expiry.is_none()
                    && let (Some(deadlines), Some(task_id)) = (&this.deadlines, &this.tap.task_id)
                    && let Some(token) = deadlines.expiry_of(task_id)
                {
                    this.expiry = Some(Box::pin(token.cancelled_owned()));
                }
                if let (Some(idle), Some(every)) = (this.idle.as_mut(), this.keepalive) {
                    idle.as_mut().reset(tokio::time::Instant::now() + every);
                }
                return Poll::Ready(Some(Ok(bytes)));
            }
            Poll::Ready(Some(Err(error))) => {
                tracing::warn!(backend = %this.tap.exchange.backend, %error, "backend stream broke off");
                return Poll::Ready(this.closing_event(TaskState::Failed, "the agent's stream broke off").map(Ok));
            }
            Poll::Ready(None) => {
                this.finished = true;
                return Poll::Ready(None);
            }
            Poll::Pending => {}
        }
        if let (Some(idle), Some(every)) = (this.idle.as_mut(), this.keepalive) {
            while idle.as_mut().poll(cx).is_ready() {
                idle.as_mut().reset(tokio::time::Instant::now() + every);
                if this.tap.parser.at_boundary() {
                    return Poll::Ready(Some(Ok(Bytes::from_static(KEEPALIVE))));
                }
            }
        }
        Poll::Pending
    }
}
