//! A2A 0.3 parts: `{"kind": "text", "text"}`, `{"kind": "file", "file": {"bytes" | "uri", "mimeType",
//! "name"}}`, `{"kind": "data", "data": {…}}` — shared with the early dialect, whose parts differ only
//! in naming the tag `type`.
//!
//! Not carried from 1.0: `filename` / `mediaType` of text and data parts. A data part that is not a
//! JSON object travels as `{"value": …}` with `metadata.data_part_compat: true` (the SDK's
//! convention), so it comes back whole (but for an empty `metadata: {}`, which comes back absent).

use serde::de::{self, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate as model;
use crate::{PartContent, Struct, empty_as_none};

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
    #[serde(default, deserialize_with = "empty_as_none", alias = "mime_type")]
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
}
