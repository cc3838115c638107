//! Checks the shape of a send's message, read from the checked model the decoder built (no pass
//! over the body): ids, the number and kinds of parts, their sizes and media types. Pointers in what
//! it reports are relative to the message object (`/messageId`, `/parts/2/text`).
//!
//! The model is what the agent receives — the body is this model written out — so the checks hold
//! for what the agent reads. What the model cannot hold (a part with two kinds or none, a repeated
//! key, an id that is not a string) the decoder has refused before any policy runs.

use std::io;

use a2a_model::{Message, PartContent};
use serde_json::Value;

use super::IdField;
use super::config::Limits;
use super::measure::value_deeper_than;
use super::schema::MAX_VIOLATIONS;
use a2a_core::Violation;

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

/// The rules one message is held to.
pub struct Rules<'r> {
    pub limits: Limits,
    /// Accepted media types; empty accepts any.
    pub modes: &'r [String],
    /// A further rule for ids (e.g. a dialect's), after the syntax rule.
    pub id_rule: &'r dyn Fn(IdField, &str) -> Result<(), String>,
}

/// Checks `message` and returns the `data` of each of its data parts with the part's index: the
/// values a skill's schema applies to. The size limit holds the message as the agent's body will
/// carry it: its length written as JSON, counted without writing it anywhere (the caller's byte
/// count is no bound: a number such as `1e15` is written out longer than it came in).
pub fn check<'a>(message: &'a Message, rules: &Rules<'_>, report: &mut Report) -> Vec<(usize, &'a Value)> {
    let limit = rules.limits.max_message_bytes;
    let size = written_len(message);
    if size > limit {
        report.push("", format!("the message is {size} bytes long; at most {limit} are allowed"));
        return Vec::new();
    }
    check_id(Some(&message.message_id), IdField::MessageId, rules, report);
    check_id(message.task_id.as_deref(), IdField::TaskId, rules, report);
    check_id(message.context_id.as_deref(), IdField::ContextId, rules, report);
    let parts = &message.parts;
    if parts.len() > rules.limits.max_parts {
        let limit = rules.limits.max_parts;
        report.push("/parts", format!("the message has more than {limit} parts; at most {limit} are allowed"));
        return Vec::new();
    }
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

/// The length of `message` written as JSON, as the body for the agent has it.
fn written_len(message: &Message) -> usize {
    struct Count(usize);
    impl io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a model to a counter cannot fail: it has only string keys.
    let _ = serde_json::to_writer(&mut count, message);
    count.0
}

/// The id rule: a non-empty string of at most [`MAX_ID_BYTES`] bytes without control characters,
/// then the configured further rule. `None` is an absent optional id (the model reads an empty one
/// as absent); the message id is always there, empty when the caller sent none.
fn check_id(id: Option<&str>, field: IdField, rules: &Rules<'_>, report: &mut Report) {
    let Some(id) = id else { return };
    let problem = if id.is_empty() {
        Some("must not be empty".to_owned())
    } else if id.len() > MAX_ID_BYTES {
        Some(format!("must be at most {MAX_ID_BYTES} bytes long"))
    } else if id.chars().any(char::is_control) {
        Some("must not contain control characters".to_owned())
    } else {
        (rules.id_rule)(field, id).err()
    };
    if let Some(problem) = problem {
        report.push(field.pointer(), problem);
    }
}

/// Checks one part; returns its `data` when it is a valid data part.
fn check_part<'a>(
    index: usize,
    part: &'a a2a_model::Part,
    rules: &Rules<'_>,
    report: &mut Report,
) -> Option<&'a Value> {
    let at = |field: &str| format!("/parts/{index}{}{field}", if field.is_empty() { "" } else { "/" });
    let before = report.total;
    let limits = &rules.limits;
    let (kind, data) = match &part.content {
        PartContent::Text(text) => {
            if text.len() > limits.max_text_bytes {
                let (len, max) = (text.len(), limits.max_text_bytes);
                report.push(at("text"), format!("the text is {len} bytes long; at most {max} are allowed"));
            }
            ("text/plain", None)
        }
        PartContent::Data(data) => {
            if value_deeper_than(data, limits.max_data_depth) {
                report.push(at("data"), format!("the data is nested more than {} levels deep", limits.max_data_depth));
            }
            ("application/json", Some(data))
        }
        PartContent::Raw(value) | PartContent::Url(value) => {
            if value.is_empty() {
                let name = if matches!(part.content, PartContent::Raw(_)) { "raw" } else { "url" };
                report.push(at(name), "must be a non-empty string");
            }
            (part.media_type.as_deref().unwrap_or("application/octet-stream"), None)
        }
    };
    if !accepts(rules.modes, kind) {
        report
            .push(at(""), format!("this skill does not accept '{kind}' input; it accepts {}", rules.modes.join(", ")));
    }
    if report.total == before { data } else { None }
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
