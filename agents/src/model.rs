//! The A2A 1.0 objects these agents exchange, in their ProtoJSON form (camelCase fields, enums as
//! `TASK_STATE_*` / `ROLE_*` strings, parts without a `kind` tag).
//!
//! Field order follows the proto, so serialised JSON reads like the reference SDK's captures.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    #[serde(rename = "ROLE_UNSPECIFIED")]
    Unspecified,
    #[serde(rename = "ROLE_USER")]
    User,
    #[serde(rename = "ROLE_AGENT")]
    Agent,
}

/// The lifecycle state of a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TaskState {
    #[serde(rename = "TASK_STATE_UNSPECIFIED")]
    Unspecified,
    #[serde(rename = "TASK_STATE_SUBMITTED")]
    Submitted,
    #[serde(rename = "TASK_STATE_WORKING")]
    Working,
    #[serde(rename = "TASK_STATE_INPUT_REQUIRED")]
    InputRequired,
    #[serde(rename = "TASK_STATE_AUTH_REQUIRED")]
    AuthRequired,
    #[serde(rename = "TASK_STATE_COMPLETED")]
    Completed,
    #[serde(rename = "TASK_STATE_FAILED")]
    Failed,
    #[serde(rename = "TASK_STATE_CANCELED")]
    Canceled,
    #[serde(rename = "TASK_STATE_REJECTED")]
    Rejected,
}

impl TaskState {
    /// No further change can happen to a task in this state.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Canceled | Self::Rejected)
    }

    /// The agent waits for the caller; a stream ends here too.
    pub fn is_interrupted(self) -> bool {
        matches!(self, Self::InputRequired | Self::AuthRequired)
    }

    /// The proto enum name, as it appears on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unspecified => "TASK_STATE_UNSPECIFIED",
            Self::Submitted => "TASK_STATE_SUBMITTED",
            Self::Working => "TASK_STATE_WORKING",
            Self::InputRequired => "TASK_STATE_INPUT_REQUIRED",
            Self::AuthRequired => "TASK_STATE_AUTH_REQUIRED",
            Self::Completed => "TASK_STATE_COMPLETED",
            Self::Failed => "TASK_STATE_FAILED",
            Self::Canceled => "TASK_STATE_CANCELED",
            Self::Rejected => "TASK_STATE_REJECTED",
        }
    }
}

/// One piece of content: exactly one of `text`, `raw`, `url`, `data`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Base64 bytes, kept as the caller sent them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
}

impl Part {
    pub fn text(text: impl Into<String>) -> Self {
        Self { text: Some(text.into()), ..Self::default() }
    }

    pub fn data(data: Value) -> Self {
        Self { data: Some(data), ..Self::default() }
    }

    /// How many of the content fields are set; a valid part has exactly one.
    pub fn content_count(&self) -> usize {
        // `data: null` arrives as None through serde, so it counts as absent, like ProtoJSON.
        [self.text.is_some(), self.raw.is_some(), self.url.is_some(), self.data.is_some()]
            .into_iter()
            .filter(|set| *set)
            .count()
    }
}

/// A message in a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    #[serde(default)]
    pub message_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default = "Message::default_role")]
    pub role: Role,
    #[serde(default)]
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reference_task_ids: Vec<String>,
}

impl Message {
    fn default_role() -> Role {
        Role::Unspecified
    }

    /// A new agent message with one text part, tied to a task.
    pub fn agent_text(task_id: &str, context_id: &str, text: impl Into<String>) -> Self {
        Self {
            message_id: new_id(),
            context_id: Some(context_id.to_owned()),
            task_id: Some(task_id.to_owned()),
            role: Role::Agent,
            parts: vec![Part::text(text)],
            metadata: None,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        }
    }

    /// The text parts joined together, the way the agents read their input.
    pub fn joined_text(&self) -> String {
        self.parts.iter().filter_map(|part| part.text.as_deref()).collect()
    }

    /// The first data part's payload, where structured input lives.
    pub fn first_data(&self) -> Option<&Value> {
        self.parts.iter().find_map(|part| part.data.as_ref())
    }
}

/// Where a task stands, with the agent's latest word on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskStatus {
    pub state: TaskState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// An output of a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    pub artifact_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

/// A unit of work and everything known about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub id: String,
    pub context_id: String,
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

impl Task {
    /// A copy whose history keeps only the newest `history_length` messages (all when `None`).
    pub fn with_history_length(mut self, history_length: Option<usize>) -> Self {
        if let Some(keep) = history_length {
            let drop = self.history.len().saturating_sub(keep);
            self.history.drain(..drop);
        }
        self
    }
}

/// A change of a task's status, as streamed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    pub task_id: String,
    pub context_id: String,
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

/// A new or grown artifact, as streamed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    pub task_id: String,
    pub context_id: String,
    pub artifact: Artifact,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub append: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub last_chunk: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

/// One stream event: exactly one of `task`, `message`, `statusUpdate`, `artifactUpdate`.
/// Also the shape of a SendMessage result (`task` or `message`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamResponse {
    Task(Task),
    Message(Message),
    StatusUpdate(TaskStatusUpdateEvent),
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

impl StreamResponse {
    /// The state a stream ends on: terminal or interrupted, carried by a status update.
    pub fn closes_stream(&self) -> bool {
        match self {
            Self::StatusUpdate(update) => update.status.state.is_terminal() || update.status.state.is_interrupted(),
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
        let msg = |id: &str| Message { message_id: id.into(), ..Message::agent_text("t", "c", "x") };
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
}
