//! Reads the message of a send request — only the fields validation needs, borrowed from the body —
//! and checks its shape: ids, the number and kinds of parts, their sizes and media types.
//! Pointers in what it reports are relative to the message object (`/messageId`, `/parts/2/text`).

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::IdField;
use super::config::Limits;
use super::measure::{nested_deeper_than, unescaped_len};
use super::schema::MAX_VIOLATIONS;
use a2a_core::{A2aError, Binding, Violation};

/// Longest id accepted, in bytes.
pub const MAX_ID_BYTES: usize = 256;

/// Violations found so far: the first [`MAX_VIOLATIONS`] in full, and how many there were.
#[derive(Debug, Default)]
pub struct Report {
    pub found: Vec<Violation>,
    pub total: usize,
}

impl Report {
    pub fn push(&mut self, pointer: impl Into<String>, description: impl Into<String>) {
        self.total += 1;
        if self.found.len() < MAX_VIOLATIONS {
            self.found.push(Violation { pointer: pointer.into(), description: description.into() });
        }
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }
}

/// A string borrowed from the body when it has no escapes, decoded otherwise.
struct Str<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Str<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StrVisitor;
        impl<'de> Visitor<'de> for StrVisitor {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(s.to_owned())))
            }
        }
        deserializer.deserialize_str(StrVisitor)
    }
}

#[derive(Deserialize)]
struct RpcRequest<'a> {
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct SendRequest<'a> {
    #[serde(borrow, default)]
    message: Option<&'a RawValue>,
}

/// The message of a send request: JSON-RPC `params.message`, or the HTTP+JSON body's `message`.
pub fn message_of(binding: Binding, body: &[u8]) -> Result<&RawValue, A2aError> {
    let unreadable = |_| A2aError::invalid_params("the request's params cannot be read");
    let send: SendRequest<'_> = match binding {
        Binding::JsonRpc => {
            let request: RpcRequest<'_> = serde_json::from_slice(body).map_err(unreadable)?;
            let params = request.params.ok_or_else(|| A2aError::invalid_params("a send request needs params"))?;
            serde_json::from_str(params.get()).map_err(unreadable)?
        }
        Binding::Rest => serde_json::from_slice(body).map_err(unreadable)?,
    };
    send.message.ok_or_else(|| A2aError::invalid_params("a send request needs a message"))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageFields<'a> {
    #[serde(borrow, default)]
    message_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    task_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    context_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    parts: Option<&'a RawValue>,
}

/// The rules one message is held to.
pub struct Rules<'r> {
    pub limits: Limits,
    /// Accepted media types; empty accepts any.
    pub modes: &'r [String],
    /// A further rule for ids (e.g. a dialect's), after the syntax rule.
    pub id_rule: &'r dyn Fn(IdField, &str) -> Result<(), String>,
}

/// Checks `message` and returns the `data` of each of its data parts with the part's index: the
/// values a skill's schema applies to.
pub fn check<'a>(message: &'a RawValue, rules: &Rules<'_>, report: &mut Report) -> Vec<(usize, &'a RawValue)> {
    let size = message.get().len();
    if size > rules.limits.max_message_bytes {
        let limit = rules.limits.max_message_bytes;
        report.push("", format!("the message is {size} bytes long; at most {limit} are allowed"));
        return Vec::new();
    }
    let fields: MessageFields<'a> = match serde_json::from_str(message.get()) {
        Ok(fields) => fields,
        Err(error) => {
            report.push("", format!("the message must be an object with distinct fields ({error})"));
            return Vec::new();
        }
    };
    check_id(fields.message_id, IdField::MessageId, true, rules, report);
    check_id(fields.task_id, IdField::TaskId, false, rules, report);
    check_id(fields.context_id, IdField::ContextId, false, rules, report);
    let Some(parts) = fields.parts else {
        report.push("/parts", "a message needs at least one part");
        return Vec::new();
    };
    let too_many = Cell::new(false);
    let seed = PartsSeed { max: rules.limits.max_parts, too_many: &too_many };
    let parts = match seed.deserialize(&mut serde_json::Deserializer::from_str(parts.get())) {
        Ok(parts) => parts,
        Err(_) if too_many.get() => {
            let limit = rules.limits.max_parts;
            report.push("/parts", format!("the message has more than {limit} parts; at most {limit} are allowed"));
            return Vec::new();
        }
        Err(_) => {
            report.push("/parts", "must be an array of parts");
            return Vec::new();
        }
    };
    if parts.is_empty() {
        report.push("/parts", "a message needs at least one part");
    }
    let mut data_parts = Vec::new();
    for (index, part) in parts.iter().enumerate() {
        if let Some(data) = check_part(index, part, rules, report) {
            data_parts.push((index, data));
        }
    }
    data_parts
}

