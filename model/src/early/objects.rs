//! The early REST dialect's objects (the project's seed): `type`-tagged parts, messages with only a
//! role and parts, tasks with a client-generated `id` and an optional `sessionId`, kebab-case states —
//! and their conversions to and from the internal model.
//!
//! Not carried 1.0 → early: message `messageId`, `contextId`, `taskId`, `extensions`,
//! `referenceTaskIds`; artifact `artifactId` and `extensions` (an artifact is known by its position);
//! `filename` / `mediaType` of text and data parts; states `rejected` (sent as `failed`) and
//! `auth-required` (sent as `input-required`, the state in which an early client answers).
//! From early to 1.0, the missing ids are made up: message ids are fresh UUIDs, artifact ids are
//! `artifact-{index}` (stable across snapshots of a task, so updates of one artifact keep its id), the
//! context id is the `sessionId`, or the task id when there is none.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

use crate as model;
use crate::v03::{self, FileContent, PartContent03, PartWire};
use crate::{Struct, empty_as_none, null_as_empty};

/// Who wrote a message (`user` / `agent`).
pub use crate::v03::Role;

/// A task state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskState {
    Submitted,
    Working,
    InputRequired,
    Completed,
    Canceled,
    Failed,
    Unknown,
}

impl TaskState {
    pub const ALL: [TaskState; 7] = [
        TaskState::Submitted,
        TaskState::Working,
        TaskState::InputRequired,
        TaskState::Completed,
        TaskState::Canceled,
        TaskState::Failed,
        TaskState::Unknown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Submitted => "submitted",
            TaskState::Working => "working",
            TaskState::InputRequired => "input-required",
            TaskState::Completed => "completed",
            TaskState::Canceled => "canceled",
            TaskState::Failed => "failed",
            TaskState::Unknown => "unknown",
        }
    }

    /// Whether the task can still be canceled (the seed answers 400 otherwise).
    pub fn is_cancelable(self) -> bool {
        matches!(self, TaskState::Submitted | TaskState::Working | TaskState::InputRequired)
    }

    pub fn is_terminal(self) -> bool {
        matches!(self, TaskState::Completed | TaskState::Canceled | TaskState::Failed)
    }
}

impl Serialize for TaskState {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// A state as read: the early states plus the two later versions added, so they keep their 1.0
/// meaning when an early-shaped answer carries them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateIn(pub model::TaskState);

impl<'de> Deserialize<'de> for StateIn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<StateIn, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = StateIn;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a task state")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<StateIn, E> {
                let v03 = v03::TaskState::ALL.into_iter().find(|s| s.as_str() == v).unwrap_or(v03::TaskState::Unknown);
                Ok(StateIn(v03.into()))
            }
        }
        d.deserialize_str(V)
    }
}

impl From<model::TaskState> for TaskState {
    fn from(state: model::TaskState) -> TaskState {
        match state {
            model::TaskState::Unspecified => TaskState::Unknown,
            model::TaskState::Submitted => TaskState::Submitted,
            model::TaskState::Working => TaskState::Working,
            model::TaskState::Completed => TaskState::Completed,
            model::TaskState::Failed | model::TaskState::Rejected => TaskState::Failed,
            model::TaskState::Canceled => TaskState::Canceled,
            model::TaskState::InputRequired | model::TaskState::AuthRequired => TaskState::InputRequired,
        }
    }
}

impl From<TaskState> for model::TaskState {
    fn from(state: TaskState) -> model::TaskState {
        match state {
            TaskState::Unknown => model::TaskState::Unspecified,
            TaskState::Submitted => model::TaskState::Submitted,
            TaskState::Working => model::TaskState::Working,
            TaskState::Completed => model::TaskState::Completed,
            TaskState::Failed => model::TaskState::Failed,
            TaskState::Canceled => model::TaskState::Canceled,
            TaskState::InputRequired => model::TaskState::InputRequired,
        }
    }
}

/// A `type`-tagged part. Same content as a 0.3 part; only the tag's name differs.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub content: PartContent03,
    pub metadata: Option<Struct>,
}

impl Serialize for Part {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_part(&self.content, self.metadata.as_ref(), s)
    }
}

/// Writes a part with its `type` tag; shared with the borrowed views of the stream converter.
pub(crate) fn serialize_part<S: Serializer>(
    content: &PartContent03,
    metadata: Option<&Struct>,
    s: S,
) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(None)?;
    match content {
        PartContent03::Text(text) => {
            map.serialize_entry("type", "text")?;
            map.serialize_entry("text", text)?;
        }
        PartContent03::File(file) => {
            map.serialize_entry("type", "file")?;
            map.serialize_entry("file", &FileView(file))?;
        }
        PartContent03::Data(data) => {
            map.serialize_entry("type", "data")?;
            map.serialize_entry("data", data)?;
        }
    }
    if let Some(metadata) = metadata {
        map.serialize_entry("metadata", metadata)?;
    }
    map.end()
}

pub(crate) struct FileView<'a>(pub &'a v03::File);

