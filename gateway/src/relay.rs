//! The SSE relay: hands the backend's stream to the caller event by event as it arrives, unchanged,
//! while a tap reads each event to learn what it says about tasks. The stream contract: every
//! relayed stream ends with a terminal or interrupted state, or with a status update (an error event
//! when no task was named yet) the gateway writes in the caller's dialect saying why — the agent cut
//! the stream, ended it early, sent an event that is not JSON, one too large, or an error (screened
//! like unary errors), or the stream went idle, outlived its limit, passed its task's deadline, or
//! the gateway is draining. The tap reads that ending too, so the directory, the leases and the
//! audit log learn it.
//!
//! Only whole, valid events are handed on: the bytes of an event still arriving wait for its end
//! (without a copy: the pieces are `Bytes` slices of the backend's chunks), so the gateway's own
//! bytes can never land inside an event, and a bad event never reaches the caller. Opt-in, a `: ka`
//! comment is written when the backend has been quiet for the keep-alive interval.
//!
//! The agent's events are framed once, here, whatever the leg ([`Reading`]): a 1.0 agent's events
//! go on as they are, a pass-through agent's too while the tap reads their 1.0 copy, and a bridged
//! agent's are converted to 1.0 and the caller gets the conversion. A gRPC agent's messages arrive
//! decoded, one 1.0 event each, and are framed for the caller here.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use a2a_core::{Binding, Dialect};
use bytes::Bytes;
use futures::Stream;
use futures::stream::BoxStream;
use serde_json::Value;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use crate::config::StreamLimits;
use crate::deadlines::Deadlines;
use crate::observers::{Exchange, Observers};
use crate::protocol::agent_side::{EventConverter, Fault, Unread};
use crate::protocol::errors::Refusal;
use crate::protocol::sse::{SseParser, frame};
use crate::protocol::{bridge, synthetic};
use crate::workers::PerWorker;

mod end;
mod tap;

pub use end::{STREAM_ENDS, StreamEnd};
use tap::Tap;

const KEEPALIVE: &[u8] = b": ka\r\n\r\n";

/// Per-stream settings from the gateway.
#[derive(Clone)]
pub struct StreamSettings {
    /// Write `: ka` after this long without a backend byte.
    pub keepalive: Option<Duration>,
    /// Cancelled when the gateway stops draining: open streams are closed with a terminal event
    /// (each worker's streams wait on that worker's child of the deadline, [`crate::gateway::Shared`]).
    pub drain_deadline: PerWorker<CancellationToken>,
    /// Task deadlines: a stream whose task expires is closed with a terminal `canceled` event.
    pub deadlines: Option<Arc<Deadlines>>,
    /// Idle timeout, lifetime and event size, with per-skill overrides.
    pub limits: Arc<crate::config::Streams>,
}

/// How the relay reads the agent's events, and what the caller gets of each.
pub enum Reading {
    /// 1.0 in the caller's binding: the caller gets the agent's bytes, the tap reads them.
    Native,
    /// The agent speaks the caller's dialect (0.3): the caller gets the agent's bytes, the tap
    /// reads their 1.0 copy (an event the gateway cannot read passes unread).
    PassThrough(EventConverter),
    /// Another dialect or binding: the caller gets each event converted to 1.0, and so does the tap.
    Bridged(EventConverter),
    /// Each item of the agent's stream is one whole 1.0 event's data in the caller's binding (a gRPC
    /// agent's messages, decoded): the tap reads it and the caller gets it framed.
    Events,
}

