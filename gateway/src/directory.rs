//! The task directory: which backend owns each task and context the gateway has seen, learned from
//! answers and stream events. Task-scoped calls are routed by it; a task it does not know is
//! answered as not found. A trait, so that replicas can share one: the in-memory implementation
//! serves a single process, [`crate::state::redis_directory`] several.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use dashmap::DashMap;
use futures::future::{BoxFuture, FutureExt};

use crate::evict::{Aging, swept_map};
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
    /// Signalled when the directory holds more than it may and wants a sweep before the next tick.
    fn crowded(&self) -> Option<&tokio::sync::Notify> {
        None
    }
}

/// Counts tasks and contexts forgotten to keep the in-memory directory within `routing.max_tasks`.
pub const EVICTED: &str = "a2a_task_directory_evicted_total";

/// Entries a directory holds in this process's memory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DirectorySize {
    pub tasks: usize,
    pub contexts: usize,
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
}

/// A single-process directory on concurrent hash maps.
pub struct MemoryDirectory {
    tasks: DashMap<String, Seen<TaskEntry>, ByOutsiders>,
    contexts: DashMap<String, Seen<ContextEntry>, ByOutsiders>,
    /// Owner key (`""` for anonymous callers) → its tasks by position, one index per worker thread,
    /// written by that thread alone: every new task is written into its owner's list, and with one
    /// caller (a single client, a service account, every anonymous caller) one shared index would
    /// make every request of every worker take the same lock and write the same tree. Listing
    /// merges them.
    by_owner: PerWorker<Mutex<OwnerLists>>,
    /// Places in `by_owner` left behind by moves (a task whose state changed on another worker than
    /// the one that listed it) since the last sweep: with tasks forgotten, what makes a sweep tidy
    /// the indexes.
    left_behind: AtomicUsize,
    /// When the tasks may next reach `ttl`, and the contexts.
    tasks_aging: Aging,
    contexts_aging: Aging,
    next_seq: AtomicU64,
    ttl: Duration,
    /// At most this many tasks, and as many contexts (`routing.max_tasks`).
    max_tasks: usize,
    /// The first `seq` past which the directory may hold more than `max_tasks` (set by each sweep
    /// from what it left): a new task beyond it asks for a sweep, through `crowded`.
    full_at_seq: AtomicU64,
    crowded: tokio::sync::Notify,
}

impl MemoryDirectory {
    pub fn new(ttl: Duration) -> MemoryDirectory {
        MemoryDirectory {
            tasks: swept_map(),
            contexts: swept_map(),
            by_owner: PerWorker::new(Mutex::default),
            left_behind: AtomicUsize::new(0),
            tasks_aging: Aging::default(),
            contexts_aging: Aging::default(),
            next_seq: AtomicU64::new(1),
            ttl,
            max_tasks: usize::MAX,
            full_at_seq: AtomicU64::new(u64::MAX),
            crowded: tokio::sync::Notify::new(),
        }
    }

    /// Holds at most `max` tasks (and as many contexts): past it, a sweep forgets the least recently
    /// seen down to nine tenths of it, finished tasks before live ones.
    pub fn with_max_tasks(mut self, max: usize) -> MemoryDirectory {
        self.max_tasks = max.max(1);
        self.full_at_seq = AtomicU64::new(1u64.saturating_add(max as u64));
        self
    }

    /// Forgets the least recently seen tasks and contexts past `max_tasks`, finished tasks first;
    /// how many of each.
    fn evict(&self) -> (usize, usize) {
        // Finished tasks rank lowest (`false`), then by last sighting; `seq` makes every rank unique.
        let task_rank =
            |seen: &Seen<TaskEntry>| (!seen.value.state.is_some_and(TaskState::is_terminal), seen.at, seen.seq);
        (
            crate::evict::evict_lowest(&self.tasks, self.max_tasks, task_rank),
            crate::evict::evict_lowest(&self.contexts, self.max_tasks, |s| s.at),
        )
    }

