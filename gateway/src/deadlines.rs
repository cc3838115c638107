//! Per-skill task deadlines. The gateway watches every task of a skill with a deadline from its first
//! live sighting; a task still live when its deadline passes is canceled at its backend, and any
//! stream relaying it gets a terminal `canceled` event and ends. The cancel's answer flows through
//! the observers like any other, so the directory, the concurrency leases and the audit log learn it.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use a2a_policies::{Caller, TaskEvent, TaskObserver};
use arc_swap::ArcSwap;
use dashmap::DashMap;
use tokio_util::sync::CancellationToken;

/// A task whose deadline passed.
#[derive(Debug, Clone)]
pub struct Expired {
    pub task_id: String,
    pub backend: Arc<str>,
    pub caller: Option<Caller>,
    pub skill: String,
    pub deadline: Duration,
}

type OnExpiry = Arc<dyn Fn(Expired) + Send + Sync>;

struct Watch {
    /// Cancelled when the task ends by itself: stops its timer.
    stop: CancellationToken,
    /// Cancelled when the deadline passes: ends the streams relaying the task.
    expired: CancellationToken,
}

pub struct Deadlines {
    by_skill: ArcSwap<HashMap<String, Duration>>,
    watched: DashMap<String, Watch>,
    on_expiry: OnceLock<OnExpiry>,
}

impl Deadlines {
    pub fn new(by_skill: HashMap<String, Duration>) -> Arc<Deadlines> {
        Arc::new(Deadlines {
            by_skill: ArcSwap::from_pointee(by_skill),
            watched: DashMap::new(),
            on_expiry: OnceLock::new(),
        })
    }

    /// Replaces the per-skill deadlines (on reload); tasks already watched keep theirs.
    pub fn set(&self, by_skill: HashMap<String, Duration>) {
        self.by_skill.store(Arc::new(by_skill));
    }

    /// What to do when a deadline passes (the gateway cancels the task at its backend).
    pub fn on_expiry(&self, action: impl Fn(Expired) + Send + Sync + 'static) {
        let _ = self.on_expiry.set(Arc::new(action));
    }

    /// A token cancelled when the deadline of `task_id` passes; `None` for unwatched tasks.
    pub fn expiry_of(&self, task_id: &str) -> Option<CancellationToken> {
        self.watched.get(task_id).map(|w| w.expired.clone())
    }

    fn start(self: &Arc<Self>, expired: Expired) {
        let (stop, expiry) = (CancellationToken::new(), CancellationToken::new());
        self.watched.insert(expired.task_id.clone(), Watch { stop: stop.clone(), expired: expiry.clone() });
        let this = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = tokio::time::sleep(expired.deadline) => {
                    let Some(this) = this.upgrade() else { return };
                    if this.watched.remove(&expired.task_id).is_none() {
                        return;
                    }
                    tracing::warn!(task_id = %expired.task_id, skill = %expired.skill, deadline = ?expired.deadline, "task deadline passed; canceling it");
                    expiry.cancel();
                    if let Some(action) = this.on_expiry.get() {
                        action(expired);
                    }
                }
            }
        });
    }
}

/// The observer side lives behind an `Arc` so that timers can hold a weak reference.
pub struct DeadlineObserver(pub Arc<Deadlines>);

impl TaskObserver for DeadlineObserver {
    fn observe(&self, event: &TaskEvent<'_>) {
        let (Some(task_id), Some(state)) = (event.task_id, event.state) else { return };
        if !state.is_live() {
            // Ended by itself: stop watching; its streams end on their own.
            if let Some((_, watch)) = self.0.watched.remove(task_id) {
                watch.stop.cancel();
            }
            return;
        }
        if self.0.watched.contains_key(task_id) {
            return;
        }
        let Some(skill) = event.skill else { return };
        let Some(&deadline) = self.0.by_skill.load().get(skill) else { return };
        self.0.start(Expired {
            task_id: task_id.to_string(),
            backend: Arc::from(event.backend),
            caller: event.caller.cloned(),
            skill: skill.to_string(),
            deadline,
        });
    }
}
