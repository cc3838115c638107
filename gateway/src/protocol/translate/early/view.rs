//! The early shape of a 1.0 task, written straight from the task it borrows: what
//! [`SnapshotBuilder`](super::SnapshotBuilder) sends after every event, without copying the task
//! (artifacts can be large, and each early stream event carries all of them).

use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

use super::TaskState;
use crate::protocol::translate::v03::Role;
use a2a_model::{self as model, PartContent, Struct};

/// A 1.0 task written in the early shape under the caller's id, without copying it. Writes the same
/// JSON as [`Task::from_v1`](super::Task::from_v1) does (a property test holds them to it).
#[derive(Debug, Clone, Copy)]
pub struct TaskView<'a> {
    pub task: &'a model::Task,
    pub id: &'a str,
}

impl Serialize for TaskView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let task = self.task;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("id", self.id)?;
        if !task.context_id.is_empty() {
            map.serialize_entry("sessionId", &task.context_id)?;
        }
        map.serialize_entry("status", &StatusView(&task.status))?;
        map.serialize_entry("artifacts", &Seq(&task.artifacts, ArtifactView))?;
        if !task.history.is_empty() {
            map.serialize_entry("history", &Seq(&task.history, MessageView))?;
        }
        if let Some(metadata) = &task.metadata {
            map.serialize_entry("metadata", metadata)?;
        }
        map.end()
    }
}

/// A list written through a borrowed view of each item.
struct Seq<'a, T, V>(&'a [T], fn(&'a T) -> V);

impl<'a, T, V: Serialize> Serialize for Seq<'a, T, V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for item in self.0 {
            seq.serialize_element(&(self.1)(item))?;
        }
        seq.end()
    }
}

struct StatusView<'a>(&'a model::TaskStatus);

impl Serialize for StatusView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("state", &TaskState::from(self.0.state))?;
        if let Some(message) = &self.0.message {
            map.serialize_entry("message", &MessageView(message))?;
        }
        if let Some(timestamp) = &self.0.timestamp {
            map.serialize_entry("timestamp", timestamp)?;
        }
        map.end()
    }
}

struct MessageView<'a>(&'a model::Message);

impl Serialize for MessageView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("role", &Role::from(self.0.role))?;
        map.serialize_entry("parts", &Seq(&self.0.parts, PartView))?;
        if let Some(metadata) = &self.0.metadata {
            map.serialize_entry("metadata", metadata)?;
        }
        map.end()
    }
}

struct ArtifactView<'a>(&'a model::Artifact);

impl Serialize for ArtifactView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let a = self.0;
        let mut map = s.serialize_map(None)?;
        if let Some(name) = &a.name {
            map.serialize_entry("name", name)?;
        }
        if let Some(description) = &a.description {
            map.serialize_entry("description", description)?;
        }
        map.serialize_entry("parts", &Seq(&a.parts, PartView))?;
        if let Some(metadata) = &a.metadata {
            map.serialize_entry("metadata", metadata)?;
        }
        map.end()
    }
}

struct PartView<'a>(&'a model::Part);

impl Serialize for PartView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let part = self.0;
        let mut map = s.serialize_map(None)?;
        match &part.content {
            PartContent::Text(text) => {
                map.serialize_entry("type", "text")?;
                map.serialize_entry("text", text)?;
            }
            PartContent::Raw(_) | PartContent::Url(_) => {
                map.serialize_entry("type", "file")?;
                map.serialize_entry("file", &FilePartView(part))?;
            }
            PartContent::Data(data @ Value::Object(_)) => {
                map.serialize_entry("type", "data")?;
                map.serialize_entry("data", data)?;
            }
            PartContent::Data(other) => {
                // The same wrapper as the owned conversion (the SDK's `data_part_compat`).
                map.serialize_entry("type", "data")?;
                map.serialize_entry("data", &Wrapped(other))?;
                map.serialize_entry("metadata", &CompatMetadata(part.metadata.as_ref()))?;
                return map.end();
            }
        }
        if let Some(metadata) = &part.metadata {
            map.serialize_entry("metadata", metadata)?;
        }
        map.end()
    }
}

struct FilePartView<'a>(&'a model::Part);

impl Serialize for FilePartView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let part = self.0;
        let mut map = s.serialize_map(None)?;
        if let Some(name) = &part.filename {
            map.serialize_entry("name", name)?;
        }
        if let Some(mime_type) = &part.media_type {
            map.serialize_entry("mimeType", mime_type)?;
        }
        match &part.content {
            PartContent::Raw(bytes) => map.serialize_entry("bytes", bytes)?,
            PartContent::Url(uri) => map.serialize_entry("uri", uri)?,
            PartContent::Text(_) | PartContent::Data(_) => {}
        }
        map.end()
    }
}

struct Wrapped<'a>(&'a Value);

impl Serialize for Wrapped<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry("value", self.0)?;
        map.end()
    }
}

struct CompatMetadata<'a>(Option<&'a Struct>);

impl Serialize for CompatMetadata<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for (key, value) in self.0.into_iter().flatten().filter(|(k, _)| k.as_str() != "data_part_compat") {
            map.serialize_entry(key, value)?;
        }
        map.serialize_entry("data_part_compat", &true)?;
        map.end()
    }
}
