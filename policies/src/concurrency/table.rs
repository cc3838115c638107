//! The lease table: which live tasks, and which not-yet-answered task-creating requests, each caller
//! holds. It is shared by the layer (which reserves) and the gateway's observers (which bind
//! reservations to tasks and end leases).
//!
//! Each caller's holdings are one atomic count: a reservation adds to it and its release takes from
//! it, and neither locks anything of the caller's. The slots themselves (with their expiry) are
//! kept by request id and by task, in maps whose shards spread with the ids. With one caller for
//! every request (a service account, the anonymous crowd) every worker of the gateway would
//! otherwise lock that caller's entry three times per call (`policy-cost --threads 2`, finding 38).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dashmap::DashMap;
use dashmap::mapref::entry::Entry;
use tokio::time::Instant;

use futures::future::BoxFuture;

use super::ConcurrencyConfig;
use super::shared::{LeaseVerdict, SharedLeases};
use a2a_core::{A2aError, TaskEvent, TaskObserver};

/// How often callers that hold nothing are dropped (checked as reservations come).
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// How often, at most, callers at their limit make the table look for expired slots. Each look walks
/// every slot; a caller at its limit is refused at once while none of its slots can have expired.
const PURGE_AT_LIMIT_EVERY: Duration = Duration::from_millis(100);

/// One caller's holdings.
#[derive(Debug)]
struct Slots {
    /// Pending requests and leased tasks, expired ones included until a purge finds them.
    held: AtomicUsize,
    /// None of its slots expires before this (ticks of the table's clock): lowered as slots are
    /// taken, set again by each purge.
    earliest_expiry: AtomicU64,
}

