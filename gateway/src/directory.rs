//! The task directory: which backend owns each task and context the gateway has seen, learned from
//! answers and stream events. Task-scoped calls are routed by it; a task it does not know is
//! answered as not found. A trait, so that replicas can share one: the in-memory implementation
//! serves a single process, [`crate::state::redis_directory`] several.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures::future::{BoxFuture, FutureExt};

use crate::bounded_map::{BoundedMap, Forgotten, Spared};
use crate::evict::Aging;
use crate::hashing::ByOutsiders;
use crate::protocol::observe::{TaskFact, TaskState};
pub use crate::store_error::Lookup;
use crate::workers::PerWorker;

/// What the directory knows about one task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskEntry {
    pub backend: Arc<str>,
    /// Who may see the task (caller or tenant, by config); `None` when callers are anonymous.
    pub owner: Option<Arc<str>>,
    /// The skill the task was created with, when the gateway knew it.
    pub skill: Option<Arc<str>>,
    pub context_id: Option<String>,
    pub state: Option<TaskState>,
}

impl TaskEntry {
    /// A task first seen in `sighting`: its backend, owner and skill (its context and state come
    /// with what the sighting updates).
    pub fn first_seen(sighting: &Sighting<'_>) -> TaskEntry {
        TaskEntry {
            backend: sighting.backend.clone(),
            owner: sighting.owner.cloned(),
            skill: sighting.skill.cloned(),
            context_id: None,
            state: None,
        }
    }
}

/// Who owns a context: the backend serving it and the caller (or tenant) it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextEntry {
    pub backend: Arc<str>,
    pub owner: Option<Arc<str>>,
    /// The skill of the first task seen in the context, when known: follow-ups keep to it.
    pub skill: Option<Arc<str>>,
}

/// One sighting of a task in a backend's answer to a request.
pub struct Sighting<'a> {
    pub backend: &'a Arc<str>,
    pub owner: Option<&'a Arc<str>>,
    /// Shared, not copied, into a new task's or context's entry.
    pub skill: Option<&'a Arc<str>>,
    pub fact: &'a TaskFact,
}

pub trait TaskDirectory: Send + Sync + 'static {
    /// The entry of a task, if the gateway has seen it.
    fn task(&self, task_id: &str) -> BoxFuture<'_, Lookup<Option<TaskEntry>>>;
    /// The owner of a context, if the gateway has seen it.
    fn context(&self, context_id: &str) -> BoxFuture<'_, Lookup<Option<ContextEntry>>>;
    /// Claims a context a caller named before the gateway saw it (a client-chosen contextId,
    /// adopted as the caller's own on first use): `true` when it is now `entry.owner`'s — claimed
    /// here, or already theirs — `false` when another owner holds it. Atomic: of two callers naming
    /// the same unseen context at once, one wins.
    fn claim_context(&self, context_id: &str, entry: ContextEntry) -> BoxFuture<'_, Lookup<bool>>;
    /// Records a sighting. Never waits: implementations with I/O queue it. The first backend (and
    /// owner) to report a task or context owns it; a later claim by another is ignored.
    fn record(&self, sighting: &Sighting<'_>);
    /// The tasks of `owner`, most recently updated first (by when the gateway first saw them or
    /// last saw their state change), each with its position: a number that only grows, for paging.
    /// A task that changes state takes a new, higher position.
    fn tasks_of(&self, owner: Option<&Arc<str>>) -> BoxFuture<'_, Lookup<Vec<(u64, String, TaskEntry)>>>;
    /// Forgets entries not seen for longer than the directory's time-to-live.
    fn sweep(&self);
    /// Up to `limit` known tasks with their entries, in no particular order (the admin API's view).
    fn list(&self, limit: usize) -> BoxFuture<'_, Vec<(String, TaskEntry)>>;
    /// How many entries this process holds in memory (the `a2a_task_directory_entries` gauge).
    fn size(&self) -> DirectorySize;
}

/// Counts tasks and contexts forgotten to keep the in-memory directory within `routing.max_tasks`.
pub const EVICTED: &str = "a2a_task_directory_evicted_total";

