//! A2A 0.3 objects as its JSON-RPC binding writes them (the SDK's pydantic models): a `kind` on every
//! object and part, lower-case kebab states, roles `user` / `agent`, `final` on status updates — and
//! their conversions to and from the internal model.
//!
//! Not carried from 1.0 to 0.3: `filename` / `mediaType` of text and data parts; a data part that is
//! not a JSON object travels as `{"value": …}` with `metadata.data_part_compat: true` (the SDK's
//! convention), so it comes back whole (but for an empty `metadata: {}`, which comes back absent).
//! `ROLE_UNSPECIFIED` becomes `agent`; `TASK_STATE_UNSPECIFIED`
//! becomes `unknown` and back. From 0.3 to 1.0: `final` (1.0 streams end on the state itself).

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::protocol::translate::model::{self, PartContent, Struct, empty_as_none, null_as_empty};

/// A `kind` discriminator that always writes its one value and, when present, must read it.
macro_rules! kind_tag {
    ($name:ident = $value:literal) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub struct $name;

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str($value)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                let kind = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                if kind == $value {
                    Ok($name)
                } else {
                    Err(de::Error::custom(format!(concat!("expected kind '", $value, "', found '{}'"), kind)))
                }
            }
        }
    };
}

kind_tag!(TaskKind = "task");
kind_tag!(MessageKind = "message");
kind_tag!(StatusUpdateKind = "status-update");
kind_tag!(ArtifactUpdateKind = "artifact-update");

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Agent,
}

impl From<model::Role> for Role {
    fn from(role: model::Role) -> Role {
        match role {
            model::Role::User => Role::User,
            // 0.3 has no "unspecified"; the SDK makes everything else an agent message.
            model::Role::Agent | model::Role::Unspecified => Role::Agent,
        }
    }
}

impl From<Role> for model::Role {
    fn from(role: Role) -> model::Role {
        match role {
            Role::User => model::Role::User,
            Role::Agent => model::Role::Agent,
        }
    }
}

/// A task state, lower-case kebab.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskState {
    Submitted,
    Working,
    InputRequired,
    Completed,
    Canceled,
    Failed,
    Rejected,
    AuthRequired,
    Unknown,
}

impl TaskState {
    pub const ALL: [TaskState; 9] = [
        TaskState::Submitted,
        TaskState::Working,
        TaskState::InputRequired,
        TaskState::Completed,
        TaskState::Canceled,
        TaskState::Failed,
        TaskState::Rejected,
        TaskState::AuthRequired,
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
            TaskState::Rejected => "rejected",
            TaskState::AuthRequired => "auth-required",
            TaskState::Unknown => "unknown",
        }
    }
}

impl Serialize for TaskState {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TaskState {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<TaskState, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = TaskState;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a task state")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<TaskState, E> {
                // A state from a later version is not a reason to drop the whole answer.
                Ok(TaskState::ALL.into_iter().find(|s| s.as_str() == v).unwrap_or(TaskState::Unknown))
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
            model::TaskState::Failed => TaskState::Failed,
            model::TaskState::Canceled => TaskState::Canceled,
            model::TaskState::InputRequired => TaskState::InputRequired,
            model::TaskState::Rejected => TaskState::Rejected,
            model::TaskState::AuthRequired => TaskState::AuthRequired,
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
            TaskState::Rejected => model::TaskState::Rejected,
            TaskState::AuthRequired => model::TaskState::AuthRequired,
        }
    }
}

/// The metadata key of the SDK's wrapper for data parts that are not objects.
const DATA_PART_COMPAT: &str = "data_part_compat";

/// What a file part holds.
#[derive(Debug, Clone, PartialEq)]
pub enum FileContent {
    /// Base64, as sent.
    Bytes(String),
    Uri(String),
}

/// The `file` of a file part.
#[derive(Debug, Clone, PartialEq)]
pub struct File {
    pub content: FileContent,
    pub mime_type: Option<String>,
    pub name: Option<String>,
}

/// What a part holds.
#[derive(Debug, Clone, PartialEq)]
pub enum PartContent03 {
    Text(String),
    File(File),
    /// A JSON object (0.3 data parts are objects).
    Data(Value),
}

/// A `kind`-tagged part.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub content: PartContent03,
    pub metadata: Option<Struct>,
}

