//! Requests the audit layer has let in and not yet seen the end of, by request id. The observer
//! looks them up to give task records the request's binding, operation and trace id, to write a
//! send's `task.received` before the first task record of its answer, and to tell the layer which
//! task a new send created.
//!
//! A unary request leaves when the layer sees its answer (or refusal); a stream stays until the
//! observer sees the state that ends it (terminal or interrupted); a stream that ends otherwise is
//! forgotten after [`STREAM_IDLE`] without an event, once more than [`PRUNE_ABOVE`] requests are
//! tracked — only the enrichment of later records is lost then.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dashmap::DashMap;

use super::Throttle;
use super::record::{Common, Content};
use a2a_core::{Binding, Operation, RequestInfo};
use serde_json::value::RawValue;

/// How long an open stream may go without an event before its entry is dropped.
const STREAM_IDLE: Duration = Duration::from_secs(15 * 60);
/// Entries beyond which forgotten streams are looked for (at most every [`PRUNE_EVERY`]).
const PRUNE_ABOVE: usize = 4096;
const PRUNE_EVERY: Duration = Duration::from_secs(10);

/// Whether `skill` is one of `include_content_for_skills`.
pub(crate) fn logs_content(skills: &[Box<str>], skill: &str) -> bool {
    skills.iter().any(|listed| **listed == *skill)
}

/// What the layer learned from the request itself.
#[derive(Debug, Clone)]
pub(crate) struct CallFacts {
    pub binding: Binding,
    pub operation: Operation,
    pub task_id: Option<Arc<str>>,
    pub context_id: Option<Arc<str>>,
    pub skill: Option<Arc<str>>,
    pub trace_id: Option<Arc<str>>,
    /// The send's message parts, kept only when some skill's content may be logged.
    pub parts: Option<Box<RawValue>>,
}

#[derive(Debug, Default)]
struct Learned {
    task_id: Option<Arc<str>>,
    context_id: Option<Arc<str>>,
}

#[derive(Debug)]
pub(crate) struct InFlight {
    pub request_id: Arc<str>,
    pub info: RequestInfo,
    pub call: CallFacts,
    received: AtomicBool,
    stream_open: AtomicBool,
    ended: AtomicBool,
    /// Task and context ids the answer revealed (a new send's task id is only known then).
    learned: Mutex<Learned>,
    last_event: AtomicU64,
}

impl InFlight {
    pub fn is_send(&self) -> bool {
        self.call.operation.is_send()
    }

    /// True exactly once, for a send: whoever gets it writes `task.received`.
    pub fn take_received(&self) -> bool {
        self.is_send() && !self.received.swap(true, Ordering::AcqRel)
    }

    pub fn learn(&self, task_id: Option<&str>, context_id: Option<&str>) {
        let Ok(mut learned) = self.learned.lock() else { return };
        if learned.task_id.is_none()
            && let Some(id) = task_id
        {
            learned.task_id = Some(Arc::from(id));
        }
        if learned.context_id.is_none()
            && let Some(id) = context_id
        {
            learned.context_id = Some(Arc::from(id));
        }
    }

    /// The skill the request was routed by, else the one it asked for.
    pub fn skill(&self) -> Option<Arc<str>> {
        match self.info.route().and_then(|r| r.skill.as_deref()) {
            Some(skill) => Some(Arc::from(skill)),
            None => self.call.skill.clone(),
        }
    }

    /// The common fields, as far as known now (caller and route are set by inner layers).
    pub fn common(&self) -> Common {
        let caller = self.info.caller();
        let route = self.info.route();
        let (task_id, context_id) = match self.learned.lock() {
            Ok(learned) => (learned.task_id.clone(), learned.context_id.clone()),
            Err(_) => (None, None),
        };
        Common {
            caller: caller.map(|c| c.id.clone()),
            tenant: caller.and_then(a2a_core::Caller::qualified_tenant),
            request_id: Some(self.request_id.clone()),
            trace_id: self.call.trace_id.clone(),
            skill: self.skill(),
            backend: route.map(|r| r.backend.clone()),
            task_id: self.call.task_id.clone().or(task_id),
            context_id: self.call.context_id.clone().or(context_id),
            binding: Some(self.call.binding),
            operation: Some(self.call.operation),
            routed_by: self.info.route_reason().map(Arc::from),
        }
    }

    /// The message parts for a `task.received` record, when its skill asks for content.
    pub fn content(&self, skills: &[Box<str>]) -> Option<Content> {
        let parts = self.call.parts.as_ref()?;
        if !logs_content(skills, &self.skill()?) {
            return None;
        }
        Some(Content { parts: parts.clone() })
    }
}

#[derive(Debug)]
pub(crate) struct Requests {
    map: DashMap<Arc<str>, Arc<InFlight>, crate::ByOutsiders>,
    /// Also the clock of `last_event`.
    prune_gate: Throttle,
}

impl Requests {
    pub fn new() -> Requests {
        Requests { map: DashMap::default(), prune_gate: Throttle::new(PRUNE_EVERY) }
    }

    fn now(&self) -> u64 {
        self.prune_gate.now()
    }

    pub fn begin(&self, info: RequestInfo, call: CallFacts) -> Arc<InFlight> {
        self.prune();
        let request_id: Arc<str> = Arc::from(info.request_id());
        let flight = Arc::new(InFlight {
            request_id: request_id.clone(),
            info,
            call,
            received: AtomicBool::new(false),
            stream_open: AtomicBool::new(false),
            ended: AtomicBool::new(false),
            learned: Mutex::new(Learned::default()),
            last_event: AtomicU64::new(self.now()),
        });
        // A reused request id only costs the older request its enrichment.
        self.map.insert(request_id, flight.clone());
        flight
    }

    pub fn get(&self, request_id: &str) -> Option<Arc<InFlight>> {
        let flight = self.map.get(request_id)?.clone();
        flight.last_event.store(self.now(), Ordering::Relaxed);
        Some(flight)
    }

    /// The layer saw the answer head. A stream keeps its entry unless it already ended.
    pub fn answered(&self, flight: &Arc<InFlight>, stream_follows: bool) {
        if stream_follows {
            flight.stream_open.store(true, Ordering::Release);
            if !flight.ended.load(Ordering::Acquire) {
                return;
            }
        }
        self.remove(flight);
    }

    /// The observer saw a state that ends the answer's stream.
    pub fn stream_ended(&self, flight: &Arc<InFlight>) {
        flight.ended.store(true, Ordering::Release);
        if flight.stream_open.load(Ordering::Acquire) {
            self.remove(flight);
        }
    }

    pub fn remove(&self, flight: &Arc<InFlight>) {
        self.map.remove_if(&flight.request_id, |_, current| Arc::ptr_eq(current, flight));
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.map.len()
    }

    fn prune(&self) {
        // The time check first: `len` visits every shard.
        if !self.prune_gate.due() || self.map.len() <= PRUNE_ABOVE {
            return;
        }
        let now = self.now();
        let idle = STREAM_IDLE.as_millis() as u64;
        self.map.retain(|_, flight| {
            !flight.stream_open.load(Ordering::Acquire)
                || now.saturating_sub(flight.last_event.load(Ordering::Relaxed)) < idle
        });
    }
}
