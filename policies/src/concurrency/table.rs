//! The lease table: which live tasks, and which not-yet-answered task-creating requests, each caller
//! holds. It is shared by the layer (which reserves) and the gateway's observers (which bind
//! reservations to tasks and end leases).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use dashmap::DashMap;
use dashmap::mapref::entry::Entry;
use tokio::time::Instant;

use futures::future::BoxFuture;

use super::ConcurrencyConfig;
use super::shared::{LeaseVerdict, SharedLeases};
use a2a_core::{A2aError, TaskEvent, TaskObserver};

/// How many reservations pass between two sweeps of expired leases of every caller.
const SWEEP_EVERY: usize = 1024;

/// What one caller holds. Both lists stay short (at most the caller's limit), so they are vectors.
#[derive(Debug, Default)]
struct Holdings {
    /// Requests that may create a task and whose answer has not named it yet, with their expiry.
    pending: Vec<(Arc<str>, Instant)>,
    /// Leased live tasks by [`task_key`], with their expiry.
    tasks: Vec<(Box<str>, Instant)>,
}

impl Holdings {
    fn held(&self) -> usize {
        self.pending.len() + self.tasks.len()
    }

    fn is_empty(&self) -> bool {
        self.held() == 0
    }

    /// Drops what expired, and says which index entries went with it.
    fn purge(&mut self, now: Instant, expired: &mut Expired) {
        self.pending.retain(|(request, until)| {
            let keep = *until > now;
            if !keep {
                expired.requests.push(request.clone());
            }
            keep
        });
        self.tasks.retain(|(task, until)| {
            let keep = *until > now;
            if !keep {
                expired.tasks.push(task.clone());
            }
            keep
        });
    }
}

/// Index entries whose leases expired; removed after the holder's entry is unlocked.
#[derive(Default)]
struct Expired {
    requests: Vec<Arc<str>>,
    tasks: Vec<Box<str>>,
}

/// A lease is the task's backend and id: task ids are only unique per backend.
fn task_key(backend: &str, task_id: &str) -> Box<str> {
    let mut key = String::with_capacity(backend.len() + 1 + task_id.len());
    key.push_str(backend);
    key.push('\0');
    key.push_str(task_id);
    key.into_boxed_str()
}

/// Live-task leases of every caller. Build it with [`LiveTasks::new`], give the same `Arc` to the
/// [`ConcurrencyLayer`](super::ConcurrencyLayer) and to the gateway as a [`TaskObserver`].
///
/// Lock order, to stay free of deadlocks: `holders` before `by_task` or `by_request`; the indexes
/// are only ever locked alone otherwise (their removals return owned values).
pub struct LiveTasks {
    default_limit: usize,
    limits: HashMap<Box<str>, usize>,
    ttl: Duration,
    holders: DashMap<Arc<str>, Holdings, crate::ByOutsiders>,
    /// Pending reservation (by gateway request id) → its caller.
    by_request: DashMap<Arc<str>, Arc<str>, crate::ByOutsiders>,
    /// Leased task (by [`task_key`]) → its caller.
    by_task: DashMap<Box<str>, Arc<str>, crate::ByOutsiders>,
    reservations: AtomicUsize,
    /// When set, slots are counted there (across replicas); the table above then holds only the
    /// reservations taken while the store was unreachable, if the store says to take them.
    shared: Option<Arc<dyn SharedLeases>>,
}

/// A reservation decided now (this table), or by a shared store.
pub enum Reserving {
    Now(Result<Reservation, A2aError>),
    Shared(BoxFuture<'static, Result<Reservation, A2aError>>),
}

impl LiveTasks {
    pub fn new(config: &ConcurrencyConfig) -> Result<Arc<LiveTasks>, String> {
        LiveTasks::with_store(config, None)
    }

