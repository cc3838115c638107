//! Why a body could not be translated, and how the gateway should answer for it.

use a2a_core::A2aError;

/// A body that cannot be carried into another dialect.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TranslateError {
    /// Not valid JSON at all.
    #[error("invalid JSON: {0}")]
    Json(String),
    /// Valid JSON that is not an object of the dialect; `pointer` is the JSON pointer of the culprit
    /// (empty for the whole body).
    #[error("{message} (at '{pointer}')")]
    Invalid { pointer: String, message: String },
    /// A method name or path the dialect does not define.
    #[error("{0}")]
    UnknownOperation(String),
    /// An operation the other dialect has no way to express (e.g. ListTasks towards 0.3).
    #[error("{operation} is not supported by {dialect} agents")]
    Unsupported { operation: &'static str, dialect: &'static str },
}

impl TranslateError {
    pub(crate) fn invalid(pointer: impl Into<String>, message: impl Into<String>) -> TranslateError {
        TranslateError::Invalid { pointer: pointer.into(), message: message.into() }
    }

    /// The refusal for a caller's request that failed to translate.
    pub fn into_request_error(self) -> A2aError {
        match self {
            TranslateError::Json(message) => A2aError::Parse(format!("invalid JSON: {message}")),
            TranslateError::Invalid { .. } => A2aError::invalid_params(self.to_string()),
            TranslateError::UnknownOperation(message) => A2aError::MethodNotFound(message),
            TranslateError::Unsupported { .. } => A2aError::UnsupportedOperation(self.to_string()),
        }
    }

    /// The error for a backend's answer that failed to translate: the agent broke the protocol.
    pub fn into_response_error(self) -> A2aError {
        A2aError::InvalidAgentResponse(format!("the agent's answer is not valid A2A: {self}"))
    }
}

/// Parses a JSON object into `T`. serde would read a struct from an array too (by position); A2A
/// params and bodies are objects only.
pub(crate) fn parse_object<T: serde::de::DeserializeOwned>(json: &[u8]) -> Result<T, TranslateError> {
    if json.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') {
        return parse(json);
    }
    match serde_json::from_slice::<serde::de::IgnoredAny>(json) {
        Err(e) => Err(TranslateError::Json(e.to_string())),
        Ok(_) => Err(TranslateError::invalid("", "expected a JSON object")),
    }
}

/// Parses `json` into `T`, naming the offending field by its JSON pointer.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(json: &[u8]) -> Result<T, TranslateError> {
    let mut de = serde_json::Deserializer::from_slice(json);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let pointer = pointer_of(e.path());
        let inner = e.into_inner();
        if inner.is_syntax() || inner.is_eof() {
            TranslateError::Json(inner.to_string())
        } else {
            TranslateError::Invalid { pointer, message: strip_position(&inner.to_string()) }
        }
    })?;
    de.end().map_err(|e| TranslateError::Json(e.to_string()))?;
    Ok(value)
}

/// `message.parts[0].text` → `/message/parts/0/text`.
fn pointer_of(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut pointer = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => {
                pointer.push('/');
                pointer.push_str(&index.to_string());
            }
            Segment::Map { key } | Segment::Enum { variant: key } => {
                pointer.push('/');
                pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
            }
            Segment::Unknown => {}
        }
    }
    pointer
}

/// serde_json appends " at line 1 column 42"; the pointer says where, and better.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_owned(),
        None => message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Outer {
        items: Vec<Inner>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Inner {
        n: u8,
    }

    #[test]
    fn names_the_field_by_json_pointer() {
        let err = parse::<Outer>(br#"{"items":[{"n":1},{"n":"x"}]}"#).unwrap_err();
        match err {
            TranslateError::Invalid { pointer, message } => {
                assert_eq!(pointer, "/items/1/n");
                assert!(message.starts_with("invalid type"), "{message}");
                assert!(!message.contains("line"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn objects_only() {
        assert_eq!(
            parse_object::<Outer>(br#"[[]]"#).unwrap_err(),
            TranslateError::invalid("", "expected a JSON object")
        );
        assert!(matches!(parse_object::<Outer>(b"[1"), Err(TranslateError::Json(_))));
        assert!(parse_object::<Outer>(br#" {"items": []}"#).is_ok());
    }

    #[test]
    fn syntax_errors_are_json_errors() {
        assert!(matches!(parse::<Outer>(b"{\"items\":"), Err(TranslateError::Json(_))));
        assert!(matches!(parse::<Outer>(br#"{"items":[]} x"#), Err(TranslateError::Json(_))));
    }

    #[test]
    fn maps_to_the_gateway_refusals() {
        let invalid = TranslateError::invalid("/id", "must be a UUID");
        assert!(matches!(invalid.clone().into_request_error(), A2aError::InvalidParams { .. }));
        assert!(matches!(invalid.into_response_error(), A2aError::InvalidAgentResponse(_)));
        let unsupported = TranslateError::Unsupported { operation: "ListTasks", dialect: "A2A 0.3" };
        assert!(matches!(unsupported.into_request_error(), A2aError::UnsupportedOperation(_)));
    }
}