impl Slots {
    fn release(&self) {
        self.held.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A slot: whose it is, and until when it holds (ticks of the table's clock).
struct Slot {
    owner: Arc<Slots>,
    until: u64,
}

impl Slot {
    /// Whether it still holds at `now`; an expired one is given back to its owner.
    fn keep_or_release(&self, now: u64) -> bool {
        if self.until > now {
            self.owner.earliest_expiry.fetch_min(self.until, Ordering::Relaxed);
            true
        } else {
            self.owner.release();
            false
        }
    }
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
/// No map's lock is ever taken while another's is held: a slot moves between the maps by being
/// removed from one (an owned value) and then put into the other.
pub struct LiveTasks {
    default_limit: usize,
    limits: HashMap<Box<str>, usize>,
    ttl: Duration,
    /// The table's clock starts here; times are kept as nanoseconds since.
    epoch: Instant,
    holders: DashMap<Arc<str>, Arc<Slots>, crate::ByOutsiders>,
    /// Pending reservation (by gateway request id) → its slot.
    by_request: DashMap<Arc<str>, Slot, crate::ByOutsiders>,
    /// Leased task (by [`task_key`]) → its slot.
    by_task: DashMap<Box<str>, Slot, crate::ByOutsiders>,
    /// When idle callers are dropped next.
    next_sweep: AtomicU64,
    /// When expired slots are looked for next: on the way (every eighth of the lease TTL), or sooner
    /// for a caller at its limit (not before `PURGE_AT_LIMIT_EVERY` after the last look).
    next_purge: AtomicU64,
    /// When a caller at its limit may next have a purge run (`PURGE_AT_LIMIT_EVERY` after the last).
    next_purge_at_limit: AtomicU64,
    /// Held by the purge under way: two at once could each set a caller's earliest expiry from the
    /// slots the other had not walked yet.
    purging: Mutex<()>,
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
        let table = LiveTasks {
            default_limit: config.default_max_live_tasks,
            limits: config.callers.iter().map(|(id, limit)| (Box::from(id.as_str()), *limit)).collect(),
            ttl: config.lease_ttl,
            epoch: Instant::now(),
            holders: DashMap::default(),
            by_request: DashMap::default(),
            by_task: DashMap::default(),
            next_sweep: AtomicU64::new(0),
            next_purge: AtomicU64::new(0),
            next_purge_at_limit: AtomicU64::new(ticks(PURGE_AT_LIMIT_EVERY)),
            purging: Mutex::new(()),
            shared,
        };
        table.next_sweep.store(ticks(SWEEP_EVERY), Ordering::Relaxed);
        table.next_purge.store(table.purge_every(), Ordering::Relaxed);
        Ok(Arc::new(table))
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

    /// Leased tasks across all callers (metrics).
    pub fn total_leased(&self) -> usize {
        self.by_task.len()
    }

    /// The most live tasks `caller` may hold.
    pub fn limit(&self, caller: &str) -> usize {
        if self.limits.is_empty() {
            return self.default_limit;
        }
        self.limits.get(caller).copied().unwrap_or(self.default_limit)
    }

    /// How many live tasks `caller` holds, counting requests whose task is not known yet. Walks
    /// every slot: for tests and diagnostics.
    pub fn live_tasks(&self, caller: &str) -> usize {
        let Some(owner) = self.holders.get(caller).map(|slots| slots.clone()) else { return 0 };
        let now = self.now();
        let mine = |slot: &Slot| Arc::ptr_eq(&slot.owner, &owner) && slot.until > now;
        self.by_request.iter().filter(|entry| mine(entry.value())).count()
            + self.by_task.iter().filter(|entry| mine(entry.value())).count()
    }

    /// Reserves a slot for a request of `caller` that may create a task, or refuses it when the
    /// caller already holds its limit. The slot is released when the returned guard drops, unless
    /// an observation has bound it to a live task first.
    pub fn reserve(self: &Arc<Self>, caller: &Arc<str>, request_id: &str) -> Result<Reservation, A2aError> {
        let now = self.now();
        self.sweep_if_due(now);
        let limit = self.limit(caller);
        let until = now.saturating_add(ticks(self.ttl));
        let owner = match self.take_slot(caller, limit, until) {
            Ok(owner) => owner,
            Err(earliest_expiry) => {
                // Only a purge can free a slot of a caller at its limit, and only when one may
                // have expired.
                if now < earliest_expiry || !self.purge_for_limit(now) {
                    return Err(self.refusal(caller, limit));
                }
                self.take_slot(caller, limit, until).map_err(|_| self.refusal(caller, limit))?
            }
        };
        let request_id: Arc<str> = Arc::from(request_id);
        // Answers are matched to reservations by request id: two in flight under one id could not
        // be told apart, so the second is refused (request ids come from the gateway, not callers).
        match self.by_request.entry(request_id.clone()) {
            Entry::Occupied(_) => {
                owner.release();
                tracing::error!(%request_id, "concurrency: a request id is reused while its request is in flight");
                Err(A2aError::Internal)
            }
            Entry::Vacant(entry) => {
                entry.insert(Slot { owner, until });
                Ok(Reservation { table: self.clone(), request_id, shared: false })
            }
        }
    }

    /// Counts a slot for `caller` if it holds fewer than `limit`; else says when its first slot
    /// may expire.
    fn take_slot(&self, caller: &Arc<str>, limit: usize, until: u64) -> Result<Arc<Slots>, u64> {
        // Counted while the caller's entry is borrowed: a sweep drops only entries counting none,
        // so no slot is ever counted in an entry the table no longer holds.
        let take = |owner: &Arc<Slots>| {
            if owner.held.fetch_add(1, Ordering::AcqRel) >= limit {
                owner.release();
                return Err(owner.earliest_expiry.load(Ordering::Relaxed));
            }
            if owner.earliest_expiry.load(Ordering::Relaxed) > until {
                owner.earliest_expiry.fetch_min(until, Ordering::Relaxed);
            }
            Ok(owner.clone())
        };
        if let Some(owner) = self.holders.get(&**caller) {
            return take(&owner);
        }
        let owner = self.holders.entry(caller.clone()).or_insert_with(|| {
            Arc::new(Slots { held: AtomicUsize::new(0), earliest_expiry: AtomicU64::new(u64::MAX) })
        });
        take(&owner)
    }

    fn refusal(&self, caller: &str, limit: usize) -> A2aError {
        let held = self.holders.get(caller).map_or(0, |owner| owner.held.load(Ordering::Relaxed));
        A2aError::TooManyTasks { held: held.min(limit), limit }
    }

    /// Ends the pending reservation of `request_id`, if it is still pending.
    fn release(&self, request_id: &str) {
        if let Some((_, slot)) = self.by_request.remove(request_id) {
            slot.owner.release();
        }
    }

    /// Turns the pending reservation of a request into a lease on the live task its answer names
    /// (or just ends it when that task is leased already).
    fn bind(&self, request_id: &str, key: Box<str>) {
        let Some((_, pending)) = self.by_request.remove(request_id) else {
            return;
        };
        match self.by_task.entry(key) {
            Entry::Vacant(entry) => {
                let until = self.now().saturating_add(ticks(self.ttl));
                entry.insert(Slot { owner: pending.owner, until });
            }
            Entry::Occupied(_) => pending.owner.release(),
        }
    }

    /// Ends the lease on a task that reached a terminal state.
    fn finish(&self, key: &str) {
        if let Some((_, lease)) = self.by_task.remove(key) {
            lease.owner.release();
        }
    }

    /// Drops expired leases and reservations of every caller, and callers that hold nothing. Runs
    /// on its own as reservations come; an owner may also call it on a timer.
    pub fn sweep(&self) {
        let now = self.now();
        self.purge(now);
        self.drop_idle();
    }

    fn now(&self) -> u64 {
        ticks(Instant::now().saturating_duration_since(self.epoch))
    }

    /// Expired slots are looked for every eighth of the lease TTL (at least every second): so
    /// slots that expired stay in memory at most that long.
    fn purge_every(&self) -> u64 {
        ticks((self.ttl / 8).max(SWEEP_EVERY))
    }

    /// Drops idle callers every `SWEEP_EVERY`, and purges expired slots when that is due; at most
    /// one reservation does it for each time.
    fn sweep_if_due(&self, now: u64) {
        if !take_turn(&self.next_sweep, now, now + ticks(SWEEP_EVERY)) {
            return;
        }
        if now >= self.next_purge.load(Ordering::Relaxed) {
            self.purge(now);
        }
        self.drop_idle();
    }

    /// A purge for a caller at its limit, unless one ran within `PURGE_AT_LIMIT_EVERY`: whether it
    /// ran.
    fn purge_for_limit(&self, now: u64) -> bool {
        if !take_turn(&self.next_purge_at_limit, now, now + ticks(PURGE_AT_LIMIT_EVERY)) {
            return false;
        }
        self.purge(now);
        true
    }

    /// Gives back every slot expired at `now`, and sets each caller's earliest expiry from what it
    /// keeps.
    fn purge(&self, now: u64) {
        // A purge under way frees what this one would (give or take what expires meanwhile).
        let _purging = match self.purging.try_lock() {
            Ok(held) => held,
            Err(std::sync::TryLockError::WouldBlock) => return,
            Err(std::sync::TryLockError::Poisoned(held)) => held.into_inner(),
        };
        self.next_purge_at_limit.store(now + ticks(PURGE_AT_LIMIT_EVERY), Ordering::Relaxed);
        self.next_purge.store(now.saturating_add(self.purge_every()), Ordering::Relaxed);
        // Slots taken from here on expire a TTL from now or later; those kept lower it below.
        let floor = now.saturating_add(ticks(self.ttl));
        self.holders.iter().for_each(|owner| owner.earliest_expiry.store(floor, Ordering::Relaxed));
        self.by_request.retain(|_, slot| slot.keep_or_release(now));
        self.by_task.retain(|_, slot| slot.keep_or_release(now));
    }

    /// Keeps the table from growing with callers that hold nothing.
    fn drop_idle(&self) {
        self.holders.retain(|_, owner| owner.held.load(Ordering::Acquire) > 0);
    }

    /// Entries in the table and its indexes once idle callers are dropped: (callers, pending
    /// requests, leased tasks).
    #[cfg(test)]
    pub(crate) fn footprint(&self) -> (usize, usize, usize) {
        self.drop_idle();
        (self.holders.len(), self.by_request.len(), self.by_task.len())
    }
}

/// Whether the turn due at `due`'s time has come and is this caller's: of callers at once, one
/// moves `due` on to `next` and gets it.
fn take_turn(due: &AtomicU64, now: u64, next: u64) -> bool {
    let at = due.load(Ordering::Relaxed);
    now >= at && due.compare_exchange(at, next, Ordering::Relaxed, Ordering::Relaxed).is_ok()
}

/// Nanoseconds, the table clock's tick.
fn ticks(span: Duration) -> u64 {
    u64::try_from(span.as_nanos()).unwrap_or(u64::MAX)
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