/// Entries a directory holds in this process's memory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DirectorySize {
    pub tasks: usize,
    pub contexts: usize,
    /// Tasks and contexts forgotten to keep within `routing.max_tasks` since the start ([`EVICTED`]).
    pub evicted: u64,
}

/// An owner's tasks as (position, task id).
type Listed = Vec<(u64, String)>;

/// Owner key → its tasks by position.
type OwnerLists = HashMap<Arc<str>, BTreeMap<u64, String>, ByOutsiders>;

struct Seen<T> {
    value: T,
    at: Instant,
    /// Tasks: the position in its owner's list (first sight or last state change). Contexts: 0.
    seq: u64,
    /// Tasks: the worker whose index lists it at `seq` ([`PerWorker::slot`]). Contexts: 0.
    listed_on: usize,
}

/// Live tasks stay while finished ones can go.
impl Spared for Seen<TaskEntry> {
    fn spared(&self) -> bool {
        !self.value.state.is_some_and(TaskState::is_terminal)
    }
}

impl Spared for Seen<ContextEntry> {}

/// What a sighting changes in its owner's list of tasks.
enum Listing {
    Unchanged,
    /// A new task, at this position.
    New(u64),
    /// A task whose state changed: from (worker, position) to a new position on this worker.
    Moved {
        from: (usize, u64),
        to: u64,
    },
}

/// A single-process directory on concurrent hash maps.
pub struct MemoryDirectory {
    /// Each within `routing.max_tasks`, shard by shard ([`BoundedMap`]).
    tasks: BoundedMap<Seen<TaskEntry>>,
    contexts: BoundedMap<Seen<ContextEntry>>,
    /// Owner key (`""` for anonymous callers) → its tasks by position, one index per worker thread,
    /// written by that thread alone but for a task's move or its end: every new task is written into
    /// its owner's list, and with one caller (a single client, a service account, every anonymous
    /// caller) one shared index would make every request of every worker take the same lock and
    /// write the same tree. Listing merges them.
    by_owner: PerWorker<Mutex<OwnerLists>>,
    /// Places in `by_owner` left behind since the last sweep (a task moved or forgotten before its
    /// place was written): what makes a sweep tidy the indexes.
    left_behind: AtomicUsize,
    /// When the tasks may next reach `ttl`, and the contexts.
    tasks_aging: Aging,
    contexts_aging: Aging,
    next_seq: AtomicU64,
    ttl: Duration,
    /// Entries forgotten past `max_tasks`, counted by each worker apart (once the directory is full,
    /// every new task forgets one: one shared count would be a line every worker writes).
    evicted: PerWorker<AtomicU64>,
}

impl MemoryDirectory {
    pub fn new(ttl: Duration) -> MemoryDirectory {
        MemoryDirectory {
            tasks: BoundedMap::new(None),
            contexts: BoundedMap::new(None),
            by_owner: PerWorker::new(Mutex::default),
            left_behind: AtomicUsize::new(0),
            tasks_aging: Aging::default(),
            contexts_aging: Aging::default(),
            next_seq: AtomicU64::new(1),
            ttl,
            evicted: PerWorker::new(AtomicU64::default),
        }
    }

    /// Holds at most `max` tasks (and as many contexts): a new one past it forgets the oldest of its
    /// shard, finished tasks before live ones and those not seen again before those that were (see
    /// [`BoundedMap`]).
    pub fn with_max_tasks(mut self, max: usize) -> MemoryDirectory {
        self.tasks = BoundedMap::new(Some(max));
        self.contexts = BoundedMap::new(Some(max));
        self
    }

    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Counts entries forgotten to keep within `max_tasks`.
    fn count_evicted(&self, evicted: usize) {
        if evicted > 0 {
            self.evicted.get().fetch_add(evicted as u64, Ordering::Relaxed);
        }
    }

