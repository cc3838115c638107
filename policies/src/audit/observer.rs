//! The audit log as a [`TaskObserver`]: turns what the gateway sees in answers and stream events
//! into `task.state` (only when the state differs from the last one recorded for the task),
//! `artifact.delivered` (once per artifact id and content hash) and `task.ended` (terminal state,
//! time since the task was first seen) records.
//!
//! Tasks are remembered after they end, so that a later `GetTask` of a finished task records
//! nothing new; memory stays bounded by forgetting ended tasks after [`ENDED_TTL`] and live ones
//! after [`LIVE_TTL`] without a sighting, once more than [`PRUNE_ABOVE`] are tracked.

use std::hash::{DefaultHasher, Hash as _, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dashmap::DashMap;

use super::record::{Common, Kind, Record};
use super::requests::InFlight;
use super::{Audit, Throttle};
use a2a_core::{TaskEvent, TaskObserver, TaskState};

const ENDED_TTL: Duration = Duration::from_secs(3600);
const LIVE_TTL: Duration = Duration::from_secs(24 * 3600);
const PRUNE_ABOVE: usize = 100_000;
const PRUNE_EVERY: Duration = Duration::from_secs(10);
/// Artifact fingerprints kept per task; beyond that, repeats are recorded again.
const MAX_ARTIFACTS: usize = 1024;

#[derive(Debug)]
struct Track {
    last_state: Option<TaskState>,
    first_seen: Instant,
    last_seen: Instant,
    context_id: Option<Arc<str>>,
    artifacts: Vec<u64>,
}

#[derive(Debug)]
pub(crate) struct Tasks {
    map: DashMap<Box<str>, Track, crate::ByOutsiders>,
    prune_gate: Throttle,
}

impl Tasks {
    pub fn new() -> Tasks {
        Tasks { map: DashMap::default(), prune_gate: Throttle::new(PRUNE_EVERY) }
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
        self.map.retain(|_, track| {
            let ttl = if track.last_state.is_some_and(TaskState::is_terminal) { ENDED_TTL } else { LIVE_TTL };
            track.last_seen.elapsed() < ttl
        });
    }
}

impl TaskObserver for Audit {
    fn observe(&self, event: &TaskEvent<'_>) {
        let inner = &self.inner;
        let flight = event.request_id.and_then(|id| inner.requests.get(id));
        if let Some(flight) = &flight {
            flight.learn(event.task_id, event.context_id);
            // A send's answer: its receipt comes before anything the answer says.
            if flight.take_received() {
                let content = flight.content(&inner.content_skills);
                inner.sink.send(Record::event(flight.common(), Kind::Received { content }));
            }
        }
        if let Some(task_id) = event.task_id {
            inner.tasks.prune();
            let first_seen = flight.as_ref().map_or(event.at, |f| f.info.started().min(event.at));
            // Looked up before inserting, so that a known task costs no key allocation.
            let mut entry = match inner.tasks.map.get_mut(task_id) {
                Some(entry) => entry,
                None => inner.tasks.map.entry(Box::from(task_id)).or_insert_with(|| Track {
                    last_state: None,
                    first_seen,
                    last_seen: event.at,
                    context_id: None,
                    artifacts: Vec::new(),
                }),
            };
            let track = entry.value_mut();
            track.last_seen = event.at.max(track.last_seen);
            if track.context_id.is_none() {
                track.context_id = event.context_id.map(Arc::from);
            }
            // Records are queued while the task's entry is locked, so their order is the order
            // in which the task's observations were decided.
            let context = track.context_id.clone();
            let mut common: Option<Common> = None;
            let mut emit = |kind: Kind| {
                let common = common.get_or_insert_with(|| event_common(event, task_id, context.clone(), &flight));
                inner.sink.send(Record::event(common.clone(), kind));
            };
            if let Some(artifact) = event.artifact {
                let fingerprint = fingerprint(artifact.artifact_id.as_deref(), &artifact.sha256);
                if !track.artifacts.contains(&fingerprint) {
                    if track.artifacts.len() < MAX_ARTIFACTS {
                        track.artifacts.push(fingerprint);
                    }
                    emit(Kind::Artifact { artifact: artifact.clone(), source: event.source });
                }
            }
            if let Some(state) = event.state
                && track.last_state != Some(state)
            {
                track.last_state = Some(state);
                emit(Kind::State { state, source: event.source });
                if state.is_terminal() {
                    let duration = event.at.saturating_duration_since(track.first_seen);
                    emit(Kind::Ended { state, duration });
                }
            }
        }
        // A stream ends at a terminal or interrupted state.
        if let (Some(flight), Some(state)) = (&flight, event.state)
            && (state.is_terminal() || matches!(state, TaskState::InputRequired | TaskState::AuthRequired))
        {
            inner.requests.stream_ended(flight);
        }
    }
}

fn fingerprint(artifact_id: Option<&str>, sha256: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    artifact_id.hash(&mut hasher);
    sha256.hash(&mut hasher);
    hasher.finish()
}

/// The common fields of a task record: the event's own facts first, the request's for the rest.
fn event_common(
    event: &TaskEvent<'_>,
    task_id: &str,
    context_id: Option<Arc<str>>,
    flight: &Option<Arc<InFlight>>,
) -> Common {
    let caller = event.caller.or_else(|| flight.as_ref().and_then(|f| f.info.caller()));
    let request_id = match (flight, event.request_id) {
        (Some(f), _) => Some(f.request_id.clone()),
        (None, id) => id.map(Arc::from),
    };
    let skill = match event.skill {
        Some(skill) => Some(Arc::from(skill)),
        None => flight.as_ref().and_then(|f| f.skill()),
    };
    Common {
        caller: caller.map(|c| c.id.clone()),
        tenant: caller.and_then(a2a_core::Caller::qualified_tenant),
        request_id,
        trace_id: flight.as_ref().and_then(|f| f.call.trace_id.clone()),
        skill,
        backend: Some(Arc::from(event.backend)),
        task_id: Some(Arc::from(task_id)),
        context_id: event.context_id.map(Arc::from).or(context_id),
        binding: flight.as_ref().map(|f| f.call.binding),
        operation: flight.as_ref().map(|f| f.call.operation),
        routed_by: flight.as_ref().and_then(|f| f.info.route_reason().map(Arc::from)),
    }
}
