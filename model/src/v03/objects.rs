//! A2A 0.3 objects as its JSON-RPC binding writes them (the SDK's pydantic models): a `kind` on every
//! object, `final` on status updates — and their conversions to and from the internal model.
//!
//! Not carried from 0.3 to 1.0: `final` (1.0 streams end on the state itself). Parts and enums: see
//! [`super::parts`] and [`super::enums`].

use serde::{Deserialize, Serialize};

use super::enums::{ArtifactUpdateKind, MessageKind, Role, StatusUpdateKind, TaskKind, TaskState};
use super::parts::Part;
use crate as model;
use crate::{Struct, empty_as_none, null_as_empty};

/// A message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    #[serde(default)]
    pub kind: MessageKind,
    #[serde(default)]
    #[serde(alias = "message_id")]
    pub message_id: String,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    #[serde(alias = "context_id")]
    pub context_id: Option<String>,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    #[serde(alias = "task_id")]
    pub task_id: Option<String>,
    pub role: Role,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    #[serde(alias = "reference_task_ids")]
    pub reference_task_ids: Vec<String>,
}

impl From<model::Message> for Message {
    fn from(m: model::Message) -> Message {
        Message {
            kind: MessageKind,
            message_id: m.message_id,
            context_id: m.context_id,
            task_id: m.task_id,
            role: m.role.into(),
            parts: m.parts.into_iter().map(Part::from).collect(),
            metadata: m.metadata,
            extensions: m.extensions,
            reference_task_ids: m.reference_task_ids,
        }
    }
}

