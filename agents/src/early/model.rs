//! The early dialect's objects as the seed's FastAPI server writes them: a Task with the client's `id`
//! and optional `sessionId`, `status: {state, timestamp, message?}`, `artifacts: [{name, description,
//! parts}]`, `history`; messages with a role and `type`-tagged parts.
//!
//! Deliberately not `a2a_model::early`, the gateway's model of the dialect. That one reads leniently,
//! as a gateway reads what agents answer (a part without its `type` tag, `null` lists, snake-case
//! keys, 1.0's extra states); this one is as strict as the seed's FastAPI server (a tagged part, a
//! data part that is an object, no unknown file fields), so that the tests hold the gateway's early
//! writer to what a real early agent accepts: an agent built on the gateway's own model would accept
//! whatever the gateway writes, and catch nothing.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Agent,
}

/// The seed's task states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskState {
    Submitted,
    Working,
    InputRequired,
    Completed,
    Canceled,
    Failed,
}

impl TaskState {
    /// The seed cancels only these; anything else answers 400.
    pub fn is_cancelable(self) -> bool {
        matches!(self, Self::Submitted | Self::Working | Self::InputRequired)
    }
}

/// The `file` of a file part: a name, a media type and either inline bytes (base64) or a URI.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FileContent {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
}

/// A piece of content, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Part {
    Text {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Map<String, Value>>,
    },
    File {
        file: FileContent,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Map<String, Value>>,
    },
    Data {
        data: Map<String, Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Map<String, Value>>,
    },
}

impl Part {
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into(), metadata: None }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

impl Message {
    pub fn agent(text: impl Into<String>) -> Self {
        Self { role: Role::Agent, parts: vec![Part::text(text)], metadata: None }
    }

    /// The text parts joined, the way the skills read their input.
    pub fn joined_text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|part| match part {
                Part::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskStatus {
    pub state: TaskState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    pub timestamp: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Artifact {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    pub status: TaskStatus,
    pub artifacts: Vec<Artifact>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

impl Task {
    /// A copy with only the newest `keep` history messages (all when `None`).
    pub fn with_history_length(mut self, keep: Option<usize>) -> Self {
        if let Some(keep) = keep {
            let drop = self.history.len().saturating_sub(keep);
            self.history.drain(..drop);
        }
        self
    }
}

/// The body of `POST /tasks/send`, `/tasks/sendSubscribe` and `/tasks/{id}/send`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendParams {
    /// Required for a new task; optional on `/tasks/{id}/send`, where the path names the task.
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub session_id: Option<String>,
    pub message: Message,
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    #[serde(default)]
    pub history_length: Option<usize>,
}

impl SendParams {
    /// `metadata.skillId` of the request, or else of its message.
    pub fn skill_id(&self) -> Option<&str> {
        fn skill(metadata: &Option<Map<String, Value>>) -> Option<&str> {
            metadata.as_ref()?.get("skillId")?.as_str()
        }
        skill(&self.metadata).or_else(|| skill(&self.message.metadata))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parts_are_type_tagged() {
        let parts = json!([{"type": "text", "text": "hi"}, {"type": "data", "data": {"k": 1}},
            {"type": "file", "file": {"name": "a.txt", "mimeType": "text/plain", "bytes": "aGk="}}]);
        let parsed: Vec<Part> = serde_json::from_value(parts.clone()).expect("parts");
        assert_eq!(serde_json::to_value(&parsed).ok(), Some(parts));
        assert!(serde_json::from_value::<Part>(json!({"text": "untagged"})).is_err());
        assert!(serde_json::from_value::<Part>(json!({"type": "data", "data": [1]})).is_err());
    }

    #[test]
    fn states_are_kebab_case() {
        assert_eq!(serde_json::to_value(TaskState::InputRequired).ok(), Some(json!("input-required")));
        assert!(TaskState::InputRequired.is_cancelable() && !TaskState::Completed.is_cancelable());
    }
}
