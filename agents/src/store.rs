//! The in-memory task store of one agent process: every task, the live event channel of each,
//! and the handle of the turn working on it.
//!
//! One mutex guards it all so that applying an event and broadcasting it are a single step:
//! a subscriber that takes a snapshot and a receiver under the lock sees every later event
//! exactly once. The lock is never held across an await.
//!
//! The store is bounded: a finished task gives up its event channel (the bulk of a task's memory:
//! its buffer is allocated whole) and is forgotten after [`StoreLimits::ttl`], or sooner, oldest
//! first, when more than [`StoreLimits::max_tasks`] are kept. Live tasks are never forgotten.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use a2a_model::{Message, StreamResponse, Task, TaskState, TaskStatus, TaskStatusUpdateEvent};
use tokio::sync::broadcast;
use tokio::task::AbortHandle;

use crate::error::A2aError;
use crate::model::agent_text;
use crate::time::now_rfc3339;

/// Events buffered per subscriber; agents emit a handful per turn, so lag means a stuck reader.
const EVENT_BUFFER: usize = 256;

/// A snapshot of a task plus the receiver of everything that happens to it afterwards.
pub struct Subscription {
    pub snapshot: Task,
    pub events: broadcast::Receiver<StreamResponse>,
}

/// The task has reached a terminal state; its agent must stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskClosed;

/// How many finished tasks an agent keeps, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreLimits {
    pub max_tasks: usize,
    pub ttl: Duration,
}

impl Default for StoreLimits {
    fn default() -> Self {
        StoreLimits { max_tasks: 10_000, ttl: Duration::from_secs(3600) }
    }
}

/// Creations between two sweeps for expired tasks (a full store sweeps at once).
const SWEEP_EVERY: u64 = 256;

#[derive(Default)]
pub struct TaskStore {
    inner: Mutex<Inner>,
    limits: StoreLimits,
}

#[derive(Default)]
struct Inner {
    tasks: HashMap<String, Slot>,
    /// Creation counter: orders ListTasks (newest first) and makes its page tokens.
    next_seq: u64,
}

struct Slot {
    seq: u64,
    task: Task,
    /// Dropped once the task is finished: nothing follows, and its buffer is most of the memory.
    events: Option<broadcast::Sender<StreamResponse>>,
    turn: Option<AbortHandle>,
    finished: Option<Instant>,
}

impl Slot {
    fn subscription(&self) -> Subscription {
        let events = match &self.events {
            Some(events) => events.subscribe(),
            // A finished task: a receiver that ends at once.
            None => broadcast::channel(1).1,
        };
        Subscription { snapshot: self.task.clone(), events }
    }

    /// Sends `event` to the task's subscribers; a terminal state closes the channel after it.
    fn broadcast(&mut self, event: StreamResponse) {
        if let Some(events) = &self.events {
            // No receiver is fine: nobody is watching this task right now.
            let _ = events.send(event);
        }
        if self.task.status.state.is_terminal() {
            self.events = None;
            self.finished.get_or_insert_with(Instant::now);
        }
    }
}

impl TaskStore {
    pub fn new(limits: StoreLimits) -> TaskStore {
        TaskStore { inner: Mutex::default(), limits }
    }

    /// Tasks kept (live and finished).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().tasks.len()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic elsewhere cannot leave a half-applied event (updates are single assignments),
        // so a poisoned lock is still safe to use.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stores a new task and subscribes to it before any agent event can be published.
    pub fn create(&self, task: Task) -> Subscription {
        let mut inner = self.lock();
        if inner.tasks.len() >= self.limits.max_tasks || inner.next_seq.is_multiple_of(SWEEP_EVERY) {
            inner.forget_finished(self.limits);
        }
        let seq = inner.next_seq;
        inner.next_seq += 1;
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        let slot = Slot { seq, task, events: Some(events), turn: None, finished: None };
        let subscription = slot.subscription();
        inner.tasks.insert(slot.task.id.clone(), slot);
        subscription
    }

    /// Adds the caller's follow-up to a task waiting for input and subscribes to it.
    pub fn continue_with(&self, task_id: &str, mut message: Message) -> Result<Subscription, A2aError> {
        let mut inner = self.lock();
        let slot = inner.tasks.get_mut(task_id).ok_or(A2aError::TaskNotFound)?;
        let task = &mut slot.task;
        let state = task.status.state;
        if state.is_terminal() {
            return Err(A2aError::InvalidParams(format!("Task {task_id} is in terminal state: {}", state.as_str())));
        }
        if !state.is_interrupted() {
            return Err(A2aError::UnsupportedOperation(format!(
                "Task {task_id} is still running ({}); wait for it or cancel it",
                state.as_str()
            )));
        }
        if message.context_id.as_deref().is_some_and(|id| !id.is_empty() && id != task.context_id) {
            return Err(A2aError::InvalidParams(format!(
                "message.contextId does not match the context of task {task_id}"
            )));
        }
        message.context_id = Some(task.context_id.clone());
        message.task_id = Some(task.id.clone());
        // The agent's question moves into the history ahead of the answer, as in the SDK.
        if let Some(question) = task.status.message.take() {
            task.history.push(question);
        }
        task.history.push(message);
        Ok(slot.subscription())
    }