impl From<Message> for model::Message {
    fn from(m: Message) -> model::Message {
        model::Message {
            message_id: m.message_id,
            context_id: m.context_id,
            task_id: m.task_id,
            role: m.role.into(),
            parts: m.parts.into_iter().map(model::Part::from).collect(),
            metadata: m.metadata,
            extensions: m.extensions,
            reference_task_ids: m.reference_task_ids,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskStatus {
    pub state: TaskState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

impl From<model::TaskStatus> for TaskStatus {
    fn from(s: model::TaskStatus) -> TaskStatus {
        TaskStatus { state: s.state.into(), message: s.message.map(Message::from), timestamp: s.timestamp }
    }
}

impl From<TaskStatus> for model::TaskStatus {
    fn from(s: TaskStatus) -> model::TaskStatus {
        model::TaskStatus {
            state: s.state.into(),
            message: s.message.map(model::Message::from),
            timestamp: s.timestamp,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    #[serde(default)]
    #[serde(alias = "artifact_id")]
    pub artifact_id: String,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

impl From<model::Artifact> for Artifact {
    fn from(a: model::Artifact) -> Artifact {
        Artifact {
            artifact_id: a.artifact_id,
            name: a.name,
            description: a.description,
            parts: a.parts.into_iter().map(Part::from).collect(),
            metadata: a.metadata,
            extensions: a.extensions,
        }
    }
}

impl From<Artifact> for model::Artifact {
    fn from(a: Artifact) -> model::Artifact {
        model::Artifact {
            artifact_id: a.artifact_id,
            name: a.name,
            description: a.description,
            parts: a.parts.into_iter().map(model::Part::from).collect(),
            metadata: a.metadata,
            extensions: a.extensions,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    #[serde(default)]
    pub kind: TaskKind,
    pub id: String,
    #[serde(default)]
    #[serde(alias = "context_id")]
    pub context_id: String,
    pub status: TaskStatus,
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

impl From<model::Task> for Task {
    fn from(t: model::Task) -> Task {
        Task {
            kind: TaskKind,
            id: t.id,
            context_id: t.context_id,
            status: t.status.into(),
            artifacts: t.artifacts.into_iter().map(Artifact::from).collect(),
            history: t.history.into_iter().map(Message::from).collect(),
            metadata: t.metadata,
        }
    }
}

impl From<Task> for model::Task {
    fn from(t: Task) -> model::Task {
        model::Task {
            id: t.id,
            context_id: t.context_id,
            status: t.status.into(),
            artifacts: t.artifacts.into_iter().map(model::Artifact::from).collect(),
            history: t.history.into_iter().map(model::Message::from).collect(),
            metadata: t.metadata,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    #[serde(default)]
    pub kind: StatusUpdateKind,
    #[serde(alias = "task_id")]
    pub task_id: String,
    #[serde(default)]
    #[serde(alias = "context_id")]
    pub context_id: String,
    pub status: TaskStatus,
    /// The last event of the stream.
    #[serde(default, rename = "final")]
    #[serde(alias = "is_final")]
    pub is_final: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

impl From<model::TaskStatusUpdateEvent> for TaskStatusUpdateEvent {
    fn from(e: model::TaskStatusUpdateEvent) -> TaskStatusUpdateEvent {
        // 1.0 streams end after a terminal or interrupted state (the gateway and the SDK close them
        // there), so that is where a 0.3 caller must be told the stream is over. The SDK's own compat
        // layer only marks terminal states; a 0.3 client would then wait on a closed input-required
        // stream.
        let is_final = e.status.state.ends_stream();
        TaskStatusUpdateEvent {
            kind: StatusUpdateKind,
            task_id: e.task_id,
            context_id: e.context_id,
            status: e.status.into(),
            is_final,
            metadata: e.metadata,
        }
    }
}

impl From<TaskStatusUpdateEvent> for model::TaskStatusUpdateEvent {
    fn from(e: TaskStatusUpdateEvent) -> model::TaskStatusUpdateEvent {
        model::TaskStatusUpdateEvent {
            task_id: e.task_id,
            context_id: e.context_id,
            status: e.status.into(),
            metadata: e.metadata,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    #[serde(default)]
    pub kind: ArtifactUpdateKind,
    #[serde(alias = "task_id")]
    pub task_id: String,
    #[serde(default)]
    #[serde(alias = "context_id")]
    pub context_id: String,
    pub artifact: Artifact,
    #[serde(default)]
    pub append: Option<bool>,
    #[serde(default)]
    #[serde(alias = "last_chunk")]
    pub last_chunk: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

impl From<model::TaskArtifactUpdateEvent> for TaskArtifactUpdateEvent {
    fn from(e: model::TaskArtifactUpdateEvent) -> TaskArtifactUpdateEvent {
        TaskArtifactUpdateEvent {
            kind: ArtifactUpdateKind,
            task_id: e.task_id,
            context_id: e.context_id,
            artifact: e.artifact.into(),
            // Both flags always written, as the SDK does (jsonrpc-0.3-03).
            append: Some(e.append),
            last_chunk: Some(e.last_chunk),
            metadata: e.metadata,
        }
    }
}

impl From<TaskArtifactUpdateEvent> for model::TaskArtifactUpdateEvent {
    fn from(e: TaskArtifactUpdateEvent) -> model::TaskArtifactUpdateEvent {
        model::TaskArtifactUpdateEvent {
            task_id: e.task_id,
            context_id: e.context_id,
            artifact: e.artifact.into(),
            append: e.append.unwrap_or(false),
            last_chunk: e.last_chunk.unwrap_or(false),
            metadata: e.metadata,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn states_and_kinds() {
        let status: TaskStatus = serde_json::from_value(json!({"state": "input-required"})).expect("status");
        assert_eq!(status.state, TaskState::InputRequired);
        let future: TaskStatus = serde_json::from_value(json!({"state": "paused"})).expect("status");
        assert_eq!(model::TaskState::from(future.state), model::TaskState::Unspecified);
        for state in TaskState::ALL {
            assert_eq!(TaskState::from(model::TaskState::from(state)), state);
        }
        assert!(serde_json::from_value::<Message>(json!({"kind": "task", "role": "user", "parts": []})).is_err());
    }

    #[test]
    fn status_updates_are_final_where_1_0_streams_end() {
        let update = |state| model::TaskStatusUpdateEvent {
            status: model::TaskStatus { state, ..Default::default() },
            ..Default::default()
        };
        assert!(!TaskStatusUpdateEvent::from(update(model::TaskState::Working)).is_final);
        assert!(TaskStatusUpdateEvent::from(update(model::TaskState::Completed)).is_final);
        assert!(TaskStatusUpdateEvent::from(update(model::TaskState::InputRequired)).is_final);
    }
}