    /// Takes forgotten tasks out of their owners' lists. A place not found is one still to be
    /// written (by the call that listed or moved the task, after it let go of the task's entry): it
    /// is counted, for the next sweep to tidy.
    fn unlist(&self, mut forgotten: Forgotten<Seen<TaskEntry>>) {
        forgotten.sort_unstable_by_key(|(_, seen)| seen.listed_on);
        for on_one_worker in forgotten.chunk_by(|(_, a), (_, b)| a.listed_on == b.listed_on) {
            let mut lists = lock(self.by_owner.at(on_one_worker[0].1.listed_on));
            for (_, seen) in on_one_worker {
                self.take_place(&mut lists, seen.value.owner.as_deref().unwrap_or(""), seen.seq);
            }
        }
    }

    /// Takes a task's place out of an owner's list in one worker's index (and the list, once
    /// empty). A place not found is counted as left behind: it is still to be written.
    fn take_place(&self, lists: &mut OwnerLists, key: &str, seq: u64) {
        let removed = lists.get_mut(key).is_some_and(|listed| listed.remove(&seq).is_some());
        if !removed {
            self.left_behind.fetch_add(1, Ordering::Relaxed);
        }
        if lists.get(key).is_some_and(BTreeMap::is_empty) {
            lists.remove(key);
        }
    }
}

