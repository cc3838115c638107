//! One turn of an agent on a task: the background job that runs a behaviour, the [`Updater`]
//! it publishes through, and the guarantee that every turn leaves its task at rest (terminal or
//! waiting for input) even when the behaviour panics or forgets to finish.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use a2a_model::{
    Artifact, Message, Part, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState, TaskStatus,
    TaskStatusUpdateEvent,
};
use futures::FutureExt;
use futures::future::BoxFuture;

use crate::model::{agent_text, new_id};
use crate::store::{TaskClosed, TaskStore};
use crate::time::now_rfc3339;

/// What a behaviour sees of the task it works on.
pub struct TurnInput {
    /// The task as it was when the turn started, the triggering message last in its history.
    pub task: Task,
    /// The caller's message that started this turn.
    pub message: Message,
}

/// Publishes a turn's status and artifact updates to the task store.
pub struct Updater {
    store: Arc<TaskStore>,
    task_id: String,
    context_id: String,
    last_state: Option<TaskState>,
}

impl Updater {
    fn new(store: Arc<TaskStore>, task: &Task) -> Self {
        Self { store, task_id: task.id.clone(), context_id: task.context_id.clone(), last_state: None }
    }

    /// Moves the task to `state`, with an agent message saying `text` when given.
    pub fn status(&mut self, state: TaskState, text: Option<&str>) -> Result<(), TaskClosed> {
        let message = text.map(|text| agent_text(&self.task_id, &self.context_id, text));
        let event = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: self.task_id.clone(),
            context_id: self.context_id.clone(),
            status: TaskStatus { state, message, timestamp: Some(now_rfc3339()) },
            metadata: None,
        });
        self.store.publish(&self.task_id, event)?;
        self.last_state = Some(state);
        Ok(())
    }

    /// Publishes a complete new artifact.
    pub fn artifact(&mut self, name: &str, parts: Vec<Part>) -> Result<(), TaskClosed> {
        let event = StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: self.task_id.clone(),
            context_id: self.context_id.clone(),
            artifact: Artifact {
                artifact_id: new_id(),
                name: Some(name.to_owned()),
                description: None,
                parts,
                metadata: None,
                extensions: Vec::new(),
            },
            append: false,
            last_chunk: true,
            metadata: None,
        });
        self.store.publish(&self.task_id, event)
    }

    /// Whether this turn left the task terminal or waiting for the caller.
    fn at_rest(&self) -> bool {
        self.last_state.is_some_and(|state| state.is_terminal() || state.is_interrupted())
    }
}

/// What a turn runs (an agent's behaviour); returns early with [`TaskClosed`] when the task was
/// canceled meanwhile.
pub trait Work: Send + Sync + 'static {
    fn run<'a>(&'a self, input: &'a TurnInput, updater: &'a mut Updater) -> BoxFuture<'a, Result<(), TaskClosed>>;
}

/// Starts `behaviour` on a task in the background; the store keeps the handle so that a cancel
/// can stop it.
pub fn spawn(store: Arc<TaskStore>, behaviour: Arc<impl Work>, input: TurnInput) {
    let task_id = input.task.id.clone();
    let mut updater = Updater::new(Arc::clone(&store), &input.task);
    let job = tokio::spawn(async move {
        let outcome = AssertUnwindSafe(behaviour.run(&input, &mut updater)).catch_unwind().await;
        let reason = match outcome {
            // Canceled: the canceled status is already published.
            Ok(Err(TaskClosed)) => return,
            Ok(Ok(())) if updater.at_rest() => return,
            Ok(Ok(())) => "the agent stopped without finishing the task",
            Err(_) => "the agent failed unexpectedly",
        };
        tracing::warn!(task_id = %input.task.id, reason, "turn ended without a final state");
        // Without this a blocking SendMessage would wait forever.
        let _ = updater.status(TaskState::Failed, Some(reason));
    });
    store.attach_turn(&task_id, job.abort_handle());
}
