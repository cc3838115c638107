//! Streams between the early dialect, where every SSE event is the whole Task, and 1.0, where a stream
//! is a first Task snapshot followed by status and artifact updates. Both directions need state, so
//! each is a small converter fed one event at a time:
//!
//! - [`SnapshotDiffer`] (early agent → 1.0 caller) diffs successive snapshots into a `task` event
//!   (first snapshot of a new task), `artifactUpdate`s (a new artifact, or an old one whose parts grew
//!   — sent with `append: true` and only the new parts — or changed) and a `statusUpdate` when the
//!   status changed, in that order. History growth alone is not an event in 1.0, so it is not sent.
//! - [`SnapshotBuilder`] (1.0 agent → early caller) applies events to a task the way the SDK's task
//!   manager does (a replaced status message moves into the history; `append` extends an artifact) and
//!   yields the whole task after each one, as a borrowed view written straight to JSON.
//!
//! Both stop at the first terminal or interrupted state: later events are dropped, and
//! `is_finished` tells the relay the stream is complete (a stream that ends before that was cut).

use super::view::TaskView;
use super::{Artifact, Task};
use a2a_model::{self as model, StreamResponse, TaskArtifactUpdateEvent, TaskStatusUpdateEvent};

/// Early agent → 1.0 caller: whole-Task events in, 1.0 stream events out.
#[derive(Debug, Default)]
pub struct SnapshotDiffer {
    previous: Option<Task>,
    /// The next snapshot is sent whole, as the `task` event a new 1.0 stream starts with.
    snapshot_first: bool,
    finished: bool,
}

impl SnapshotDiffer {
    /// For the stream of a new task (`POST /tasks/sendSubscribe`).
    pub fn new() -> SnapshotDiffer {
        SnapshotDiffer { previous: None, snapshot_first: true, finished: false }
    }

    /// For a follow-up on an existing task (a 1.0 stream then starts with updates, no snapshot):
    /// `previous` is the task as last seen, if known; without it everything in the first snapshot is
    /// sent as updates.
    pub fn continuing(previous: Option<Task>) -> SnapshotDiffer {
        SnapshotDiffer { previous, snapshot_first: false, finished: false }
    }

    /// Whether a terminal or interrupted state has been sent.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// The 1.0 events that take a caller from the previous snapshot to `task`.
    pub fn push(&mut self, task: Task) -> Vec<StreamResponse> {
        if self.finished {
            return Vec::new();
        }
        let state = task.status.state;
        self.finished = state.ends_stream();
        if std::mem::take(&mut self.snapshot_first) {
            let event = StreamResponse::Task(task.clone().into_v1());
            self.previous = Some(task);
            return vec![event];
        }
        let context_id = task.session_id.clone().unwrap_or_else(|| task.id.clone());
        let mut events = Vec::new();
        let old_artifacts = self.previous.as_ref().map_or(&[][..], |p| p.artifacts.as_slice());
        for (position, artifact) in task.artifacts.iter().enumerate() {
            if let Some((artifact, append)) = changed_artifact(old_artifacts.get(position), artifact) {
                events.push(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                    task_id: task.id.clone(),
                    context_id: context_id.clone(),
                    last_chunk: artifact.last_chunk.unwrap_or(state.ends_stream()),
                    artifact: artifact.into_v1(position),
                    append,
                    metadata: None,
                }));
            }
        }
        if self.previous.as_ref().is_none_or(|p| p.status != task.status) {
            let (id, context) = (Some(task.id.as_str()), Some(context_id.as_str()));
            let status = model::TaskStatus {
                state,
                message: task.status.message.clone().map(|m| m.into_v1(id, context)),
                timestamp: task.status.timestamp.clone(),
            };
            events.push(StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id: task.id.clone(),
                context_id,
                status,
                metadata: None,
            }));
        }
        self.previous = Some(task);
        events
    }
}

/// What to send for an artifact: nothing when unchanged, the new parts (append) when only parts were
/// added at the end, the whole artifact otherwise.
fn changed_artifact(old: Option<&Artifact>, new: &Artifact) -> Option<(Artifact, bool)> {
    let Some(old) = old else { return Some((new.clone(), false)) };
    if old == new {
        return None;
    }
    let same_head = old.name == new.name && old.description == new.description && old.metadata == new.metadata;
    if same_head && new.parts.len() > old.parts.len() && new.parts.starts_with(&old.parts) {
        let chunk = Artifact { parts: new.parts[old.parts.len()..].to_vec(), ..head_of(new) };
        return Some((chunk, true));
    }
    Some((new.clone(), false))
}

/// The artifact without its parts (they are what a chunk replaces).
fn head_of(artifact: &Artifact) -> Artifact {
    Artifact {
        name: artifact.name.clone(),
        description: artifact.description.clone(),
        parts: Vec::new(),
        metadata: artifact.metadata.clone(),
        index: artifact.index,
        last_chunk: artifact.last_chunk,
    }
}