impl TaskDirectory for MemoryDirectory {
    fn task(&self, task_id: &str) -> BoxFuture<'_, Lookup<Option<TaskEntry>>> {
        let found = self.tasks.get(task_id, |seen| seen.value.clone());
        futures::future::ready(Ok(found)).boxed()
    }

    fn context(&self, context_id: &str) -> BoxFuture<'_, Lookup<Option<ContextEntry>>> {
        let found = self.contexts.get(context_id, |seen| seen.value.clone());
        futures::future::ready(Ok(found)).boxed()
    }

    fn claim_context(&self, context_id: &str, entry: ContextEntry) -> BoxFuture<'_, Lookup<bool>> {
        let owner = entry.owner.clone();
        let make = || Seen { value: entry, at: Instant::now(), seq: 0, listed_on: 0 };
        let (theirs, forgotten) = self.contexts.upsert(context_id, make, |seen, _| seen.value.owner == owner);
        self.count_evicted(forgotten.len());
        futures::future::ready(Ok(theirs)).boxed()
    }

    fn record(&self, sighting: &Sighting<'_>) {
        let (backend, fact) = (sighting.backend, sighting.fact);
        let owner = sighting.owner.cloned();
        let now = Instant::now();
        if let Some(context_id) = &fact.context_id {
            let make = || Seen {
                value: ContextEntry { backend: backend.clone(), owner: owner.clone(), skill: sighting.skill.cloned() },
                at: now,
                seq: 0,
                listed_on: 0,
            };
            let ((), forgotten) = self.contexts.upsert(context_id, make, |seen, _| {
                if seen.value.backend == *backend && seen.value.owner == owner {
                    seen.at = now;
                }
            });
            self.count_evicted(forgotten.len());
        }
        let Some(task_id) = &fact.task_id else { return };
        let slot = self.by_owner.slot();
        let make = || Seen {
            value: TaskEntry::first_seen(sighting),
            at: now,
            seq: self.next_seq.fetch_add(1, Ordering::Relaxed),
            listed_on: slot,
        };
        let (listing, forgotten) = self.tasks.upsert(task_id, make, |seen, made| {
            if seen.value.backend != *backend || seen.value.owner != owner {
                tracing::warn!(task_id, claimed_by = %backend, owner = %seen.value.backend, "ignoring a second claim on a task");
                return Listing::Unchanged;
            }
            seen.at = now;
            if fact.context_id.is_some() && seen.value.context_id != fact.context_id {
                seen.value.context_id.clone_from(&fact.context_id);
            }
            let mut listing = if made { Listing::New(seen.seq) } else { Listing::Unchanged };
            // A terminal state is final: a late non-terminal event (replayed snapshot) must not undo it.
            match (seen.value.state, fact.state) {
                (Some(old), _) if old.is_terminal() => {}
                (old, Some(new)) => {
                    seen.value.state = Some(new);
                    // ListTasks lists the most recently updated first (A2A §3.1.4): a task whose
                    // state changes takes a new place at the front of its owner's list.
                    if !made && old != Some(new) {
                        let to = self.next_seq.fetch_add(1, Ordering::Relaxed);
                        listing = Listing::Moved { from: (seen.listed_on, seen.seq), to };
                        (seen.seq, seen.listed_on) = (to, slot);
                    }
                }
                _ => {}
            }
            listing
        });
        // The owners' lists are written with no shard of `tasks` held (`sweep` holds a list's lock
        // and reads `tasks`).
        if !forgotten.is_empty() {
            self.count_evicted(forgotten.len());
            self.unlist(forgotten);
        }
        let (new, from) = match listing {
            Listing::Unchanged => return,
            Listing::New(seq) => (seq, None),
            Listing::Moved { from, to } => (to, Some(from)),
        };
        let key = owner.as_deref().unwrap_or("");
        // The place a move leaves in this worker's own list; one in another worker's is taken out
        // there (a move is rare next to a new task, so that lock is seldom in use at the same time).
        let left_here = match from {
            Some((from_slot, old)) if from_slot != slot => {
                self.take_place(&mut lock(self.by_owner.at(from_slot)), key, old);
                None
            }
            from => from.map(|(_, old)| old),
        };
        let mut lists = lock(self.by_owner.at(slot));
        let listed = match lists.get_mut(key) {
            Some(listed) => listed,
            // Anonymous callers' tasks are listed under "" (one key, not one per task).
            None => lists.entry(owner.unwrap_or_else(|| Arc::from(""))).or_default(),
        };
        // Not found: another call moving the same task at the same time took it first.
        if let Some(old) = left_here
            && listed.remove(&old).is_none()
        {
            self.left_behind.fetch_add(1, Ordering::Relaxed);
        }
        listed.insert(new, task_id.clone());
    }

    fn tasks_of(&self, owner: Option<&Arc<str>>) -> BoxFuture<'_, Lookup<Vec<(u64, String, TaskEntry)>>> {
        let key = owner.map_or("", |o| &**o);
        let mut ids: Listed = Vec::new();
        for lists in self.by_owner.all() {
            if let Some(tasks) = lock(lists).get(key) {
                ids.extend(tasks.iter().rev().map(|(seq, id)| (*seq, id.clone())));
            }
        }
        // Newest first across the threads' indexes: each is a run already in that order, which the
        // stable sort finds and merges (O(n log runs); one index: nothing to do).
        ids.sort_by_key(|(seq, _)| std::cmp::Reverse(*seq));
        let found = ids
            .into_iter()
            .filter_map(|(seq, id)| {
                let entry = self.tasks.get(&id, |seen| (seen.seq == seq).then(|| seen.value.clone())).flatten()?;
                Some((seq, id, entry))
            })
            .collect();
        futures::future::ready(Ok(found)).boxed()
    }

    fn list(&self, limit: usize) -> BoxFuture<'_, Vec<(String, TaskEntry)>> {
        let tasks = self.tasks.collect(limit, |id, seen| Some((id.to_owned(), seen.value.clone())));
        futures::future::ready(tasks).boxed()
    }

    fn size(&self) -> DirectorySize {
        let evicted = self.evicted.all().map(|count| count.load(Ordering::Relaxed)).sum();
        DirectorySize { tasks: self.tasks.len(), contexts: self.contexts.len(), evicted }
    }

    fn sweep(&self) {
        // Past `max_tasks` nothing waits for a sweep: the insert that passes a shard's share makes
        // room at once. A sweep forgets what reached `ttl`, when anything may have.
        self.tasks_aging.forget_older_than(self.ttl, |young| {
            self.tasks.retain(|seen| young(seen.at), |expired| self.unlist(expired));
        });
        self.contexts_aging.forget_older_than(self.ttl, |young| self.contexts.retain(|seen| young(seen.at), drop));
        // Places the lists could not drop at once: found by a walk of every listed task.
        if self.left_behind.swap(0, Ordering::Relaxed) == 0 {
            return;
        }
        // Which listed tasks are gone is decided from a copy, a chunk at a time, so that neither a
        // `tasks` lock is taken while an index is locked nor a worker's index locked for long.
        for lists in self.by_owner.all() {
            let owners: Vec<Arc<str>> = lock(lists).keys().cloned().collect();
            for owner in owners {
                let mut from = 0;
                loop {
                    let chunk: Listed = match lock(lists).get(&owner) {
                        Some(tasks) => {
                            tasks.range(from..).take(SWEEP_CHUNK).map(|(seq, id)| (*seq, id.clone())).collect()
                        }
                        None => break,
                    };
                    let gone: Vec<u64> = chunk
                        .iter()
                        .filter(|(seq, id)| self.tasks.get(id, |seen| seen.seq) != Some(*seq))
                        .map(|(seq, _)| *seq)
                        .collect();
                    if !gone.is_empty() {
                        // A position once gone stays gone: positions are never given out twice.
                        let mut lists = lock(lists);
                        if let Some(listed) = lists.get_mut(&owner) {
                            gone.iter().for_each(|seq| _ = listed.remove(seq));
                            if listed.is_empty() {
                                lists.remove(&owner);
                            }
                        }
                    }
                    match chunk.last() {
                        Some((last, _)) if chunk.len() == SWEEP_CHUNK => from = last + 1,
                        _ => break,
                    }
                }
            }
        }
    }
}