pub struct Relay {
    inner: BoxStream<'static, Result<Bytes, Fault>>,
    /// Frames the agent's events.
    framer: SseParser,
    tap: Tap,
    reading: Reading,
    rpc_id: Option<Value>,
    /// Pieces of the event still arriving, handed on once it is whole and valid.
    held: Vec<Bytes>,
    /// Ready for the caller.
    out: VecDeque<Bytes>,
    limits: StreamLimits,
    keepalive: Option<Duration>,
    /// The keep-alive comment's timer and when it is due. An event only moves `quiet_until`; the
    /// timer is moved when it fires early (resetting a timer per event re-files it in the runtime's
    /// timer wheel: ~4 % of a relayed event's instructions with the idle timer's).
    quiet: Option<Pin<Box<Sleep>>>,
    quiet_until: Instant,
    /// One timer for the idle timeout and the lifetime, armed for the earlier of the two and moved,
    /// as `quiet` is, only when it fires before the stream has been idle that long.
    limit: Pin<Box<Sleep>>,
    idle_until: Instant,
    ends_at: Instant,
    drain: Pin<Box<WaitForCancellationFutureOwned>>,
    deadlines: Option<Arc<Deadlines>>,
    /// Fires when the relayed task's deadline passes (known once the task id is).
    expiry: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
    finished: bool,
    _open: crate::metrics::OpenStream,
}

impl Relay {
    pub fn new(
        inner: BoxStream<'static, Result<Bytes, Fault>>,
        reading: Reading,
        observers: Arc<Observers>,
        exchange: Exchange,
        rpc_id: Option<Value>,
        settings: &StreamSettings,
    ) -> Relay {
        let limits = settings.limits.for_skill(exchange.skill.as_deref());
        let tap = Tap { observers, exchange, task_id: None, context_id: None, state: None, answered: false };
        let now = Instant::now();
        Relay {
            inner,
            framer: SseParser::with_limit(limits.max_event_bytes),
            tap,
            reading,
            rpc_id,
            held: Vec::new(),
            out: VecDeque::new(),
            keepalive: settings.keepalive,
            quiet: settings.keepalive.map(|d| Box::pin(tokio::time::sleep(d))),
            quiet_until: now + settings.keepalive.unwrap_or_default(),
            limit: Box::pin(tokio::time::sleep_until((now + limits.idle_timeout).min(now + limits.max_lifetime))),
            idle_until: now + limits.idle_timeout,
            ends_at: now + limits.max_lifetime,
            limits,
            drain: Box::pin(settings.drain_deadline.get().clone().cancelled_owned()),
            deadlines: settings.deadlines.clone(),
            expiry: None,
            finished: false,
            _open: crate::metrics::OpenStream::new(),
        }
    }

    /// The event size limit of this stream (for errors that carry it).
    pub fn max_event_bytes(&self) -> usize {
        self.limits.max_event_bytes
    }

    /// Reads one agent event; a bridged one's conversion is appended, framed, to `converted`.
    fn read_event(tap: &mut Tap, reading: &mut Reading, data: &[u8], converted: &mut Vec<u8>) -> Result<(), StreamEnd> {
        let mut verdict = Ok(());
        match reading {
            Reading::Native | Reading::Events => tap.read(data),
            Reading::PassThrough(converter) => match converter.event(data, &mut |event| {
                if verdict.is_ok() {
                    verdict = tap.read(event);
                }
            }) {
                Err(Unread::NotJson(_)) => Err(StreamEnd::Malformed),
                Err(Unread::Invalid(_)) | Ok(()) => verdict,
            },
            Reading::Bridged(converter) => {
                let mut pass = |event: &[u8]| {
                    if verdict.is_ok() {
                        verdict = tap.read(event);
                        if verdict.is_ok() {
                            converted.extend_from_slice(&frame(event));
                        }
                    }
                };
                match converter.event(data, &mut pass) {
                    Ok(()) => {}
                    Err(Unread::NotJson(_)) => return Err(StreamEnd::Malformed),
                    // An invalid-answer error event stands for it (the tap ends the stream on it).
                    Err(unread) => pass(&converter.unread_event(unread)),
                }
                verdict
            }
        }
    }

