//! Fans what the gateway sees in backend answers out to those who learn from it: the task directory
//! (ownership) and the registered [`TaskObserver`]s (concurrency leases, audit log).

use std::sync::Arc;
use std::time::Instant;

use a2a_core::{Binding, Caller, Source, TaskEvent, TaskObserver};

use crate::directory::{Sighting, TaskDirectory};
use crate::protocol::observe::{TaskFact, fact_in};

/// The directory and the observers, shared by all requests.
pub struct Observers {
    directory: Arc<dyn TaskDirectory>,
    list: Vec<Arc<dyn TaskObserver>>,
    /// Whether anyone reads artifact descriptions (hashing them costs a pass over their bytes).
    want_artifacts: bool,
}

impl Observers {
    pub fn new(directory: Arc<dyn TaskDirectory>, list: Vec<Arc<dyn TaskObserver>>, want_artifacts: bool) -> Observers {
        Observers { directory, list, want_artifacts }
    }

    pub fn directory(&self) -> &Arc<dyn TaskDirectory> {
        &self.directory
    }

    pub fn wants_artifacts(&self) -> bool {
        self.want_artifacts
    }
}

/// Whose answer is being observed: owned, so that a stream tap can carry it.
#[derive(Clone)]
pub struct Exchange {
    pub backend: Arc<str>,
    pub binding: Binding,
    pub caller: Option<Caller>,
    pub owner: Option<Arc<str>>,
    pub request_id: Arc<str>,
    pub skill: Option<Arc<str>>,
}

impl Observers {
    /// Reads one JSON answer (a unary body or one stream event's data) and reports what it says.
    pub fn observe_json(&self, exchange: &Exchange, json: &[u8], source: Source) {
        if let Some(fact) = fact_in(exchange.binding, json, self.want_artifacts) {
            self.report(exchange, &fact, source);
        }
    }

    pub fn report(&self, exchange: &Exchange, fact: &TaskFact, source: Source) {
        if fact.task_id.is_none() && fact.context_id.is_none() {
            return;
        }
        self.directory.record(&Sighting {
            backend: &exchange.backend,
            owner: exchange.owner.as_ref(),
            skill: exchange.skill.as_ref(),
            fact,
        });
        if self.list.is_empty() {
            return;
        }
        let mut event = TaskEvent {
            caller: exchange.caller.as_ref(),
            request_id: Some(&exchange.request_id),
            backend: &exchange.backend,
            skill: exchange.skill.as_deref(),
            task_id: fact.task_id.as_deref(),
            context_id: fact.context_id.as_deref(),
            state: None,
            artifact: None,
            source,
            at: Instant::now(),
        };
        // Artifacts first: an answer that ends the task delivered them before it ended.
        for artifact in &fact.artifacts {
            event.artifact = Some(artifact);
            for observer in &self.list {
                observer.observe(&event);
            }
        }
        if fact.artifacts.is_empty() || fact.state.is_some() {
            event.artifact = None;
            event.state = fact.state;
            for observer in &self.list {
                observer.observe(&event);
            }
        }
    }
}
