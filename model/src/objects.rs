//! The A2A 1.0 objects (ProtoJSON: camelCase fields, `TASK_STATE_*` / `ROLE_*` enums, parts without a
//! `kind` tag) that every dialect is translated through.
//!
//! ProtoJSON semantics are kept where they matter for bridging: empty strings of optional scalars read
//! as absent (the SDK's ListTasks prints `"filename": ""`), `false` booleans and empty lists are not
//! written, enum names outside the proto read as `*_UNSPECIFIED` instead of failing the whole answer.

use serde::de::{self, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::enums::{Role, TaskState};
use super::protojson::{Struct, empty_as_none, is_false, null_as_default, null_as_empty};

/// The content of a part: exactly one of these.
#[derive(Debug, Clone, PartialEq)]
pub enum PartContent {
    Text(String),
    /// Base64 bytes, kept as sent (never decoded on the way through).
    Raw(String),
    Url(String),
    /// Any JSON value (a `google.protobuf.Value`).
    Data(Value),
}

/// One piece of content of a message or artifact.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub content: PartContent,
    pub metadata: Option<Struct>,
    pub filename: Option<String>,
    pub media_type: Option<String>,
}

impl Part {
    pub fn new(content: PartContent) -> Part {
        Part { content, metadata: None, filename: None, media_type: None }
    }

    pub fn text(text: impl Into<String>) -> Part {
        Part::new(PartContent::Text(text.into()))
    }
}

impl Serialize for Part {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        match &self.content {
            PartContent::Text(text) => map.serialize_entry("text", text)?,
            PartContent::Raw(raw) => map.serialize_entry("raw", raw)?,
            PartContent::Url(url) => map.serialize_entry("url", url)?,
            PartContent::Data(data) => map.serialize_entry("data", data)?,
        }
        if let Some(metadata) = &self.metadata {
            map.serialize_entry("metadata", metadata)?;
        }
        if let Some(filename) = &self.filename {
            map.serialize_entry("filename", filename)?;
        }
        if let Some(media_type) = &self.media_type {
            map.serialize_entry("mediaType", media_type)?;
        }
        map.end()
    }
}

/// A part as it arrives, before checking that exactly one content field is set.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PartWire {
    text: Option<String>,
    raw: Option<String>,
    url: Option<String>,
    data: Option<Value>,
    metadata: Option<Struct>,
    #[serde(default, deserialize_with = "empty_as_none")]
    filename: Option<String>,
    #[serde(default, deserialize_with = "empty_as_none", alias = "media_type")]
    media_type: Option<String>,
}

impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Part, D::Error> {
        let wire = PartWire::deserialize(d)?;
        let mut contents = [
            wire.text.map(PartContent::Text),
            wire.raw.map(PartContent::Raw),
            wire.url.map(PartContent::Url),
            wire.data.map(PartContent::Data),
        ]
        .into_iter()
        .flatten();
        let (Some(content), None) = (contents.next(), contents.next()) else {
            return Err(de::Error::custom("a part needs exactly one of 'text', 'raw', 'url', 'data'"));
        };
        Ok(Part { content, metadata: wire.metadata, filename: wire.filename, media_type: wire.media_type })
    }
}

/// A message in a conversation.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    #[serde(default)]
    #[serde(alias = "message_id")]
    pub message_id: String,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    #[serde(alias = "context_id")]
    pub context_id: Option<String>,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    #[serde(alias = "task_id")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "is_unspecified_role")]
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

fn is_unspecified_role(role: &Role) -> bool {
    *role == Role::Unspecified
}

/// Where a task stands, with the agent's latest word on it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TaskStatus {
    #[serde(default)]
    pub state: TaskState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// RFC 3339, passed through as sent.
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// An output of a task.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
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

/// A unit of work and everything known about it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    #[serde(alias = "context_id")]
    pub context_id: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub status: TaskStatus,
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

impl Task {
    /// Keeps only the newest `keep` history messages, as `historyLength` asks.
    pub fn truncate_history(&mut self, keep: usize) {
        let drop = self.history.len().saturating_sub(keep);
        self.history.drain(..drop);
    }
}

/// A change of a task's status, as streamed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    #[serde(default)]
    #[serde(alias = "task_id")]
    pub task_id: String,
    #[serde(default)]
    #[serde(alias = "context_id")]
    pub context_id: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

/// A new or grown artifact, as streamed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    #[serde(default)]
    #[serde(alias = "task_id")]
    pub task_id: String,
    #[serde(default)]
    #[serde(alias = "context_id")]
    pub context_id: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub artifact: Artifact,
    /// The parts extend the artifact with the same id instead of replacing it.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "is_false")]
    pub append: bool,
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "is_false")]
    #[serde(alias = "last_chunk")]
    pub last_chunk: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

/// One stream event: exactly one of `task`, `message`, `statusUpdate`, `artifactUpdate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamResponse {
    Task(Task),
    Message(Message),
    StatusUpdate(TaskStatusUpdateEvent),
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

impl StreamResponse {
    /// The state this event leaves its task in, when it says.
    pub fn state(&self) -> Option<TaskState> {
        match self {
            StreamResponse::Task(task) => Some(task.status.state),
            StreamResponse::StatusUpdate(update) => Some(update.status.state),
            StreamResponse::Message(_) | StreamResponse::ArtifactUpdate(_) => None,
        }
    }

    /// Whether a stream ends after this event: a terminal or interrupted status, or a message
    /// (a stream that answers with a message carries nothing else).
    pub fn ends_stream(&self) -> bool {
        match self {
            StreamResponse::Message(_) => true,
            StreamResponse::Task(task) => task.status.state.ends_stream(),
            StreamResponse::StatusUpdate(update) => update.status.state.ends_stream(),
            StreamResponse::ArtifactUpdate(_) => false,
        }
    }
}

/// The result of SendMessage: `{"task": …}` or `{"message": …}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SendMessageResponse {
    Task(Task),
    Message(Message),
}

#[cfg(test)]
mod tests;