    /// Takes one event of an agent whose events arrive whole ([`Reading::Events`]).
    fn take_event(&mut self, data: Bytes) {
        let verdict = if data.len() > self.limits.max_event_bytes {
            Err(StreamEnd::TooLarge(self.limits.max_event_bytes))
        } else {
            self.tap.read(&data)
        };
        match verdict {
            Ok(()) => {
                let now = Instant::now();
                self.idle_until = now + self.limits.idle_timeout;
                if let Some(every) = self.keepalive {
                    self.quiet_until = now + every;
                }
                self.out.push_back(frame(&data));
                self.watch_deadline();
            }
            Err(why) => {
                self.watch_deadline();
                self.end(why);
            }
        }
    }

    /// Takes one chunk of the backend's stream: whole valid events go to `out` (a bridged stream's
    /// converted), the start of the next event waits in `held`, a bad event ends the stream after
    /// the good ones before it.
    fn take_chunk(&mut self, chunk: Bytes) {
        let events_before = self.framer.event_bytes();
        let mut good = 0;
        let mut bad: Option<StreamEnd> = None;
        let mut converted = Vec::new();
        let (tap, reading) = (&mut self.tap, &mut self.reading);
        self.framer.feed_steps(&chunk, &mut |data, end| {
            if bad.is_some() {
                return;
            }
            match data {
                None => good = end,
                Some(data) => match Self::read_event(tap, reading, data, &mut converted) {
                    Ok(()) => good = end,
                    Err(why) => bad = Some(why),
                },
            }
        });
        if bad.is_none() && self.framer.overflowed() {
            bad = Some(StreamEnd::TooLarge(self.limits.max_event_bytes));
        }
        // Idle is measured by what the caller gets: a bridged agent's event that stands for nothing
        // new (an early agent repeating its snapshot) does not count.
        let bridged = matches!(self.reading, Reading::Bridged(_));
        let heard = if bridged { !converted.is_empty() } else { self.framer.event_bytes() != events_before };
        let now = Instant::now();
        if heard {
            self.idle_until = now + self.limits.idle_timeout;
        }
        // The keep-alive is due after a quiet spell of the caller's stream (a bridged agent's
        // comments do not reach the caller).
        if let Some(every) = self.keepalive
            && (!bridged || !converted.is_empty())
        {
            self.quiet_until = now + every;
        }
        if bridged {
            if !converted.is_empty() {
                self.out.push_back(Bytes::from(converted));
            }
        } else if good == chunk.len() && self.held.is_empty() && bad.is_none() {
            self.out.push_back(chunk);
        } else {
            if good > 0 {
                self.out.extend(self.held.drain(..));
                self.out.push_back(chunk.slice(..good));
            }
            if bad.is_none() && good < chunk.len() {
                self.held.push(chunk.slice(good..));
            }
        }
        self.watch_deadline();
        if let Some(why) = bad {
            self.end(why);
        }
    }

    fn watch_deadline(&mut self) {
        if self.expiry.is_none()
            && let (Some(deadlines), Some(task_id)) = (&self.deadlines, &self.tap.task_id)
            && let Some(token) = deadlines.expiry_of(task_id)
        {
            self.expiry = Some(Box::pin(token.cancelled_owned()));
        }
    }