    /// A table whose slots are counted in `shared` (across replicas) when given.
    pub fn with_store(
        config: &ConcurrencyConfig,
        shared: Option<Arc<dyn SharedLeases>>,
    ) -> Result<Arc<LiveTasks>, String> {
        if config.lease_ttl.is_zero() {
            return Err("lease_ttl: must be longer than zero".into());
        }
        Ok(Arc::new(LiveTasks {
            default_limit: config.default_max_live_tasks,
            limits: config.callers.iter().map(|(id, limit)| (Box::from(id.as_str()), *limit)).collect(),
            ttl: config.lease_ttl,
            holders: DashMap::default(),
            by_request: DashMap::default(),
            by_task: DashMap::default(),
            reservations: AtomicUsize::new(0),
            shared,
        }))
    }

    /// [`LiveTasks::reserve`], or its shared form when a store is attached.
    pub fn reserve_any(self: &Arc<Self>, caller: &Arc<str>, request_id: &str) -> Reserving {
        let Some(store) = &self.shared else { return Reserving::Now(self.reserve(caller, request_id)) };
        let request_id: Arc<str> = Arc::from(request_id);
        let verdict = store.reserve(caller.clone(), request_id.clone(), self.limit(caller), self.ttl);
        let (table, caller) = (self.clone(), caller.clone());
        Reserving::Shared(Box::pin(async move {
            match verdict.await? {
                LeaseVerdict::Reserved => Ok(Reservation { table, request_id, shared: true }),
                LeaseVerdict::Local => table.reserve(&caller, &request_id),
            }
        }))
    }

    /// The most live tasks `caller` may hold.
    /// Leased tasks across all callers (metrics).
    pub fn total_leased(&self) -> usize {
        self.by_task.len()
    }

    pub fn limit(&self, caller: &str) -> usize {
        self.limits.get(caller).copied().unwrap_or(self.default_limit)
    }

    /// How many live tasks `caller` holds, counting requests whose task is not known yet.
    pub fn live_tasks(&self, caller: &str) -> usize {
        let now = Instant::now();
        self.holders.get(caller).map_or(0, |held| {
            let pending = held.pending.iter().filter(|(_, until)| *until > now).count();
            pending + held.tasks.iter().filter(|(_, until)| *until > now).count()
        })
    }

    /// Reserves a slot for a request of `caller` that may create a task, or refuses it when the
    /// caller already holds its limit. The slot is released when the returned guard drops, unless
    /// an observation has bound it to a live task first.
    pub fn reserve(self: &Arc<Self>, caller: &Arc<str>, request_id: &str) -> Result<Reservation, A2aError> {
        if self.reservations.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            self.sweep();
        }
        let now = Instant::now();
        let limit = self.limit(caller);
        let request_id: Arc<str> = Arc::from(request_id);
        // Answers are matched to reservations by request id: two in flight under one id could not
        // be told apart, so the second is refused (request ids come from the gateway, not callers).
        match self.by_request.entry(request_id.clone()) {
            Entry::Occupied(_) => {
                tracing::error!(%request_id, "concurrency: a request id is reused while its request is in flight");
                return Err(A2aError::Internal);
            }
            Entry::Vacant(slot) => {
                slot.insert(caller.clone());
            }
        }
        let mut expired = Expired::default();
        let outcome = {
            let mut held = self.holders.entry(caller.clone()).or_default();
            held.purge(now, &mut expired);
            let count = held.held();
            if count >= limit {
                Err(A2aError::TooManyTasks { held: count, limit })
            } else {
                held.pending.push((request_id.clone(), now + self.ttl));
                Ok(())
            }
        };
        self.forget(caller, expired);
        if let Err(refusal) = outcome {
            self.by_request.remove(&request_id);
            self.drop_if_idle(caller);
            return Err(refusal);
        }
        Ok(Reservation { table: self.clone(), request_id, shared: false })
    }

    /// Ends the pending reservation of `request_id`, if it is still pending.
    fn release(&self, request_id: &str) {
        let Some((request_id, caller)) = self.by_request.remove(request_id) else {
            return;
        };
        if let Some(mut held) = self.holders.get_mut(&caller) {
            held.pending.retain(|(request, _)| *request != request_id);
        }
        self.drop_if_idle(&caller);
    }