/// 1.0 agent → early caller: 1.0 stream events in, whole early Tasks out.
#[derive(Debug)]
pub struct SnapshotBuilder {
    early_id: String,
    task: model::Task,
    finished: bool,
}

impl SnapshotBuilder {
    /// For a stream the caller knows as task `early_id` (the agent's ids are not shown to it).
    pub fn new(early_id: impl Into<String>) -> SnapshotBuilder {
        SnapshotBuilder::continuing(early_id, None)
    }

    /// For a follow-up: `previous` is the task as last seen (events then update it), if known.
    pub fn continuing(early_id: impl Into<String>, previous: Option<model::Task>) -> SnapshotBuilder {
        SnapshotBuilder { early_id: early_id.into(), task: previous.unwrap_or_default(), finished: false }
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// The task as accumulated so far, in 1.0 form (its ids the agent's).
    pub fn task(&self) -> &model::Task {
        &self.task
    }

    /// The task as the early caller sees it now.
    pub fn snapshot(&self) -> TaskView<'_> {
        TaskView { task: &self.task, id: &self.early_id }
    }

    /// Applies one event; returns the whole task to send, or `None` once the stream is finished.
    pub fn push(&mut self, event: StreamResponse) -> Option<TaskView<'_>> {
        if self.finished {
            return None;
        }
        self.finished = event.ends_stream();
        match event {
            StreamResponse::Task(task) => self.task = task,
            StreamResponse::Message(message) => {
                if self.task.id.is_empty() && self.task.history.is_empty() {
                    // A bare message answer: a task that is complete with it.
                    self.task.context_id = message.context_id.clone().unwrap_or_default();
                    self.task.status = model::TaskStatus {
                        state: model::TaskState::Completed,
                        message: Some(message),
                        timestamp: None,
                    };
                } else {
                    self.task.history.push(message);
                }
            }
            StreamResponse::StatusUpdate(update) => {
                self.adopt_ids(&update.task_id, &update.context_id);
                if let Some(previous) = self.task.status.message.take() {
                    self.task.history.push(previous);
                }
                self.task.status = update.status;
            }
            StreamResponse::ArtifactUpdate(update) => {
                self.adopt_ids(&update.task_id, &update.context_id);
                let artifacts = &mut self.task.artifacts;
                let existing = artifacts.iter_mut().find(|a| a.artifact_id == update.artifact.artifact_id);
                match (existing, update.append) {
                    (Some(artifact), true) => artifact.parts.extend(update.artifact.parts),
                    (Some(artifact), false) => *artifact = update.artifact,
                    (None, _) => artifacts.push(update.artifact),
                }
            }
        }
        Some(self.snapshot())
    }

    /// Ends the stream with the task failed, for an agent that broke off (the early dialect has no error
    /// event: a caller learns it from a last whole task). `None` when the stream had already ended.
    pub fn fail(&mut self, reason: &str) -> Option<TaskView<'_>> {
        if self.finished {
            return None;
        }
        self.finished = true;
        if let Some(previous) = self.task.status.message.take() {
            self.task.history.push(previous);
        }
        let message =
            model::Message { role: model::Role::Agent, parts: vec![model::Part::text(reason)], ..Default::default() };
        self.task.status =
            model::TaskStatus { state: model::TaskState::Failed, message: Some(message), timestamp: None };
        Some(self.snapshot())
    }

    /// Updates may arrive before any snapshot (a follow-up stream); they name the task.
    fn adopt_ids(&mut self, task_id: &str, context_id: &str) {
        if self.task.id.is_empty() {
            task_id.clone_into(&mut self.task.id);
        }
        if self.task.context_id.is_empty() {
            context_id.clone_into(&mut self.task.context_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const ID: &str = "6b0f3c52-5a55-4a7e-9d1b-0c8f2e4a9b10";

    fn early(v: Value) -> Task {
        serde_json::from_value(v).expect("early task")
    }

    fn snapshot(state: &str, artifacts: Value) -> Task {
        early(json!({"id": ID, "sessionId": "s", "status": {"state": state,
            "message": {"role": "agent", "parts": [{"type": "text", "text": state}]}}, "artifacts": artifacts}))
    }

    fn kinds(events: &[StreamResponse]) -> Vec<&'static str> {
        events
            .iter()
            .map(|e| match e {
                StreamResponse::Task(_) => "task",
                StreamResponse::Message(_) => "message",
                StreamResponse::StatusUpdate(_) => "status",
                StreamResponse::ArtifactUpdate(u) if u.append => "append",
                StreamResponse::ArtifactUpdate(_) => "artifact",
            })
            .collect()
    }

    #[test]
    fn snapshots_become_a_task_then_updates() {
        let mut differ = SnapshotDiffer::new();
        assert_eq!(kinds(&differ.push(snapshot("submitted", json!([])))), ["task"]);
        assert_eq!(kinds(&differ.push(snapshot("working", json!([])))), ["status"]);
        assert!(differ.push(snapshot("working", json!([]))).is_empty(), "nothing changed");
        let one = json!([{"name": "out", "parts": [{"type": "text", "text": "a"}]}]);
        let events = differ.push(snapshot("working", one));
        assert_eq!(kinds(&events), ["artifact"]);
        let two = json!([{"name": "out", "parts": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]);
        let events = differ.push(snapshot("completed", two));
        assert_eq!(kinds(&events), ["append", "status"]);
        let StreamResponse::ArtifactUpdate(chunk) = &events[0] else { panic!("artifact first") };
        assert_eq!(chunk.artifact.parts, [model::Part::text("b")]);
        assert_eq!(chunk.artifact.artifact_id, "artifact-0");
        assert!(chunk.last_chunk, "the task is done");
        assert_eq!((chunk.task_id.as_str(), chunk.context_id.as_str()), (ID, "s"));
        assert!(differ.is_finished());
        assert!(differ.push(snapshot("working", json!([]))).is_empty(), "nothing after the end");
    }

    #[test]
    fn a_changed_artifact_is_sent_whole() {
        let mut differ = SnapshotDiffer::continuing(Some(snapshot(
            "working",
            json!([{"name": "out", "parts": [{"type": "text", "text": "draft"}]}]),
        )));
        let events =
            differ.push(snapshot("working", json!([{"name": "out", "parts": [{"type": "text", "text": "final"}]}])));
        assert_eq!(kinds(&events), ["artifact"]);
        let mut fresh = SnapshotDiffer::continuing(None);
        assert_eq!(kinds(&fresh.push(snapshot("input-required", json!([{"parts": []}])))), ["artifact", "status"]);
        assert!(fresh.is_finished(), "input-required ends a stream");
    }

    fn status(state: model::TaskState, text: &str) -> StreamResponse {
        StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "server".into(),
            context_id: "ctx".into(),
            status: model::TaskStatus {
                state,
                message: Some(model::Message {
                    role: model::Role::Agent,
                    parts: vec![model::Part::text(text)],
                    ..Default::default()
                }),
                timestamp: None,
            },
            metadata: None,
        })
    }

    #[test]
    fn events_accumulate_into_whole_tasks() {
        let mut builder = SnapshotBuilder::new(ID);
        let first = model::Task { id: "server".into(), context_id: "ctx".into(), ..Default::default() };
        let json = |view: Option<TaskView<'_>>| serde_json::to_value(view.expect("a snapshot")).expect("json");
        let v = json(builder.push(StreamResponse::Task(first)));
        assert_eq!(v, json!({"id": ID, "sessionId": "ctx", "status": {"state": "unknown"}, "artifacts": []}));
        json(builder.push(status(model::TaskState::Working, "step 1")));
        let chunk = |append, text: &str| {
            StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                artifact: model::Artifact {
                    artifact_id: "a".into(),
                    parts: vec![model::Part::text(text)],
                    ..Default::default()
                },
                append,
                ..Default::default()
            })
        };
        json(builder.push(chunk(false, "x")));
        json(builder.push(chunk(true, "y")));
        let v = json(builder.push(status(model::TaskState::Completed, "done")));
        assert_eq!(
            v["status"],
            json!({"state": "completed", "message": {"role": "agent", "parts": [{"type": "text", "text": "done"}]}})
        );
        assert_eq!(v["history"][0]["parts"][0]["text"], "step 1", "the replaced status message moved into history");
        assert_eq!(v["artifacts"][0]["parts"].as_array().map(Vec::len), Some(2));
        assert!(builder.is_finished());
        assert!(builder.push(status(model::TaskState::Working, "late")).is_none());
    }

    #[test]
    fn a_follow_up_stream_starts_without_a_snapshot() {
        let mut builder = SnapshotBuilder::continuing(ID, None);
        let v = serde_json::to_value(builder.push(status(model::TaskState::InputRequired, "which?"))).expect("json");
        assert_eq!(v["id"], ID);
        assert_eq!(v["status"]["state"], "input-required");
        assert_eq!(builder.task().id, "server");
        assert!(builder.is_finished());
    }

    #[test]
    fn a_broken_stream_ends_with_a_failed_task() {
        let mut builder = SnapshotBuilder::new(ID);
        builder.push(status(model::TaskState::Working, "step 1"));
        let v = serde_json::to_value(builder.fail("the agent went away")).expect("json");
        assert_eq!(v["status"]["state"], "failed");
        assert_eq!(v["status"]["message"]["parts"][0]["text"], "the agent went away");
        assert_eq!(v["history"][0]["parts"][0]["text"], "step 1");
        assert!(builder.is_finished() && builder.fail("again").is_none());
    }

    #[test]
    fn a_bare_message_becomes_a_completed_task() {
        let mut builder = SnapshotBuilder::new(ID);
        let message =
            model::Message { context_id: Some("c".into()), parts: vec![model::Part::text("hi")], ..Default::default() };
        let v = serde_json::to_value(builder.push(StreamResponse::Message(message))).expect("json");
        assert_eq!(v["status"]["state"], "completed");
        assert_eq!(v["sessionId"], "c");
        assert!(builder.is_finished());
    }
}
