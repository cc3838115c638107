//! The `review-pr` skill's input: its JSON Schema (published on the card as the `inputSchema`
//! extension field) and a hand-written check of exactly that schema.

use a2a_model::Message;
use serde_json::{Map, Value, json};

use super::findings::{self, Finding, Focus};
use crate::error::A2aError;
use crate::model::{MessageExt, part_text};

const MAX_DIFF_CHARS: usize = 1_000_000;
const MAX_TITLE_CHARS: usize = 300;

/// JSON Schema (draft 2020-12) of the first data part the skill accepts.
pub fn input_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "required": ["diff"],
        "additionalProperties": false,
        "properties": {
            "diff": {"type": "string", "minLength": 1, "maxLength": MAX_DIFF_CHARS},
            "title": {"type": "string", "maxLength": MAX_TITLE_CHARS},
            "focus": {
                "type": "array",
                "items": {"type": "string", "enum": ["security", "correctness", "performance", "style"]},
                "uniqueItems": true
            },
            "language": {"type": "string"}
        }
    })
}

/// A validated review request.
#[derive(Debug, Default, PartialEq)]
pub struct ReviewInput {
    /// `None` for a text-only request, which gets example findings.
    pub diff: Option<String>,
    pub title: Option<String>,
    pub focus: Vec<Focus>,
}

impl ReviewInput {
    /// Reads the first data part, if any, checking it against [`input_schema`].
    pub fn from_message(message: &Message) -> Result<Self, A2aError> {
        match message.first_data() {
            None => Ok(Self::default()),
            Some(Value::Object(fields)) => Self::from_fields(fields).map_err(|why| {
                A2aError::InvalidParams(format!("review-pr input does not match its inputSchema: {why}"))
            }),
            Some(_) => Err(A2aError::InvalidParams(
                "review-pr input does not match its inputSchema: the data part must be an object".into(),
            )),
        }
    }

    fn from_fields(fields: &Map<String, Value>) -> Result<Self, String> {
        if let Some(extra) = fields.keys().find(|key| !matches!(key.as_str(), "diff" | "title" | "focus" | "language"))
        {
            return Err(format!("unknown property {extra:?}"));
        }
        let diff = match fields.get("diff") {
            None => return Err("missing required property \"diff\"".into()),
            Some(value) => string(value, "diff", 1, MAX_DIFF_CHARS)?,
        };
        let title = fields.get("title").map(|value| string(value, "title", 0, MAX_TITLE_CHARS)).transpose()?;
        if let Some(language) = fields.get("language") {
            string(language, "language", 0, usize::MAX)?;
        }
        let focus = fields.get("focus").map(focus_list).transpose()?.unwrap_or_default();
        Ok(Self { diff: Some(diff), title, focus })
    }

    pub fn findings(&self) -> Vec<Finding> {
        match &self.diff {
            Some(diff) => findings::scan(diff, &self.focus),
            None => findings::examples(),
        }
    }

    /// What the report names the change: the title, else the message's first text part.
    pub fn pr_name(&self, message: &Message) -> String {
        self.title.clone().or_else(|| message.parts.iter().find_map(part_text).map(str::to_owned)).unwrap_or_default()
    }
}

/// A string of `min..=max` characters (JSON Schema counts code points).
fn string(value: &Value, name: &str, min: usize, max: usize) -> Result<String, String> {
    let text = value.as_str().ok_or_else(|| format!("\"{name}\" must be a string"))?;
    let chars = text.chars().count();
    if chars < min {
        return Err(format!("\"{name}\" must not be empty"));
    }
    if chars > max {
        return Err(format!("\"{name}\" is longer than {max} characters"));
    }
    Ok(text.to_owned())
}

fn focus_list(value: &Value) -> Result<Vec<Focus>, String> {
    let items = value.as_array().ok_or_else(|| "\"focus\" must be an array".to_owned())?;
    let mut focus = Vec::with_capacity(items.len());
    for item in items {
        let parsed = item
            .as_str()
            .and_then(Focus::parse)
            .ok_or_else(|| "\"focus\" items must be one of security, correctness, performance, style".to_owned())?;
        if focus.contains(&parsed) {
            return Err("\"focus\" items must be unique".into());
        }
        focus.push(parsed);
    }
    Ok(focus)
}

#[cfg(test)]
mod tests {
    use a2a_model::{Part, Role};

    use super::*;

    use crate::model::{agent_text, data_part};

    fn message(parts: Vec<Part>) -> Message {
        Message { role: Role::User, parts, ..agent_text("t", "c", "") }
    }

    fn check(data: Value) -> Result<ReviewInput, A2aError> {
        ReviewInput::from_message(&message(vec![data_part(data)]))
    }

    #[test]
    fn text_only_requests_are_fine() {
        let input = ReviewInput::from_message(&message(vec![Part::text("PR #123")])).expect("ok");
        assert_eq!(input, ReviewInput::default());
        assert_eq!(input.findings().len(), 2);
    }

    #[test]
    fn accepts_what_the_schema_accepts() {
        let input = check(json!({"diff": "+x", "title": "t", "focus": ["style", "security"], "language": "rust"}))
            .expect("valid");
        assert_eq!(input.focus, [Focus::Style, Focus::Security]);
        assert_eq!(input.title.as_deref(), Some("t"));
    }

    #[test]
    fn rejects_what_the_schema_rejects() {
        for bad in [
            json!({}),
            json!({"diff": ""}),
            json!({"diff": 42}),
            json!({"diff": "x", "extra": true}),
            json!({"diff": "x", "title": "t".repeat(301)}),
            json!({"diff": "x", "focus": ["speed"]}),
            json!({"diff": "x", "focus": ["style", "style"]}),
            json!({"diff": "x", "focus": "style"}),
            json!({"diff": "x", "language": 3}),
            json!(["diff"]),
        ] {
            assert!(matches!(check(bad.clone()), Err(A2aError::InvalidParams(_))), "{bad}");
        }
    }

    #[test]
    fn pr_name_prefers_the_title() {
        let with_title = message(vec![Part::text("first"), data_part(json!({"diff": "x", "title": "Fix"}))]);
        let input = ReviewInput::from_message(&with_title).expect("valid");
        assert_eq!(input.pr_name(&with_title), "Fix");
        let text_only = message(vec![Part::text("PR #9")]);
        assert_eq!(ReviewInput::default().pr_name(&text_only), "PR #9");
    }
}