/// The id rule: a non-empty string of at most [`MAX_ID_BYTES`] bytes without control characters,
/// then the configured further rule. `null` counts as absent.
fn check_id(raw: Option<&RawValue>, field: IdField, required: bool, rules: &Rules<'_>, report: &mut Report) {
    let pointer = field.pointer();
    let Some(raw) = raw else {
        if required {
            report.push(pointer, "required");
        }
        return;
    };
    let Ok(Str(id)) = serde_json::from_str::<Str<'_>>(raw.get()) else {
        report.push(pointer, "must be a string");
        return;
    };
    let problem = if id.is_empty() {
        Some("must not be empty".to_owned())
    } else if id.len() > MAX_ID_BYTES {
        Some(format!("must be at most {MAX_ID_BYTES} bytes long"))
    } else if id.chars().any(char::is_control) {
        Some("must not contain control characters".to_owned())
    } else {
        (rules.id_rule)(field, &id).err()
    };
    if let Some(problem) = problem {
        report.push(pointer, problem);
    }
}

/// Collects parts, giving up (with `too_many` set) as soon as there are more than `max`, so that a
/// message of a million empty parts costs no more than one of `max`.
struct PartsSeed<'c> {
    max: usize,
    too_many: &'c Cell<bool>,
}

impl<'de> DeserializeSeed<'de> for PartsSeed<'_> {
    type Value = Vec<&'de RawValue>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for PartsSeed<'_> {
    type Value = Vec<&'de RawValue>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of parts")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut parts = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(self.max));
        while let Some(part) = seq.next_element::<&'de RawValue>()? {
            if parts.len() == self.max {
                self.too_many.set(true);
                return Err(de::Error::custom("too many parts"));
            }
            parts.push(part);
        }
        Ok(parts)
    }
}

/// The fields of one part, as found (duplicates and unknown fields noted, not refused by serde).
#[derive(Default)]
struct Part<'a> {
    text: Option<&'a RawValue>,
    raw: Option<&'a RawValue>,
    url: Option<&'a RawValue>,
    data: Option<&'a RawValue>,
    media_type: Option<&'a RawValue>,
    kinds: usize,
    unknown: Option<Cow<'a, str>>,
    duplicate: Option<&'static str>,
}

/// The part fields A2A 1.0 defines: one kind field, and these.
const OTHER_FIELDS: [&str; 2] = ["metadata", "filename"];

impl<'de> Deserialize<'de> for Part<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct PartVisitor;
        impl<'de> Visitor<'de> for PartVisitor {
            type Value = Part<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a part object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Part<'de>, A::Error> {
                let mut part = Part::default();
                while let Some(Str(key)) = map.next_key::<Str<'de>>()? {
                    let value: &'de RawValue = map.next_value()?;
                    let (name, slot, is_kind) = match key.as_ref() {
                        "text" => ("text", &mut part.text, true),
                        "raw" => ("raw", &mut part.raw, true),
                        "url" => ("url", &mut part.url, true),
                        "data" => ("data", &mut part.data, true),
                        "mediaType" => ("mediaType", &mut part.media_type, false),
                        other if OTHER_FIELDS.contains(&other) => continue,
                        _ => {
                            part.unknown.get_or_insert(key);
                            continue;
                        }
                    };
                    if slot.replace(value).is_some() {
                        part.duplicate.get_or_insert(name);
                    } else if is_kind {
                        part.kinds += 1;
                    }
                }
                Ok(part)
            }
        }
        deserializer.deserialize_map(PartVisitor)
    }
}