impl Serialize for FileView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        if let Some(name) = &self.0.name {
            map.serialize_entry("name", name)?;
        }
        if let Some(mime_type) = &self.0.mime_type {
            map.serialize_entry("mimeType", mime_type)?;
        }
        match &self.0.content {
            FileContent::Bytes(bytes) => map.serialize_entry("bytes", bytes)?,
            FileContent::Uri(uri) => map.serialize_entry("uri", uri)?,
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Part, D::Error> {
        let part = PartWire::deserialize(d)?.into_part("type")?;
        Ok(Part { content: part.content, metadata: part.metadata })
    }
}

impl From<model::Part> for Part {
    fn from(part: model::Part) -> Part {
        let v03 = v03::Part::from(part);
        Part { content: v03.content, metadata: v03.metadata }
    }
}

impl From<Part> for model::Part {
    fn from(part: Part) -> model::Part {
        v03::Part { content: part.content, metadata: part.metadata }.into()
    }
}

/// A message: a role and parts, nothing else to know it by.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

impl From<model::Message> for Message {
    fn from(m: model::Message) -> Message {
        Message { role: m.role.into(), parts: m.parts.into_iter().map(Part::from).collect(), metadata: m.metadata }
    }
}

impl Message {
    /// The 1.0 message, with a fresh message id and the given task and context.
    pub fn into_v1(self, task_id: Option<&str>, context_id: Option<&str>) -> model::Message {
        model::Message {
            message_id: uuid::Uuid::new_v4().to_string(),
            context_id: context_id.map(str::to_owned),
            task_id: task_id.map(str::to_owned),
            role: self.role.into(),
            parts: self.parts.into_iter().map(model::Part::from).collect(),
            metadata: self.metadata,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskStatus {
    #[serde(serialize_with = "serialize_state", deserialize_with = "deserialize_state")]
    pub state: model::TaskState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// The state is kept in its 1.0 form (an early answer may carry `rejected`), written in early terms.
fn serialize_state<S: Serializer>(state: &model::TaskState, s: S) -> Result<S::Ok, S::Error> {
    TaskState::from(*state).serialize(s)
}

fn deserialize_state<'de, D: Deserializer<'de>>(d: D) -> Result<model::TaskState, D::Error> {
    Ok(StateIn::deserialize(d)?.0)
}

impl From<model::TaskStatus> for TaskStatus {
    fn from(s: model::TaskStatus) -> TaskStatus {
        TaskStatus { state: s.state, message: s.message.map(Message::from), timestamp: s.timestamp }
    }
}

/// An output of a task; known by its position in `artifacts`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
    /// Read when an agent sends it; never written (the position says it).
    #[serde(default, skip_serializing)]
    pub index: Option<u32>,
    #[serde(default, skip_serializing)]
    #[serde(alias = "last_chunk")]
    pub last_chunk: Option<bool>,
}

impl From<model::Artifact> for Artifact {
    fn from(a: model::Artifact) -> Artifact {
        Artifact {
            name: a.name,
            description: a.description,
            parts: a.parts.into_iter().map(Part::from).collect(),
            metadata: a.metadata,
            index: None,
            last_chunk: None,
        }
    }
}

/// The artifact id an early artifact gets in 1.0.
pub fn artifact_id(index: usize) -> String {
    format!("artifact-{index}")
}

impl Artifact {
    /// The 1.0 artifact at `position` in its task.
    pub fn into_v1(self, position: usize) -> model::Artifact {
        let index = self.index.map_or(position, |i| i as usize);
        model::Artifact {
            artifact_id: artifact_id(index),
            name: self.name,
            description: self.description,
            parts: self.parts.into_iter().map(model::Part::from).collect(),
            metadata: self.metadata,
            extensions: Vec::new(),
        }
    }
}

/// A task, as every early answer (and every early stream event) carries it whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub id: String,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    #[serde(alias = "session_id")]
    pub session_id: Option<String>,
    pub status: TaskStatus,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub artifacts: Vec<Artifact>,
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

impl Task {
    /// The early task for a 1.0 task; `early_id` replaces the task id (the caller's own id when the
    /// backend generated another one).
    pub fn from_v1(task: model::Task, early_id: Option<&str>) -> Task {
        Task {
            id: early_id.map_or(task.id, str::to_owned),
            session_id: Some(task.context_id).filter(|c| !c.is_empty()),
            status: task.status.into(),
            artifacts: task.artifacts.into_iter().map(Artifact::from).collect(),
            history: task.history.into_iter().map(Message::from).collect(),
            metadata: task.metadata,
        }
    }

    /// The 1.0 task: `contextId` is the `sessionId` (or the task id), messages get fresh ids and the
    /// task's ids, artifacts `artifact-{index}`.
    pub fn into_v1(self) -> model::Task {
        let context_id = self.session_id.unwrap_or_else(|| self.id.clone());
        let (id, context) = (Some(self.id.as_str()), Some(context_id.as_str()));
        let status = model::TaskStatus {
            state: self.status.state,
            message: self.status.message.map(|m| m.into_v1(id, context)),
            timestamp: self.status.timestamp,
        };
        let artifacts = self.artifacts.into_iter().enumerate().map(|(i, a)| a.into_v1(i)).collect();
        let history = self.history.into_iter().map(|m| m.into_v1(id, context)).collect();
        model::Task { id: self.id, context_id, status, artifacts, history, metadata: self.metadata }
    }
}

#[cfg(test)]
mod tests;