    /// Ends the stream for `why`: unless the task already ended, a failed (or canceled) status
    /// update for the task in the caller's dialect — an error event when no task was named yet. It
    /// goes through the tap too, so the directory and the observers learn the task's fate.
    fn end(&mut self, why: StreamEnd) {
        self.finished = true;
        // A partial event is dropped: the caller's parser stays between events.
        self.held.clear();
        let exchange = &self.tap.exchange;
        metrics::counter!(STREAM_ENDS, "reason" => why.reason(), "backend" => exchange.backend.to_string())
            .increment(1);
        if self.tap.ended() {
            return;
        }
        tracing::warn!(
            backend = %exchange.backend,
            request_id = %exchange.request_id,
            task_id = self.tap.task_id.as_deref().unwrap_or(""),
            reason = why.reason(),
            "the gateway ended a stream before its task ended"
        );
        let binding = exchange.binding;
        let error = why.error(&exchange.backend);
        let dialect = match &self.reading {
            Reading::PassThrough(converter) => converter.dialect(),
            Reading::Native | Reading::Bridged(_) | Reading::Events => Dialect::V1,
        };
        let event = match self.tap.task_id.clone() {
            Some(task_id) => {
                let text = error.to_string();
                let context_id = self.tap.context_id.clone();
                let data = synthetic::status_data(
                    binding,
                    self.rpc_id.as_ref(),
                    &task_id,
                    context_id.as_deref(),
                    why.state(),
                    &text,
                );
                let _ = self.tap.read(&data);
                match dialect {
                    Dialect::V03 => bridge::v03_event(self.rpc_id.as_ref(), &data),
                    _ => synthetic::frame(&data),
                }
            }
            None => match dialect {
                Dialect::V03 => synthetic::frame(
                    &Refusal::new(error, Dialect::V03, Binding::JsonRpc, self.rpc_id.clone()).rendered().body,
                ),
                _ => synthetic::error_event(binding, self.rpc_id.as_ref(), error),
            },
        };
        self.out.push_back(event);
    }
}

impl Stream for Relay {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(bytes) = this.out.pop_front() {
                return Poll::Ready(Some(Ok(bytes)));
            }
            if this.finished {
                return Poll::Ready(None);
            }
            if this.drain.as_mut().poll(cx).is_ready() {
                this.end(StreamEnd::Draining);
                continue;
            }
            if let Some(expiry) = this.expiry.as_mut()
                && expiry.as_mut().poll(cx).is_ready()
            {
                this.end(StreamEnd::Deadline);
                continue;
            }
            if this.limit.as_mut().poll(cx).is_ready() {
                let now = Instant::now();
                if now >= this.ends_at {
                    this.end(StreamEnd::Lifetime(this.limits.max_lifetime));
                } else if now >= this.idle_until {
                    this.end(StreamEnd::Idle(this.limits.idle_timeout));
                } else {
                    // Events came since it was armed: armed again for what is due now (and it is
                    // polled again, so that it wakes this task).
                    this.limit.as_mut().reset(this.idle_until.min(this.ends_at));
                }
                continue;
            }
            match this.inner.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(bytes))) => {
                    if matches!(this.reading, Reading::Events) {
                        this.take_event(bytes);
                    } else {
                        this.take_chunk(bytes);
                    }
                    continue;
                }
                Poll::Ready(Some(Err(fault))) => {
                    tracing::warn!(backend = %this.tap.exchange.backend, ?fault, "backend stream failed");
                    let why = match StreamEnd::from(fault) {
                        StreamEnd::TooLarge(_) => StreamEnd::TooLarge(this.limits.max_event_bytes),
                        why => why,
                    };
                    this.end(why);
                    continue;
                }
                Poll::Ready(None) => {
                    if this.tap.ended() {
                        // Whatever trails the last event (an unterminated line) goes as the agent sent it.
                        this.out.extend(this.held.drain(..));
                        this.finished = true;
                    } else {
                        this.end(StreamEnd::Truncated);
                    }
                    continue;
                }
                Poll::Pending => {}
            }
            if let (Some(quiet), Some(every)) = (this.quiet.as_mut(), this.keepalive)
                && quiet.as_mut().poll(cx).is_ready()
            {
                let now = Instant::now();
                if now < this.quiet_until {
                    // The stream was not quiet that long: due later (and polled, to wake this task).
                    quiet.as_mut().reset(this.quiet_until);
                    let _ = quiet.as_mut().poll(cx);
                    return Poll::Pending;
                }
                this.quiet_until = now + every;
                quiet.as_mut().reset(this.quiet_until);
                // Only whole events were handed on: a comment cannot split one.
                return Poll::Ready(Some(Ok(Bytes::from_static(KEEPALIVE))));
            }
            return Poll::Pending;
        }
    }
}