    /// A snapshot and live events of a task that can still change.
    pub fn subscribe(&self, task_id: &str) -> Result<Subscription, A2aError> {
        let inner = self.lock();
        let slot = inner.tasks.get(task_id).ok_or(A2aError::TaskNotFound)?;
        let state = slot.task.status.state;
        if state.is_terminal() {
            return Err(A2aError::InvalidParams(format!("Task {task_id} is in terminal state: {}", state.as_str())));
        }
        Ok(slot.subscription())
    }

    pub fn get(&self, task_id: &str) -> Option<Task> {
        self.lock().tasks.get(task_id).map(|slot| slot.task.clone())
    }

    /// Every task with its creation number, newest first.
    pub fn all_newest_first(&self) -> Vec<(u64, Task)> {
        let inner = self.lock();
        let mut all: Vec<_> = inner.tasks.values().map(|slot| (slot.seq, slot.task.clone())).collect();
        all.sort_by_key(|(seq, _)| std::cmp::Reverse(*seq));
        all
    }

    /// Applies an agent event to its task and sends it to the task's subscribers.
    /// Refused once the task is terminal, so nothing follows a cancel.
    pub fn publish(&self, task_id: &str, event: StreamResponse) -> Result<(), TaskClosed> {
        let mut inner = self.lock();
        let slot = inner.tasks.get_mut(task_id).ok_or(TaskClosed)?;
        if slot.task.status.state.is_terminal() {
            return Err(TaskClosed);
        }
        apply(&mut slot.task, &event);
        slot.broadcast(event);
        Ok(())
    }

    /// Remembers the turn working on a task so that a cancel can stop it.
    pub fn attach_turn(&self, task_id: &str, turn: AbortHandle) {
        let mut inner = self.lock();
        match inner.tasks.get_mut(task_id) {
            // A cancel got in between spawning and attaching: stop the turn at once.
            Some(slot) if slot.task.status.state.is_terminal() => turn.abort(),
            Some(slot) => slot.turn = Some(turn),
            None => turn.abort(),
        }
    }

    /// Cancels a task that is not terminal yet: stops its turn, then publishes the canceled
    /// status, with an agent message saying `text`, to the task and its subscribers.
    pub fn cancel(&self, task_id: &str, text: &str) -> Result<Task, A2aError> {
        let mut inner = self.lock();
        let slot = inner.tasks.get_mut(task_id).ok_or(A2aError::TaskNotFound)?;
        if slot.task.status.state.is_terminal() {
            return Err(A2aError::TaskNotCancelable);
        }
        if let Some(turn) = slot.turn.take() {
            turn.abort();
        }
        let (id, context_id) = (slot.task.id.clone(), slot.task.context_id.clone());
        let event = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            status: TaskStatus {
                state: TaskState::Canceled,
                message: Some(agent_text(&id, &context_id, text)),
                timestamp: Some(now_rfc3339()),
            },
            task_id: id,
            context_id,
            metadata: None,
        });
        apply(&mut slot.task, &event);
        slot.broadcast(event);
        Ok(slot.task.clone())
    }

    /// Stops every running turn (server shutdown).
    pub fn abort_all(&self) {
        let mut inner = self.lock();
        for slot in inner.tasks.values_mut() {
            if let Some(turn) = slot.turn.take() {
                turn.abort();
            }
        }
    }
}

impl Inner {
    /// Forgets finished tasks past their time, then the oldest finished ones while the store is
    /// over its bound.
    fn forget_finished(&mut self, limits: StoreLimits) {
        self.tasks.retain(|_, slot| slot.finished.is_none_or(|at| at.elapsed() < limits.ttl));
        let excess = (self.tasks.len() + 1).saturating_sub(limits.max_tasks);
        if excess == 0 {
            return;
        }
        let mut finished: Vec<(u64, String)> =
            self.tasks.iter().filter(|(_, s)| s.finished.is_some()).map(|(id, s)| (s.seq, id.clone())).collect();
        finished.sort_unstable();
        for (_, id) in finished.into_iter().take(excess) {
            self.tasks.remove(&id);
        }
    }
}

/// How an event changes a task, following the SDK's task manager.
fn apply(task: &mut Task, event: &StreamResponse) {
    match event {
        StreamResponse::StatusUpdate(update) => {
            // The previous status message becomes history when a new status replaces it.
            if let Some(previous) = task.status.message.take() {
                task.history.push(previous);
            }
            task.status = update.status.clone();
        }
        StreamResponse::ArtifactUpdate(update) => {
            let existing =
                task.artifacts.iter_mut().find(|artifact| artifact.artifact_id == update.artifact.artifact_id);
            match existing {
                Some(artifact) if update.append => {
                    artifact.parts.extend(update.artifact.parts.iter().cloned());
                }
                Some(artifact) => *artifact = update.artifact.clone(),
                None => task.artifacts.push(update.artifact.clone()),
            }
        }
        StreamResponse::Task(snapshot) => *task = snapshot.clone(),
        StreamResponse::Message(message) => task.history.push(message.clone()),
    }
}

#[cfg(test)]
mod tests;
