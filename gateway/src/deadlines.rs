//! Per-skill task deadlines. The gateway watches every task of a skill with a deadline from its first
//! live sighting; a task still live when its deadline passes is canceled at its backend, and any
//! stream relaying it gets a terminal `canceled` event and ends. The cancel's answer flows through
//! the observers like any other, so the directory, the concurrency leases and the audit log learn it.
//!
//! With shared state ([`SharedDeadlines`], Redis) every watch is also written to the store: the
//! watching replica claims its task at the deadline, and a sweep (run by whichever replica holds
//! the sweep lease) claims tasks whose replica died; exactly one replica cancels each.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use a2a_core::{Caller, TaskEvent, TaskObserver};
use arc_swap::ArcSwap;
use dashmap::DashMap;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::store_error::StoreError;

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

/// Deadlines every replica sees (see the module doc).
pub trait SharedDeadlines: Send + Sync + 'static {
    /// Records a task's deadline (the first record of a task wins); queued, off the request path.
    fn watch(&self, expired: &Expired, due: Instant);
    /// The task ended by itself: nobody cancels it.
    fn ended(&self, backend: &str, task_id: &str);
    /// Takes the task's entry; `true` for exactly one claimer (who cancels it).
    fn claim(&self, backend: &str, task_id: &str) -> BoxFuture<'static, Result<bool, StoreError>>;
    /// Takes, if this replica holds the sweep lease, the entries their own replicas left overdue.
    fn sweep(&self) -> BoxFuture<'static, Result<Vec<Expired>, StoreError>>;
}

/// How often every replica tries the sweep (only the lease holder sweeps).
const SWEEP_EVERY: Duration = Duration::from_secs(1);

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
    shared: OnceLock<Arc<dyn SharedDeadlines>>,
}

impl Deadlines {
    pub fn new(by_skill: HashMap<String, Duration>) -> Arc<Deadlines> {
        Arc::new(Deadlines {
            by_skill: ArcSwap::from_pointee(by_skill),
            watched: DashMap::new(),
            on_expiry: OnceLock::new(),
            shared: OnceLock::new(),
        })
    }

    /// Shares deadlines through `store` (set once, at start).
    pub fn share(&self, store: Arc<dyn SharedDeadlines>) {
        let _ = self.shared.set(store);
    }

    /// With shared deadlines: sweeps every [`SWEEP_EVERY`] until `stop`, canceling what it claims.
    pub fn spawn_sweeper(self: &Arc<Self>, stop: CancellationToken) {
        let Some(store) = self.shared.get().cloned() else { return };
        let this = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(SWEEP_EVERY);
            loop {
                tokio::select! {
                    _ = stop.cancelled() => break,
                    _ = ticker.tick() => {}
                }
                let claimed = match store.sweep().await {
                    Ok(claimed) => claimed,
                    Err(error) => {
                        tracing::warn!(%error, "could not sweep shared task deadlines");
                        continue;
                    }
                };
                let Some(this) = this.upgrade() else { break };
                for expired in claimed {
                    tracing::warn!(task_id = %expired.task_id, skill = %expired.skill, "task deadline passed (its replica did not cancel it); canceling it");
                    if let Some((_, watch)) = this.watched.remove(&expired.task_id) {
                        watch.stop.cancel();
                        watch.expired.cancel();
                    }
                    if let Some(action) = this.on_expiry.get() {
                        action(expired);
                    }
                }
            }
        });
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

    fn start(self: &Arc<Self>, expired: Expired, seen: Instant) {
        if let Some(shared) = self.shared.get() {
            shared.watch(&expired, seen + expired.deadline);
        }
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
                    expiry.cancel();
                    if let Some(shared) = this.shared.get() {
                        // Exactly one replica cancels: the one whose claim takes the entry. If
                        // the store fails, cancel anyway (a second cancel is refused harmlessly).
                        match shared.claim(&expired.backend, &expired.task_id).await {
                            Ok(true) => {}
                            Ok(false) => return,
                            Err(error) => tracing::warn!(%error, "could not claim a task's deadline in the shared store; canceling it from here"),
                        }
                    }
                    tracing::warn!(task_id = %expired.task_id, skill = %expired.skill, deadline = ?expired.deadline, "task deadline passed; canceling it");
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
            let watched = self.0.watched.remove(task_id);
            if let Some((_, watch)) = &watched {
                watch.stop.cancel();
            }
            // Another replica may watch it: tell the store when the task was watched, or is of a
            // skill with a deadline.
            let of_deadline_skill = event.skill.is_some_and(|skill| self.0.by_skill.load().contains_key(skill));
            if let Some(shared) = self.0.shared.get()
                && (watched.is_some() || of_deadline_skill)
            {
                shared.ended(event.backend, task_id);
            }
            return;
        }
        if self.0.watched.contains_key(task_id) {
            return;
        }
        let Some(skill) = event.skill else { return };
        let Some(&deadline) = self.0.by_skill.load().get(skill) else { return };
        self.0.start(
            Expired {
                task_id: task_id.to_string(),
                backend: Arc::from(event.backend),
                caller: event.caller.cloned(),
                skill: skill.to_string(),
                deadline,
            },
            event.at,
        );
    }
}
