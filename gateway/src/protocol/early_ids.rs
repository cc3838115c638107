//! Early-dialect callers name their tasks themselves (a UUID in the first send); agents choose
//! their own ids. This map remembers, per caller id, the agent's task (id and context), so the caller
//! keeps using its own id for get, cancel and continue while everything inside the gateway — routing,
//! task isolation, the directory, policies — works on the agent's id.
//!
//! Ids are scoped by owner (the caller or tenant that owns the task): two callers may use the same
//! UUID, and whether an id is taken is never visible across owners.
//!
//! Entries live as long as the task directory's, and at most as many (`routing.max_tasks`): the
//! directory's sweep drops older ones, and each id made past the limit forgets the oldest.
//! A trait, so that replicas can share the map: [`MemoryEarlyIds`] serves one process,
//! [`crate::state::redis_early_ids`] several.

use std::time::{Duration, Instant};

use futures::future::{BoxFuture, FutureExt};

use crate::bounded_map::{BoundedMap, Spared};
use crate::evict::Aging;
use crate::store_error::Lookup;

/// The agent's task an early caller's id stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentTask {
    pub task_id: String,
    pub context_id: Option<String>,
}

struct Entry {
    task: AgentTask,
    at: Instant,
}

impl Spared for Entry {}

/// Early callers' ids by owner scope. Reads fail only when a shared store could not be reached.
pub trait EarlyIds: Send + Sync + 'static {
    /// The agent's task that `early_id` stands for, among the ids of `scope` (an owner key).
    fn get(&self, scope: &str, early_id: &str) -> BoxFuture<'_, Lookup<Option<AgentTask>>>;
    /// Whether `early_id` already names a task of `scope` (a new task may not reuse it).
    fn contains(&self, scope: &str, early_id: &str) -> BoxFuture<'_, Lookup<bool>>;
    /// Remembers that `early_id` of `scope` is the agent's `task`; a second claim keeps the first.
    /// Never waits: implementations with I/O queue it.
    fn insert(&self, scope: &str, early_id: &str, task: AgentTask);
    /// Forgets what has expired. Walks every id: called with the task directory's sweep, off the
    /// runtime's workers, never on a call's path.
    fn sweep(&self);
}

pub struct MemoryEarlyIds {
    map: BoundedMap<Entry>,
    /// When the ids may next reach `ttl`.
    ages: Aging,
    ttl: Duration,
}

impl MemoryEarlyIds {
    pub fn new(ttl: Duration) -> MemoryEarlyIds {
        MemoryEarlyIds { map: BoundedMap::new(None), ages: Aging::default(), ttl }
    }

    /// Keeps at most `max` ids (the task directory's limit: an id outliving its task is no use).
    pub fn with_max(mut self, max: usize) -> MemoryEarlyIds {
        self.map = BoundedMap::new(Some(max));
        self
    }

    /// How many ids are held (expired ones among them until a sweep).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The entry of `early_id` of `scope`, read now.
    pub fn find(&self, scope: &str, early_id: &str) -> Option<AgentTask> {
        self.map.get(&key(scope, early_id), |e| (e.at.elapsed() < self.ttl).then(|| e.task.clone())).flatten()
    }
}

impl EarlyIds for MemoryEarlyIds {
    fn get(&self, scope: &str, early_id: &str) -> BoxFuture<'_, Lookup<Option<AgentTask>>> {
        futures::future::ready(Ok(self.find(scope, early_id))).boxed()
    }

    fn contains(&self, scope: &str, early_id: &str) -> BoxFuture<'_, Lookup<bool>> {
        futures::future::ready(Ok(self.find(scope, early_id).is_some())).boxed()
    }

    fn insert(&self, scope: &str, early_id: &str, task: AgentTask) {
        if task.task_id.is_empty() {
            return;
        }
        // A second claim keeps the first; what the first made room with is dropped here.
        let _ = self.map.upsert(&key(scope, early_id), || Entry { task, at: Instant::now() }, |_, _| ());
    }

    fn sweep(&self) {
        self.ages.forget_older_than(self.ttl, |young| self.map.retain(|e| young(e.at), drop));
    }
}

/// Owner keys never contain a line break (they come from checked identities).
pub(crate) fn key(scope: &str, early_id: &str) -> String {
    format!("{scope}\n{early_id}")
}

/// Response extension set by routing: the owner scope an early caller's ids belong to.
#[derive(Debug, Clone)]
pub struct EarlyScope(pub std::sync::Arc<str>);

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str) -> AgentTask {
        AgentTask { task_id: id.into(), context_id: Some("c".into()) }
    }

    #[test]
    fn past_the_limit_each_new_id_forgets_the_oldest() {
        let ids = MemoryEarlyIds::new(Duration::from_secs(60)).with_max(100);
        for i in 0..1000 {
            ids.insert("alice", &format!("e{i}"), task(&format!("a{i}")));
            assert!(ids.map.len() <= 100, "{}", ids.map.len());
        }
        assert!(ids.find("alice", "e999").is_some(), "the newest is kept");
        assert!(ids.find("alice", "e0").is_none(), "the oldest is forgotten");
    }

    #[tokio::test]
    async fn maps_caller_ids_to_agent_tasks_and_keeps_the_first_claim() {
        let ids = MemoryEarlyIds::new(Duration::from_secs(60));
        assert!(!ids.contains("alice", "e1").await.unwrap());
        ids.insert("alice", "e1", task("a1"));
        ids.insert("alice", "e1", task("a2"));
        assert_eq!(ids.get("alice", "e1").await.unwrap(), Some(task("a1")));
        assert_eq!(ids.get("bob", "e1").await.unwrap(), None, "another owner's id is not visible");
        ids.insert("bob", "e1", task("b1"));
        assert_eq!(ids.get("bob", "e1").await.unwrap(), Some(task("b1")));
        ids.insert("alice", "e2", AgentTask { task_id: String::new(), context_id: None });
        assert!(!ids.contains("alice", "e2").await.unwrap(), "an answer without a task id names nothing");
    }

    #[test]
    fn entries_expire() {
        let ids = MemoryEarlyIds::new(Duration::ZERO);
        ids.insert("", "e1", task("a1"));
        assert_eq!(ids.find("", "e1"), None);
    }
}