impl Serialize for Part {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        match &self.content {
            PartContent03::Text(text) => {
                map.serialize_entry("kind", "text")?;
                map.serialize_entry("text", text)?;
            }
            PartContent03::File(file) => {
                map.serialize_entry("kind", "file")?;
                map.serialize_entry("file", &FileOut(file))?;
            }
            PartContent03::Data(data) => {
                map.serialize_entry("kind", "data")?;
                map.serialize_entry("data", data)?;
            }
        }
        if let Some(metadata) = &self.metadata {
            map.serialize_entry("metadata", metadata)?;
        }
        map.end()
    }
}

struct FileOut<'a>(&'a File);

impl Serialize for FileOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        match &self.0.content {
            FileContent::Bytes(bytes) => map.serialize_entry("bytes", bytes)?,
            FileContent::Uri(uri) => map.serialize_entry("uri", uri)?,
        }
        if let Some(mime_type) = &self.0.mime_type {
            map.serialize_entry("mimeType", mime_type)?;
        }
        if let Some(name) = &self.0.name {
            map.serialize_entry("name", name)?;
        }
        map.end()
    }
}

/// A file as it arrives (the early dialect's `file` has the same fields).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileWire {
    bytes: Option<String>,
    uri: Option<String>,
    #[serde(default, deserialize_with = "empty_as_none")]
    mime_type: Option<String>,
    #[serde(default, deserialize_with = "empty_as_none")]
    name: Option<String>,
}

impl FileWire {
    fn into_file<E: de::Error>(self) -> Result<File, E> {
        let content = match (self.bytes, self.uri) {
            (Some(bytes), None) => FileContent::Bytes(bytes),
            (None, Some(uri)) => FileContent::Uri(uri),
            _ => return Err(E::custom("a file needs exactly one of 'bytes', 'uri'")),
        };
        Ok(File { content, mime_type: self.mime_type, name: self.name })
    }
}

/// A part as it arrives: the tag names the content; without a tag, the one content field present does.
#[derive(Deserialize)]
pub(crate) struct PartWire {
    #[serde(alias = "type")]
    kind: Option<String>,
    text: Option<String>,
    file: Option<FileWire>,
    data: Option<Value>,
    metadata: Option<Struct>,
}

impl PartWire {
    pub(crate) fn into_part<E: de::Error>(self, tag_name: &str) -> Result<Part, E> {
        let kind = match self.kind.as_deref() {
            Some(kind) => kind,
            None => match (&self.text, &self.file, &self.data) {
                (Some(_), None, None) => "text",
                (None, Some(_), None) => "file",
                (None, None, Some(_)) => "data",
                _ => return Err(E::custom(format!("a part needs a '{tag_name}' or one of 'text', 'file', 'data'"))),
            },
        };
        let missing = |field: &str| E::custom(format!("a {kind} part needs '{field}'"));
        let content = match kind {
            "text" => PartContent03::Text(self.text.ok_or_else(|| missing("text"))?),
            "file" => PartContent03::File(self.file.ok_or_else(|| missing("file"))?.into_file()?),
            "data" => PartContent03::Data(self.data.ok_or_else(|| missing("data"))?),
            other => return Err(E::custom(format!("unknown part {tag_name} '{other}': expected text, file or data"))),
        };
        Ok(Part { content, metadata: self.metadata })
    }
}

impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Part, D::Error> {
        PartWire::deserialize(d)?.into_part("kind")
    }
}

/// 1.0 → 0.3/early part (the early dialect's parts hold the same content, tagged `type`).
impl From<model::Part> for Part {
    fn from(part: model::Part) -> Part {
        let mut metadata = part.metadata;
        let file = |content| File { content, mime_type: part.media_type, name: part.filename };
        let content = match part.content {
            PartContent::Text(text) => PartContent03::Text(text),
            PartContent::Raw(bytes) => PartContent03::File(file(FileContent::Bytes(bytes))),
            PartContent::Url(uri) => PartContent03::File(file(FileContent::Uri(uri))),
            PartContent::Data(data @ Value::Object(_)) => PartContent03::Data(data),
            PartContent::Data(other) => {
                metadata.get_or_insert_with(Struct::new).insert(DATA_PART_COMPAT.into(), Value::Bool(true));
                let mut wrapper = Struct::new();
                wrapper.insert("value".into(), other);
                PartContent03::Data(Value::Object(wrapper))
            }
        };
        Part { content, metadata }
    }
}

