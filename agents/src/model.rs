//! Agent-side conveniences over the shared A2A 1.0 model ([`a2a_model`]): the agents answer in the
//! model's own types, whose ProtoJSON wire form (proto field order, empty fields omitted) is the
//! reference SDK's. What only an agent needs (fresh ids, reading its input, how its streams end) is
//! here, as free functions and small extension traits.

use a2a_model::{Message, Part, PartContent, Role, StreamResponse, Task};
use serde_json::Value;

/// A new agent message with one text part, tied to a task.
pub fn agent_text(task_id: &str, context_id: &str, text: impl Into<String>) -> Message {
    Message {
        message_id: new_id(),
        context_id: Some(context_id.to_owned()),
        task_id: Some(task_id.to_owned()),
        role: Role::Agent,
        parts: vec![Part::text(text)],
        ..Message::default()
    }
}

/// A part holding structured data.
pub fn data_part(data: Value) -> Part {
    Part::new(PartContent::Data(data))
}

/// The text of a text part.
pub fn part_text(part: &Part) -> Option<&str> {
    match &part.content {
        PartContent::Text(text) => Some(text),
        _ => None,
    }
}

/// How the agents read a caller's message.
pub trait MessageExt {
    /// The text parts joined together, the way the agents read their input.
    fn joined_text(&self) -> String;
    /// The first data part's payload, where structured input lives.
    fn first_data(&self) -> Option<&Value>;
}

impl MessageExt for Message {
    fn joined_text(&self) -> String {
        self.parts.iter().filter_map(part_text).collect()
    }

    fn first_data(&self) -> Option<&Value> {
        self.parts.iter().find_map(|part| match &part.content {
            PartContent::Data(data) => Some(data),
            _ => None,
        })
    }
}

pub trait TaskExt {
    /// The task with only the newest `history_length` messages of its history (all when `None`).
    fn with_history_length(self, history_length: Option<usize>) -> Self;
}

impl TaskExt for Task {
    fn with_history_length(mut self, history_length: Option<usize>) -> Self {
        if let Some(keep) = history_length {
            self.truncate_history(keep);
        }
        self
    }
}

pub trait EventExt {
    /// Whether an agent's stream ends after this event: a terminal or interrupted status update,
    /// or a terminal task snapshot. The agents' own rule, kept as it was: it differs from the
    /// model's [`StreamResponse::ends_stream`] (how the gateway reads any agent's stream) for a
    /// message and for a snapshot in an interrupted state, neither of which ends these streams.
    fn closes_stream(&self) -> bool;
}

impl EventExt for StreamResponse {
    fn closes_stream(&self) -> bool {
        match self {
            Self::StatusUpdate(update) => update.status.state.ends_stream(),
            Self::Task(task) => task.status.state.is_terminal(),
            Self::Message(_) | Self::ArtifactUpdate(_) => false,
        }
    }
}

/// Server-generated ids (tasks, contexts, messages, artifacts).
pub fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_model::{Artifact, TaskArtifactUpdateEvent, TaskState, TaskStatus, TaskStatusUpdateEvent};
    use serde_json::json;

    #[test]
    fn parts_have_no_kind_tag() {
        let part = Part::text("hi");
        assert_eq!(serde_json::to_value(&part).ok(), Some(json!({"text": "hi"})));
    }

    #[test]
    fn stream_response_is_externally_tagged_camel_case() {
        let event = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus { state: TaskState::Working, message: None, timestamp: None },
            metadata: None,
        });
        assert_eq!(
            serde_json::to_value(&event).ok(),
            Some(json!({"statusUpdate": {"taskId": "t", "contextId": "c",
                "status": {"state": "TASK_STATE_WORKING"}}}))
        );
    }

    #[test]
    fn history_length_keeps_the_newest() {
        let msg = |id: &str| Message { message_id: id.into(), ..agent_text("t", "c", "x") };
        let task = Task {
            id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus { state: TaskState::Completed, message: None, timestamp: None },
            artifacts: vec![],
            history: vec![msg("1"), msg("2"), msg("3")],
            metadata: None,
        };
        let ids = |t: Task| t.history.into_iter().map(|m| m.message_id).collect::<Vec<_>>();
        assert_eq!(ids(task.clone().with_history_length(Some(2))), ["2", "3"]);
        assert!(ids(task.clone().with_history_length(Some(0))).is_empty());
        assert_eq!(ids(task.with_history_length(None)).len(), 3);
    }

    /// The wire form these agents answer with, byte for byte (field order, omitted empties): the
    /// e2e tests and the gateway read it.
    #[test]
    fn wire_form_is_stable() {
        let mut user = agent_text("t", "c", "hi");
        user.message_id = "u".into();
        user.role = Role::User;
        user.parts.push(data_part(json!({"diff": "x"})));
        let mut agent = agent_text("t", "c", "done");
        agent.message_id = "a".into();
        let status = TaskStatus {
            state: TaskState::Completed,
            message: Some(agent.clone()),
            timestamp: Some("2026-12-04T10:00:00.000000Z".into()),
        };
        let artifact = Artifact {
            artifact_id: "r".into(),
            name: Some("echo".into()),
            description: None,
            parts: vec![Part::text("hi")],
            metadata: None,
            extensions: Vec::new(),
        };
        let task = Task {
            id: "t".into(),
            context_id: "c".into(),
            status: status.clone(),
            artifacts: vec![artifact.clone()],
            history: vec![user.clone(), agent.clone()],
            metadata: None,
        };
        let text = |value: &StreamResponse| serde_json::to_string(value).unwrap_or_default();
        assert_eq!(
            serde_json::to_string(&agent).unwrap_or_default(),
            r#"{"messageId":"a","contextId":"c","taskId":"t","role":"ROLE_AGENT","parts":[{"text":"done"}]}"#
        );
        assert_eq!(
            text(&StreamResponse::Task(task)),
            concat!(
                r#"{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED","message":"#,
                r#"{"messageId":"a","contextId":"c","taskId":"t","role":"ROLE_AGENT","parts":[{"text":"done"}]},"#,
                r#""timestamp":"2026-12-04T10:00:00.000000Z"},"artifacts":[{"artifactId":"r","name":"echo","#,
                r#""parts":[{"text":"hi"}]}],"history":[{"messageId":"u","contextId":"c","taskId":"t","#,
                r#""role":"ROLE_USER","parts":[{"text":"hi"},{"data":{"diff":"x"}}]},{"messageId":"a","#,
                r#""contextId":"c","taskId":"t","role":"ROLE_AGENT","parts":[{"text":"done"}]}]}}"#
            )
        );
        assert_eq!(
            text(&StreamResponse::Message(user)),
            r#"{"message":{"messageId":"u","contextId":"c","taskId":"t","role":"ROLE_USER","parts":[{"text":"hi"},{"data":{"diff":"x"}}]}}"#
        );
        let status_update = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus { state: TaskState::Working, message: None, timestamp: Some("2026".into()) },
            metadata: None,
        });
        assert_eq!(
            text(&status_update),
            r#"{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING","timestamp":"2026"}}}"#
        );
        let artifact_update = StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            artifact,
            append: false,
            last_chunk: true,
            metadata: None,
        });
        assert_eq!(
            text(&artifact_update),
            concat!(
                r#"{"artifactUpdate":{"taskId":"t","contextId":"c","artifact":{"artifactId":"r","name":"echo","#,
                r#""parts":[{"text":"hi"}]},"lastChunk":true}}"#
            )
        );
    }
}