/// Checks one part; returns its `data` when it is a valid data part.
fn check_part<'a>(index: usize, raw: &'a RawValue, rules: &Rules<'_>, report: &mut Report) -> Option<&'a RawValue> {
    let at = |field: &str| format!("/parts/{index}{}{field}", if field.is_empty() { "" } else { "/" });
    let Ok(part) = serde_json::from_str::<Part<'a>>(raw.get()) else {
        report.push(at(""), "a part must be an object");
        return None;
    };
    let before = report.total;
    if let Some(unknown) = &part.unknown {
        report.push(
            at(&escape(unknown)),
            "unknown part field; a part holds exactly one of text, raw, url, data, \
             and optionally metadata, filename, mediaType",
        );
    }
    if let Some(name) = part.duplicate {
        report.push(at(name), "the field appears more than once");
    }
    match part.kinds {
        0 => report.push(at(""), "a part must hold one of text, raw, url, data"),
        1 => {}
        _ => report.push(at(""), "a part must hold exactly one of text, raw, url, data"),
    }
    let media_type = match part.media_type.map(|raw| serde_json::from_str::<Str<'_>>(raw.get())) {
        None => None,
        Some(Ok(Str(media_type))) => Some(media_type),
        Some(Err(_)) => {
            report.push(at("mediaType"), "must be a string");
            None
        }
    };
    let limits = &rules.limits;
    let kind = if let Some(text) = part.text {
        match unescaped_len(text.get()) {
            None => report.push(at("text"), "must be a string"),
            Some(len) if len > limits.max_text_bytes => report.push(
                at("text"),
                format!("the text is {len} bytes long; at most {} are allowed", limits.max_text_bytes),
            ),
            Some(_) => {}
        }
        "text/plain"
    } else if let Some(data) = part.data {
        if nested_deeper_than(data.get().as_bytes(), limits.max_data_depth) {
            report.push(at("data"), format!("the data is nested more than {} levels deep", limits.max_data_depth));
        }
        "application/json"
    } else {
        let (name, value) = match (part.raw, part.url) {
            (Some(raw), _) => ("raw", raw),
            (None, Some(url)) => ("url", url),
            (None, None) => return None,
        };
        if unescaped_len(value.get()).is_none_or(|len| len == 0) {
            report.push(at(name), "must be a non-empty string");
        }
        media_type.as_deref().unwrap_or("application/octet-stream")
    };
    if !accepts(rules.modes, kind) {
        report
            .push(at(""), format!("this skill does not accept '{kind}' input; it accepts {}", rules.modes.join(", ")));
    }
    if report.total == before { part.data } else { None }
}

/// Whether a media type is among `modes` (`type/subtype`, `type/*`, `*/*`; case and parameters
/// ignored). No modes at all accepts anything.
pub fn accepts(modes: &[String], media_type: &str) -> bool {
    fn essence(media_type: &str) -> &str {
        media_type.split(';').next().unwrap_or("").trim()
    }
    let wanted = essence(media_type);
    let wanted_type = wanted.split('/').next().unwrap_or("");
    modes.is_empty()
        || modes.iter().any(|mode| {
            let mode = essence(mode);
            mode == "*/*"
                || mode.eq_ignore_ascii_case(wanted)
                || mode.strip_suffix("/*").is_some_and(|kind| kind.eq_ignore_ascii_case(wanted_type))
        })
}

/// RFC 6901 escaping of one pointer segment.
fn escape(segment: &str) -> Cow<'_, str> {
    if segment.contains(['~', '/']) {
        Cow::Owned(segment.replace('~', "~0").replace('/', "~1"))
    } else {
        Cow::Borrowed(segment)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types_match_exactly_or_by_wildcard() {
        let modes = vec!["text/plain".to_owned(), "image/*".to_owned()];
        assert!(accepts(&modes, "text/plain"));
        assert!(accepts(&modes, "Text/Plain; charset=utf-8"));
        assert!(accepts(&modes, "image/png"));
        assert!(!accepts(&modes, "application/json"));
        assert!(accepts(&["*/*".to_owned()], "application/pdf"));
        assert!(accepts(&[], "application/pdf"));
    }
}