    /// Turns the pending reservation of a request into a lease on the live task its answer names
    /// (or just ends it when that task is leased already).
    fn bind(&self, request_id: &str, key: Box<str>) {
        let Some((request_id, caller)) = self.by_request.remove(request_id) else {
            return;
        };
        if let Some(mut held) = self.holders.get_mut(&caller) {
            held.pending.retain(|(request, _)| *request != request_id);
            if !self.by_task.contains_key(&key) {
                held.tasks.push((key.clone(), Instant::now() + self.ttl));
                self.by_task.insert(key, caller.clone());
            }
        }
        self.drop_if_idle(&caller);
    }

    /// Ends the lease on a task that reached a terminal state.
    fn finish(&self, key: &str) {
        let Some((_, caller)) = self.by_task.remove(key) else {
            return;
        };
        if let Some(mut held) = self.holders.get_mut(&caller) {
            held.tasks.retain(|(task, _)| &**task != key);
        }
        self.drop_if_idle(&caller);
    }

    /// Drops expired leases and reservations of every caller. Runs on its own every so many
    /// reservations; an owner may also call it on a timer.
    pub fn sweep(&self) {
        let now = Instant::now();
        self.holders.retain(|caller, held| {
            let mut expired = Expired::default();
            held.purge(now, &mut expired);
            // Lock order allows the indexes while a holder is locked.
            self.forget_indexed(caller, expired);
            !held.is_empty()
        });
    }

    fn forget(&self, caller: &Arc<str>, expired: Expired) {
        if expired.requests.is_empty() && expired.tasks.is_empty() {
            return;
        }
        self.forget_indexed(caller, expired);
        self.drop_if_idle(caller);
    }

    fn forget_indexed(&self, caller: &Arc<str>, expired: Expired) {
        for request in expired.requests {
            self.by_request.remove_if(&request, |_, owner| owner == caller);
        }
        for task in expired.tasks {
            self.by_task.remove_if(&task, |_, owner| owner == caller);
        }
    }

    /// Keeps the table from growing with callers that hold nothing. Must not be called while an
    /// entry of `holders` is borrowed.
    fn drop_if_idle(&self, caller: &Arc<str>) {
        self.holders.remove_if(caller, |_, held| held.is_empty());
    }

    /// Entries in the table and its indexes: (callers, pending requests, leased tasks).
    #[cfg(test)]
    pub(crate) fn footprint(&self) -> (usize, usize, usize) {
        (self.holders.len(), self.by_request.len(), self.by_task.len())
    }
}

impl TaskObserver for LiveTasks {
    fn observe(&self, event: &TaskEvent<'_>) {
        // Until an answer names its task, its reservation stays pending: an event without a task id
        // (a context-only message) binds nothing; the end of the answer releases it.
        let Some(task_id) = event.task_id else {
            return;
        };
        if let Some(store) = &self.shared {
            if event.state.is_some_and(|state| state.is_terminal()) {
                if let Some(request_id) = event.request_id {
                    store.release(request_id);
                }
                store.finish(event.backend, task_id);
            } else if let Some(request_id) = event.request_id {
                store.bind(request_id, event.backend, task_id);
            }
        }
        if event.state.is_some_and(|state| state.is_terminal()) {
            // An answer whose task is already over leaves nothing to lease.
            if let Some(request_id) = event.request_id {
                self.release(request_id);
            }
            self.finish(&task_key(event.backend, task_id));
        } else if let Some(request_id) = event.request_id
            && self.by_request.contains_key(request_id)
        {
            self.bind(request_id, task_key(event.backend, task_id));
        }
    }
}

/// A pending slot of one request; dropping it releases the slot unless it was bound to a task.
pub struct Reservation {
    table: Arc<LiveTasks>,
    request_id: Arc<str>,
    /// Held in the shared store rather than the table.
    shared: bool,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        match (&self.table.shared, self.shared) {
            (Some(store), true) => store.release(&self.request_id),
            _ => self.table.release(&self.request_id),
        }
    }
}

impl std::fmt::Debug for Reservation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reservation").field("request_id", &self.request_id).finish()
    }
}

#[cfg(test)]
mod tests;