impl From<Part> for model::Part {
    fn from(part: Part) -> model::Part {
        let mut metadata = part.metadata;
        match part.content {
            PartContent03::Text(text) => model::Part { metadata, ..model::Part::text(text) },
            PartContent03::File(file) => {
                let content = match file.content {
                    FileContent::Bytes(bytes) => PartContent::Raw(bytes),
                    FileContent::Uri(uri) => PartContent::Url(uri),
                };
                model::Part { content, metadata, filename: file.name, media_type: file.mime_type }
            }
            PartContent03::Data(data) => {
                let data = unwrap_compat_data(data, &mut metadata);
                model::Part { metadata, ..model::Part::new(PartContent::Data(data)) }
            }
        }
    }
}

/// Undoes the `{"value": …}` wrapper of a non-object data part, dropping the marker from metadata.
fn unwrap_compat_data(data: Value, metadata: &mut Option<Struct>) -> Value {
    let marked = metadata.as_ref().and_then(|m| m.get(DATA_PART_COMPAT)) == Some(&Value::Bool(true));
    let Value::Object(mut object) = data else { return data };
    if !marked || object.len() != 1 || !object.contains_key("value") {
        return Value::Object(object);
    }
    if let Some(meta) = metadata.as_mut() {
        meta.remove(DATA_PART_COMPAT);
        if meta.is_empty() {
            *metadata = None;
        }
    }
    object.remove("value").unwrap_or(Value::Null)
}

/// A message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    #[serde(default)]
    pub kind: MessageKind,
    #[serde(default)]
    pub message_id: String,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    #[serde(default, deserialize_with = "empty_as_none", skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    pub role: Role,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
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
    pub task_id: String,
    #[serde(default)]
    pub context_id: String,
    pub status: TaskStatus,
    /// The last event of the stream.
    #[serde(default, rename = "final")]
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
    pub task_id: String,
    #[serde(default)]
    pub context_id: String,
    pub artifact: Artifact,
    #[serde(default)]
    pub append: Option<bool>,
    #[serde(default)]
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

    fn part(v: Value) -> Part {
        serde_json::from_value(v).expect("0.3 part")
    }

    #[test]
    fn parts_are_kind_tagged_and_read_without_the_tag_too() {
        let file =
            json!({"kind": "file", "file": {"uri": "https://x/y.png", "mimeType": "image/png", "name": "y.png"}});
        assert_eq!(serde_json::to_value(part(file.clone())).ok(), Some(file));
        assert_eq!(part(json!({"text": "hi"})).content, PartContent03::Text("hi".into()));
        for bad in [
            json!({"kind": "text"}),
            json!({"kind": "image", "text": "x"}),
            json!({"kind": "file", "file": {"bytes": "aGk=", "uri": "https://x"}}),
            json!({"text": "a", "data": {}}),
        ] {
            assert!(serde_json::from_value::<Part>(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn file_parts_become_raw_or_url_parts() {
        let bytes: model::Part = part(json!({"kind": "file", "file": {"bytes": "aGk=", "name": "hi.txt"}})).into();
        assert_eq!(bytes.content, PartContent::Raw("aGk=".into()));
        assert_eq!(bytes.filename.as_deref(), Some("hi.txt"));
        assert_eq!(bytes.media_type, None);
    }

    #[test]
    fn non_object_data_uses_the_sdk_wrapper_both_ways() {
        let list = model::Part::new(PartContent::Data(json!([1, 2])));
        let v03 = Part::from(list.clone());
        assert_eq!(
            serde_json::to_value(&v03).ok(),
            Some(json!({"kind": "data", "data": {"value": [1, 2]}, "metadata": {"data_part_compat": true}}))
        );
        assert_eq!(model::Part::from(v03), list);
        // An object that merely has a "value" key, without the marker, stays as it is.
        let plain: model::Part = part(json!({"kind": "data", "data": {"value": 1}})).into();
        assert_eq!(plain.content, PartContent::Data(json!({"value": 1})));
    }

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
