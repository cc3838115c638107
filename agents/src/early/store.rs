//! The early agent's tasks, keyed by the client's id. One mutex guards the map; it is never held
//! across an await (turns are computed synchronously).

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::model::Task;

/// Oldest tasks are forgotten past this, so a long demo run cannot grow without bound.
const MAX_TASKS: usize = 10_000;

/// A task and the skill working on it.
#[derive(Debug, Clone)]
pub struct Stored {
    pub task: Task,
    pub skill: &'static str,
    seq: u64,
}

#[derive(Default)]
pub struct EarlyStore {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    tasks: HashMap<String, Stored>,
    next_seq: u64,
}

/// The client reused a task id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Duplicate;

impl EarlyStore {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Updates are whole assignments, so a panic elsewhere cannot leave a task half-written.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stores a new task, refusing an id already in use.
    pub fn create(&self, task: Task, skill: &'static str) -> Result<(), Duplicate> {
        let mut inner = self.lock();
        if inner.tasks.len() >= MAX_TASKS {
            let oldest = inner.tasks.iter().min_by_key(|(_, s)| s.seq).map(|(id, _)| id.clone());
            if let Some(oldest) = oldest {
                inner.tasks.remove(&oldest);
            }
        }
        let seq = inner.next_seq;
        inner.next_seq += 1;
        match inner.tasks.entry(task.id.clone()) {
            Entry::Occupied(_) => Err(Duplicate),
            Entry::Vacant(slot) => {
                slot.insert(Stored { task, skill, seq });
                Ok(())
            }
        }
    }

    pub fn get(&self, id: &str) -> Option<Stored> {
        self.lock().tasks.get(id).cloned()
    }

    /// Changes a task in place; `None` when there is no such task.
    pub fn update<R>(&self, id: &str, change: impl FnOnce(&mut Stored) -> R) -> Option<R> {
        self.lock().tasks.get_mut(id).map(change)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::early::model::{TaskState, TaskStatus};

    fn task(id: &str) -> Task {
        Task {
            id: id.into(),
            session_id: None,
            status: TaskStatus { state: TaskState::Submitted, message: None, timestamp: String::new() },
            artifacts: vec![],
            history: vec![],
            metadata: None,
        }
    }

    #[test]
    fn ids_are_used_once() {
        let store = EarlyStore::default();
        assert_eq!(store.create(task("a"), "s"), Ok(()));
        assert_eq!(store.create(task("a"), "s"), Err(Duplicate));
        let state = store.update("a", |s| {
            s.task.status.state = TaskState::Working;
            s.task.status.state
        });
        assert_eq!(state, Some(TaskState::Working));
        assert_eq!(store.get("a").map(|s| s.task.status.state), Some(TaskState::Working));
        assert!(store.update("b", |_| ()).is_none());
    }
}