    /// Has the sweeper run before the next tick: from here on no new task checks the mark.
    fn ask_for_sweep(&self) {
        self.full_at_seq.store(u64::MAX, Ordering::Relaxed);
        self.crowded.notify_one();
    }

    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }
}

impl TaskDirectory for MemoryDirectory {
    fn task(&self, task_id: &str) -> BoxFuture<'_, Lookup<Option<TaskEntry>>> {
        let found = self.tasks.get(task_id).map(|e| e.value.clone());
        futures::future::ready(Ok(found)).boxed()
    }

    fn context(&self, context_id: &str) -> BoxFuture<'_, Lookup<Option<ContextEntry>>> {
        let found = self.contexts.get(context_id).map(|e| e.value.clone());
        futures::future::ready(Ok(found)).boxed()
    }

    fn claim_context(&self, context_id: &str, entry: ContextEntry) -> BoxFuture<'_, Lookup<bool>> {
        let owner = entry.owner.clone();
        let seen = self.contexts.entry(context_id.to_owned()).or_insert_with(|| Seen {
            value: entry,
            at: Instant::now(),
            seq: 0,
        });
        futures::future::ready(Ok(seen.value.owner == owner)).boxed()
    }

    fn record(&self, sighting: &Sighting<'_>) {
        let (backend, fact) = (sighting.backend, sighting.fact);
        let owner = sighting.owner.cloned();
        let now = Instant::now();
        if let Some(context_id) = &fact.context_id {
            // Most sightings are of a known context (every event of a stream): looked up by the
            // borrowed id before an owned one is made for an entry.
            let mut seen = match self.contexts.get_mut(context_id.as_str()) {
                Some(seen) => seen,
                None => self.contexts.entry(context_id.clone()).or_insert_with(|| Seen {
                    value: ContextEntry {
                        backend: backend.clone(),
                        owner: owner.clone(),
                        skill: sighting.skill.cloned(),
                    },
                    at: now,
                    seq: 0,
                }),
            };
            if seen.value.backend == *backend && seen.value.owner == owner {
                seen.at = now;
            }
        }
        let Some(task_id) = &fact.task_id else { return };
        // Never one map's lock while taking another's: `sweep` holds `by_owner` and reads `tasks`,
        // so a new task's place in `by_owner` is written after its `tasks` entry is released.
        let mut first_seen = None;
        let mut seen = match self.tasks.get_mut(task_id.as_str()) {
            Some(seen) => seen,
            None => self.tasks.entry(task_id.clone()).or_insert_with(|| {
                let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
                first_seen = Some(seq);
                Seen {
                    value: TaskEntry {
                        backend: backend.clone(),
                        owner: owner.clone(),
                        skill: sighting.skill.cloned(),
                        context_id: None,
                        state: None,
                    },
                    at: now,
                    seq,
                }
            }),
        };
        if seen.value.backend != *backend || seen.value.owner != owner {
            tracing::warn!(task_id, claimed_by = %backend, owner = %seen.value.backend, "ignoring a second claim on a task");
            return;
        }
        seen.at = now;
        if fact.context_id.is_some() && seen.value.context_id != fact.context_id {
            seen.value.context_id.clone_from(&fact.context_id);
        }
        // A terminal state is final: a late non-terminal event (replayed snapshot) must not undo it.
        let mut moved = None;
        match (seen.value.state, fact.state) {
            (Some(old), _) if old.is_terminal() => {}
            (old, Some(new)) => {
                seen.value.state = Some(new);
                // ListTasks lists the most recently updated first (A2A §3.1.4): a task whose state
                // changes takes a new place at the front of its owner's list.
                if first_seen.is_none() && old != Some(new) {
                    let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
                    moved = Some((seen.seq, seq));
                    seen.seq = seq;
                }
            }
            _ => {}
        }
        drop(seen);
        // Past the limit, a sweep is asked for (once: the sweep sets the next mark), with no map's
        // lock held while the sweeper is woken.
        if first_seen.is_some_and(|seq| seq >= self.full_at_seq.load(Ordering::Relaxed)) {
            self.ask_for_sweep();
        }
        if first_seen.is_none() && moved.is_none() {
            return;
        }
        let mut lists = lock(self.by_owner.get());
        let key = owner.as_deref().unwrap_or("");
        let listed = match lists.get_mut(key) {
            Some(listed) => listed,
            // Anonymous callers' tasks are listed under "" (one key, not one per task).
            None => lists.entry(owner.unwrap_or_else(|| Arc::from(""))).or_default(),
        };
        if let Some(seq) = first_seen {
            listed.insert(seq, task_id.clone());
        }
        if let Some((old, new)) = moved {
            // A place left behind in another thread's index, or by a concurrent move, is skipped by
            // `tasks_of` and tidied by `sweep`.
            if listed.remove(&old).is_none() {
                self.left_behind.fetch_add(1, Ordering::Relaxed);
            }
            listed.insert(new, task_id.clone());
        }
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
                let entry = self.tasks.get(&id).filter(|e| e.seq == seq)?.value.clone();
                Some((seq, id, entry))
            })
            .collect();
        futures::future::ready(Ok(found)).boxed()
    }

    fn list(&self, limit: usize) -> BoxFuture<'_, Vec<(String, TaskEntry)>> {
        let tasks = self.tasks.iter().take(limit).map(|e| (e.key().clone(), e.value().value.clone())).collect();
        futures::future::ready(tasks).boxed()
    }

    fn size(&self) -> DirectorySize {
        DirectorySize { tasks: self.tasks.len(), contexts: self.contexts.len() }
    }

    fn crowded(&self) -> Option<&tokio::sync::Notify> {
        Some(&self.crowded)
    }

    fn sweep(&self) {
        let expired = self.tasks_aging.forget_older_than(&self.tasks, self.ttl, |seen| seen.at);
        self.contexts_aging.forget_older_than(&self.contexts, self.ttl, |seen| seen.at);
        let (evicted_tasks, evicted_contexts) = self.evict();
        let evicted = evicted_tasks + evicted_contexts;
        if evicted > 0 {
            metrics::counter!(EVICTED).increment(evicted as u64);
            tracing::debug!(evicted, max_tasks = self.max_tasks, "task directory full: least recently seen forgotten");
        }
        // The next sweep is asked for when the tasks recorded from here on would pass the limit. The
        // next position is read before the count: a task recorded between the two readings is then
        // both counted and behind the mark (read after, it was counted as room left too, and the
        // directory could stay one over its limit with no sweep asked for).
        let next = self.next_seq.load(Ordering::Relaxed);
        let room = self.max_tasks.saturating_sub(self.tasks.len()) as u64;
        self.full_at_seq.store(next.saturating_add(room), Ordering::Relaxed);
        // Tasks recorded while this sweep ran were checked against no mark: if they left the
        // directory over its limit, the next sweep is asked for now.
        if self.tasks.len() > self.max_tasks {
            self.ask_for_sweep();
        }
        // The indexes hold places of gone tasks only if tasks were forgotten or places left behind:
        // else a walk of every listed task (as many as tasks) would find nothing.
        let left_behind = self.left_behind.swap(0, Ordering::Relaxed);
        if expired + evicted_tasks == 0 && left_behind == 0 {
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
                        .filter(|(seq, id)| self.tasks.get(id).is_none_or(|e| e.seq != *seq))
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

    /// Past `max_tasks` a sweep forgets down to nine tenths of it: finished tasks before live ones,
    /// the least recently seen first, and the owner's list forgets them too.
    #[tokio::test]
    async fn past_max_tasks_a_sweep_forgets_finished_tasks_first_then_the_least_recently_seen() {
        let dir = MemoryDirectory::new(Duration::from_secs(3600)).with_max_tasks(10);
        let echo: Arc<str> = Arc::from("echo");
        for i in 0..8 {
            record(&dir, &echo, &fact(&format!("live{i}"), &format!("c-live{i}"), Some(TaskState::Working)));
        }
        for i in 0..8 {
            record(&dir, &echo, &fact(&format!("done{i}"), &format!("c-done{i}"), Some(TaskState::Completed)));
        }
        dir.sweep();
        assert_eq!(dir.size(), DirectorySize { tasks: 9, contexts: 9 });
        for i in 0..8 {
            assert!(dir.task(&format!("live{i}")).await.unwrap().is_some(), "live{i} is kept");
        }
        assert!(dir.task("done7").await.unwrap().is_some(), "the newest finished task is kept");
        assert!(dir.task("done0").await.unwrap().is_none(), "the oldest finished task is forgotten");
        let listed = dir.tasks_of(None).await.unwrap();
        assert_eq!(listed.len(), 9, "the owner's list holds only what is kept");
        // Contexts have no state: the least recently seen go.
        assert!(dir.context("c-live0").await.unwrap().is_none());
        assert!(dir.context("c-done7").await.unwrap().is_some());
    }

    /// The first task past the limit asks for a sweep at once (the tick may be an hour away); the
    /// sweep sets the next mark from the room it left.
    #[test]
    fn the_first_task_past_the_limit_asks_for_a_sweep() {
        use futures::FutureExt;
        let dir = MemoryDirectory::new(Duration::from_secs(3600)).with_max_tasks(5);
        let asked = |dir: &MemoryDirectory| dir.crowded().unwrap().notified().now_or_never().is_some();
        let echo: Arc<str> = Arc::from("echo");
        for i in 0..5 {
            record(&dir, &echo, &fact(&format!("t{i}"), "c", None));
        }
        assert!(!asked(&dir), "within the limit");
        record(&dir, &echo, &fact("t5", "c", None));
        assert!(asked(&dir), "one past it");
        record(&dir, &echo, &fact("t5", "c", Some(TaskState::Completed)));
        assert!(!asked(&dir), "a task seen again is no new one");
        dir.sweep();
        assert_eq!(dir.size().tasks, 5);
        assert!(!asked(&dir));
        record(&dir, &echo, &fact("t6", "c", None));
        assert!(asked(&dir), "full again");
    }

    /// Tasks recorded while a sweep runs are never left over the limit with no sweep asked for: once
    /// the recording stops, sweeping whenever asked brings the directory within it.
    #[test]
    fn tasks_recorded_during_sweeps_never_leave_the_directory_over_its_limit_unasked() {
        use futures::FutureExt;
        for round in 0..200 {
            let dir = Arc::new(MemoryDirectory::new(Duration::from_secs(3600)).with_max_tasks(5));
            let echo: Arc<str> = Arc::from("echo");
            let recorder = {
                let (dir, echo) = (dir.clone(), echo.clone());
                std::thread::spawn(move || {
                    for i in 0..40 {
                        record(&dir, &echo, &fact(&format!("r{round}-{i}"), "c", None));
                    }
                })
            };
            while !recorder.is_finished() {
                dir.sweep();
            }
            recorder.join().unwrap();
            while dir.crowded().unwrap().notified().now_or_never().is_some() {
                dir.sweep();
            }
            assert!(dir.size().tasks <= 5, "round {round}: {} tasks and no sweep asked for", dir.size().tasks);
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
        // The sixth call runs on the second worker: t0's old place stays in the first's index.
        see("t0", TaskState::Completed);
        assert_eq!(order(), ["t0", "t4", "t3", "t2", "t1"], "moved to the front, listed once");
        dir.sweep();
        let places: usize = dir.by_owner.all().filter_map(|lists| lock(lists).get("alice").map(BTreeMap::len)).sum();
        assert_eq!(places, 5, "the place left on the other worker is tidied");
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