/// How many of an owner's listed tasks a sweep copies at a time (while it holds that index's lock).
const SWEEP_CHUNK: usize = 4096;

/// A worker's index of owners' tasks (a panic while it was held leaves a consistent map: each
/// write is one insert or remove).
fn lock(lists: &Mutex<OwnerLists>) -> MutexGuard<'_, OwnerLists> {
    lists.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(task: &str, context: &str, state: Option<TaskState>) -> TaskFact {
        TaskFact {
            task_id: Some(task.into()),
            context_id: Some(context.into()),
            state,
            artifacts: Vec::new(),
            message: false,
        }
    }

    fn record(dir: &MemoryDirectory, backend: &Arc<str>, fact: &TaskFact) {
        let echo: Arc<str> = Arc::from("echo");
        dir.record(&Sighting { backend, owner: None, skill: Some(&echo), fact });
    }

    /// Recording new tasks and sweeping at the same time once deadlocked the whole gateway: each
    /// held one map's lock while waiting for the other's (found by the slow-clients benchmark, where
    /// every runtime worker ended up waiting). A deadlock shows as the watchdog's failure.
    #[test]
    fn recording_and_sweeping_at_once_never_wait_on_each_other() {
        let dir = Arc::new(MemoryDirectory::new(Duration::ZERO));
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (finished, watchdog) = std::sync::mpsc::channel();
        let sweeper = {
            let (dir, done) = (dir.clone(), done.clone());
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    dir.sweep();
                }
            })
        };
        let recorders: Vec<_> = (0..2)
            .map(|n| {
                let (dir, finished) = (dir.clone(), finished.clone());
                std::thread::spawn(move || {
                    let (backend, owner): (Arc<str>, Arc<str>) = (Arc::from("b"), Arc::from("owner"));
                    let echo: Arc<str> = Arc::from("echo");
                    for i in 0..20_000 {
                        let fact = fact(&format!("t{n}-{i}"), &format!("c{n}-{i}"), Some(TaskState::Working));
                        let sighting =
                            Sighting { backend: &backend, owner: Some(&owner), skill: Some(&echo), fact: &fact };
                        dir.record(&sighting);
                    }
                    let _ = finished.send(());
                })
            })
            .collect();
        for _ in 0..recorders.len() {
            watchdog
                .recv_timeout(Duration::from_secs(120))
                .expect("recording did not finish: record and sweep deadlocked");
        }
        done.store(true, Ordering::Relaxed);
        sweeper.join().unwrap();
        recorders.into_iter().for_each(|r| r.join().unwrap());
    }

    /// Past `max_tasks` each new task forgets the oldest at once, finished tasks before live ones;
    /// the owner's list forgets them too. (A directory this small is one shard: the order is exact.)
    #[tokio::test]
    async fn past_max_tasks_the_least_recently_seen_are_forgotten_finished_tasks_first() {
        let dir = MemoryDirectory::new(Duration::from_secs(3600)).with_max_tasks(10);
        let echo: Arc<str> = Arc::from("echo");
        for i in 0..8 {
            record(&dir, &echo, &fact(&format!("live{i}"), &format!("c-live{i}"), Some(TaskState::Working)));
        }
        for i in 0..8 {
            record(&dir, &echo, &fact(&format!("done{i}"), &format!("c-done{i}"), Some(TaskState::Completed)));
            assert!(dir.size().tasks <= 10 && dir.size().contexts <= 10, "over the limit: {:?}", dir.size());
        }
        // From the 11th task on, each forgot the oldest finished one.
        assert_eq!(dir.size(), DirectorySize { tasks: 10, contexts: 10, evicted: 12 });
        for i in 0..8 {
            assert!(dir.task(&format!("live{i}")).await.unwrap().is_some(), "live{i} is kept");
        }
        assert!(dir.task("done7").await.unwrap().is_some(), "the newest finished task is kept");
        assert!(dir.task("done0").await.unwrap().is_none(), "the oldest finished task is forgotten");
        let listed = dir.tasks_of(None).await.unwrap();
        assert_eq!(listed.len(), 10, "the owner's list holds only what is kept");
        let places: usize = dir.by_owner.all().filter_map(|lists| lock(lists).get("").map(BTreeMap::len)).sum();
        assert_eq!(places, 10, "forgotten tasks leave no place behind");
        // Contexts have no state: the least recently seen go.
        assert!(dir.context("c-live0").await.unwrap().is_none());
        assert!(dir.context("c-done7").await.unwrap().is_some());
    }

    /// Tasks recorded from several threads at once never take the directory past its limit, and
    /// every task forgotten leaves its owner's list (at once, or by the next sweep when it was
    /// forgotten before its place was written).
    #[test]
    fn recording_from_many_threads_never_takes_the_directory_past_its_limit() {
        for round in 0..20 {
            let dir = Arc::new(MemoryDirectory::new(Duration::from_secs(3600)).with_max_tasks(50));
            let recorders: Vec<_> = (0..4)
                .map(|n| {
                    let dir = dir.clone();
                    std::thread::spawn(move || {
                        let (echo, owner): (Arc<str>, Arc<str>) = (Arc::from("echo"), Arc::from("alice"));
                        for i in 0..500 {
                            let state = if i % 3 == 0 { TaskState::Working } else { TaskState::Completed };
                            let fact = fact(&format!("r{round}-{n}-{i}"), "c", Some(state));
                            let sighting = Sighting { backend: &echo, owner: Some(&owner), skill: None, fact: &fact };
                            dir.record(&sighting);
                            assert!(dir.len() <= 50, "{} tasks", dir.len());
                        }
                    })
                })
                .collect();
            recorders.into_iter().for_each(|r| r.join().unwrap());
            dir.sweep();
            let places: usize =
                dir.by_owner.all().filter_map(|lists| lock(lists).get("alice").map(BTreeMap::len)).sum();
            assert_eq!(places, dir.len(), "round {round}: one place per task kept");
        }
    }

    #[tokio::test]
    async fn learns_tasks_and_contexts() {
        let dir = MemoryDirectory::new(Duration::from_secs(60));
        let echo: Arc<str> = Arc::from("echo");
        record(&dir, &echo, &fact("t1", "c1", Some(TaskState::Working)));
        let entry = dir.task("t1").await.unwrap().unwrap();
        assert_eq!(entry.backend, echo);
        assert_eq!(entry.context_id.as_deref(), Some("c1"));
        assert_eq!(entry.skill.as_deref(), Some("echo"));
        assert_eq!(dir.context("c1").await.unwrap().map(|c| c.backend), Some(echo));
        assert_eq!(dir.task("t2").await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_claimed_context_is_its_first_claimants_only() {
        let dir = MemoryDirectory::new(Duration::from_secs(60));
        let claim =
            |owner: &str| ContextEntry { backend: Arc::from("echo"), owner: Some(Arc::from(owner)), skill: None };
        assert!(dir.claim_context("mine", claim("alice")).await.unwrap());
        assert!(dir.claim_context("mine", claim("alice")).await.unwrap());
        assert!(!dir.claim_context("mine", claim("bob")).await.unwrap());
        assert_eq!(dir.context("mine").await.unwrap().and_then(|c| c.owner).as_deref(), Some("alice"));
        // An answer's later sighting by another owner changes nothing.
        record(&dir, &Arc::from("echo"), &fact("t1", "mine", Some(TaskState::Working)));
        assert_eq!(dir.context("mine").await.unwrap().and_then(|c| c.owner).as_deref(), Some("alice"));
    }

    #[tokio::test]
    async fn first_owner_wins() {
        let dir = MemoryDirectory::new(Duration::from_secs(60));
        let (a, b): (Arc<str>, Arc<str>) = (Arc::from("a"), Arc::from("b"));
        record(&dir, &a, &fact("t1", "c1", Some(TaskState::Working)));
        record(&dir, &b, &fact("t1", "c1", Some(TaskState::Completed)));
        let entry = dir.task("t1").await.unwrap().unwrap();
        assert_eq!(entry.backend, a);
        assert_eq!(entry.state, Some(TaskState::Working));
        assert_eq!(dir.context("c1").await.unwrap().map(|c| c.backend), Some(a));
    }

    #[tokio::test]
    async fn a_task_keeps_its_first_owner() {
        let dir = MemoryDirectory::new(Duration::from_secs(60));
        let a: Arc<str> = Arc::from("a");
        let (alice, mallory): (Arc<str>, Arc<str>) = (Arc::from("alice"), Arc::from("mallory"));
        let working = fact("t1", "c1", Some(TaskState::Working));
        dir.record(&Sighting { backend: &a, owner: Some(&alice), skill: None, fact: &working });
        let done = fact("t1", "c1", Some(TaskState::Completed));
        dir.record(&Sighting { backend: &a, owner: Some(&mallory), skill: None, fact: &done });
        let entry = dir.task("t1").await.unwrap().unwrap();
        assert_eq!((entry.owner, entry.state), (Some(alice.clone()), Some(TaskState::Working)));
        assert_eq!(dir.context("c1").await.unwrap().unwrap().owner, Some(alice));
    }

    #[tokio::test]
    async fn terminal_state_sticks() {
        let dir = MemoryDirectory::new(Duration::from_secs(60));
        let a: Arc<str> = Arc::from("a");
        record(&dir, &a, &fact("t1", "c1", Some(TaskState::Canceled)));
        record(&dir, &a, &fact("t1", "c1", Some(TaskState::Working)));
        assert_eq!(dir.task("t1").await.unwrap().unwrap().state, Some(TaskState::Canceled));
    }

    #[tokio::test]
    async fn list_shows_known_tasks_up_to_the_limit() {
        let dir = MemoryDirectory::new(Duration::from_secs(60));
        let a: Arc<str> = Arc::from("a");
        record(&dir, &a, &fact("t1", "c1", Some(TaskState::Working)));
        record(&dir, &a, &fact("t2", "c1", None));
        let mut ids: Vec<String> = dir.list(10).await.into_iter().map(|(id, _)| id).collect();
        ids.sort();
        assert_eq!(ids, ["t1", "t2"]);
        assert_eq!(dir.list(1).await.len(), 1);
    }

    #[tokio::test]
    async fn sweep_forgets_old_entries() {
        let dir = MemoryDirectory::new(Duration::ZERO);
        let a: Arc<str> = Arc::from("a");
        record(&dir, &a, &fact("t1", "c1", None));
        dir.sweep();
        assert!(dir.is_empty());
        assert_eq!(dir.context("c1").await.unwrap(), None);
        assert!(dir.tasks_of(None).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn lists_an_owners_tasks_newest_first() {
        let dir = MemoryDirectory::new(Duration::from_secs(60));
        let a: Arc<str> = Arc::from("a");
        let (alice, bob): (Arc<str>, Arc<str>) = (Arc::from("alice"), Arc::from("bob"));
        for (task, owner) in [("t1", &alice), ("t2", &bob), ("t3", &alice)] {
            let fact = fact(task, "c", None);
            dir.record(&Sighting { backend: &a, owner: Some(owner), skill: None, fact: &fact });
        }
        let listed: Vec<String> = dir.tasks_of(Some(&alice)).await.unwrap().into_iter().map(|(_, id, _)| id).collect();
        assert_eq!(listed, ["t3", "t1"]);
        assert_eq!(dir.tasks_of(Some(&bob)).await.unwrap().len(), 1);
        assert!(dir.tasks_of(None).await.unwrap().is_empty());
    }

    /// Each worker thread writes its own index of owners' tasks; an owner's list is their merge,
    /// newest first, and a task that moves on another worker leaves no second place behind.
    #[test]
    fn an_owners_tasks_recorded_on_different_workers_list_as_one() {
        let workers = crate::workers::Workers::new(2).unwrap();
        let mut dir = MemoryDirectory::new(Duration::from_secs(60));
        dir.by_owner = PerWorker::build_for(workers.len(), || Ok::<_, ()>(Mutex::default())).unwrap();
        let dir = Arc::new(dir);
        let alice: Arc<str> = Arc::from("alice");
        // One at a time, each on the next worker (round robin).
        let see = |task: &str, state: TaskState| {
            let (dir, alice, task, (done, wait)) =
                (dir.clone(), alice.clone(), task.to_owned(), std::sync::mpsc::channel());
            workers.spawn(async move {
                let (fact, a) = (fact(&task, "c", Some(state)), Arc::from("a"));
                dir.record(&Sighting { backend: &a, owner: Some(&alice), skill: None, fact: &fact });
                let _ = done.send(());
            });
            wait.recv().unwrap();
        };
        let order = || {
            let listed = dir.tasks_of(Some(&alice)).now_or_never().unwrap().unwrap();
            listed.into_iter().map(|(_, id, _)| id).collect::<Vec<String>>()
        };
        for i in 0..5 {
            see(&format!("t{i}"), TaskState::Working);
        }
        let per_worker: Vec<usize> =
            dir.by_owner.all().map(|lists| lock(lists).get("alice").map_or(0, BTreeMap::len)).collect();
        assert_eq!(per_worker, [0, 3, 2], "each worker's own index (t0, t2, t4 on the first)");
        assert_eq!(order(), ["t4", "t3", "t2", "t1", "t0"]);
        // The sixth call runs on the second worker: t0's old place is taken out of the first's index.
        see("t0", TaskState::Completed);
        assert_eq!(order(), ["t0", "t4", "t3", "t2", "t1"], "moved to the front, listed once");
        let places: usize = dir.by_owner.all().filter_map(|lists| lock(lists).get("alice").map(BTreeMap::len)).sum();
        assert_eq!(places, 5, "no place left on the other worker");
    }

    #[tokio::test]
    async fn a_task_whose_state_changes_moves_to_the_front_of_its_owners_list() {
        let dir = MemoryDirectory::new(Duration::from_secs(60));
        let a: Arc<str> = Arc::from("a");
        let alice: Arc<str> = Arc::from("alice");
        let see = |task: &str, state: TaskState| {
            let fact = fact(task, "c", Some(state));
            dir.record(&Sighting { backend: &a, owner: Some(&alice), skill: None, fact: &fact });
        };
        let order = || async {
            dir.tasks_of(Some(&alice)).await.unwrap().into_iter().map(|(_, id, _)| id).collect::<Vec<String>>()
        };
        see("t1", TaskState::Working);
        see("t2", TaskState::Completed);
        assert_eq!(order().await, ["t2", "t1"]);
        see("t1", TaskState::Working);
        assert_eq!(order().await, ["t2", "t1"], "the same state again is no update");
        see("t1", TaskState::Completed);
        assert_eq!(order().await, ["t1", "t2"]);
        see("t2", TaskState::Working);
        assert_eq!(order().await, ["t1", "t2"], "a terminal state is final");
        dir.sweep();
        let places: usize = dir.by_owner.all().filter_map(|lists| lock(lists).get("alice").map(BTreeMap::len)).sum();
        assert_eq!(places, 2, "no place left behind");
    }
}
