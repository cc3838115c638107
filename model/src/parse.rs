//! Reading the model from bytes: objects only, and a failure names the offending field by its JSON
//! pointer, so a refusal can tell the caller (or the agent's operator) what to fix.

/// Why bytes did not read as a model value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// Not valid JSON at all.
    #[error("invalid JSON: {0}")]
    Json(String),
    /// Valid JSON that is not the expected object; `pointer` is the JSON pointer of the culprit
    /// (empty for the whole body).
    #[error("{message} (at '{pointer}')")]
    Invalid { pointer: String, message: String },
}

impl ParseError {
    pub fn invalid(pointer: impl Into<String>, message: impl Into<String>) -> ParseError {
        ParseError::Invalid { pointer: pointer.into(), message: message.into() }
    }
}

/// Parses a JSON object into `T`. serde would read a struct from an array too (by position); A2A
/// params and bodies are objects only.
pub fn parse_object<T: serde::de::DeserializeOwned>(json: &[u8]) -> Result<T, ParseError> {
    if json.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') {
        return parse(json);
    }
    Err(not_an_object(json))
}

/// Why `json`, which does not start with `{`, is no object: not JSON at all, or another value.
fn not_an_object(json: &[u8]) -> ParseError {
    crate::passes::read();
    match serde_json::from_slice::<serde::de::IgnoredAny>(json) {
        Err(e) => ParseError::Json(e.to_string()),
        Ok(_) => ParseError::invalid("", "expected a JSON object"),
    }
}

/// Reads the JSON object `json` with `seed`, refusing a key repeated in any object of it in the same
/// pass (see [`strict`](crate::strict)): what a request is read with, so that nothing else need walk
/// it first. As in [`parse`], only a failing body is read again, with the path tracked, to name the
/// offending field.
pub(crate) fn parse_object_strict<'de, S: serde::de::DeserializeSeed<'de> + Copy>(
    json: &'de [u8],
    seed: S,
) -> Result<S::Value, ParseError> {
    if json.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(not_an_object(json));
    }
    crate::passes::read();
    let mut de = serde_json::Deserializer::from_slice(json);
    match seed.deserialize(crate::strict::Strict(&mut de)).and_then(|value| de.end().map(|()| value)) {
        Ok(value) => Ok(value),
        Err(_) => {
            crate::passes::read();
            let mut de = serde_json::Deserializer::from_slice(json);
            let mut track = serde_path_to_error::Track::new();
            let read =
                seed.deserialize(serde_path_to_error::Deserializer::new(crate::strict::Strict(&mut de), &mut track));
            let value = read.map_err(|e| tracked_error(serde_path_to_error::Error::new(track.path(), e)))?;
            de.end().map_err(|e| ParseError::Json(e.to_string()))?;
            Ok(value)
        }
    }
}

/// Parses `json` into `T`, naming the offending field by its JSON pointer.
///
/// The common case, a body that parses, takes serde_json's plain path; only a failure is read again
/// with the path tracked (which allocates a segment per key on the way) to name the culprit. Both
/// reads are the same deterministic deserialization, so the result and the error are as before.
pub fn parse<T: serde::de::DeserializeOwned>(json: &[u8]) -> Result<T, ParseError> {
    crate::passes::read();
    match serde_json::from_slice(json) {
        Ok(value) => Ok(value),
        Err(_) => parse_tracked(json),
    }
}

/// [`parse`] with the path of the offending field tracked.
fn parse_tracked<T: serde::de::DeserializeOwned>(json: &[u8]) -> Result<T, ParseError> {
    crate::passes::read();
    let mut de = serde_json::Deserializer::from_slice(json);
    let value = serde_path_to_error::deserialize(&mut de).map_err(tracked_error)?;
    de.end().map_err(|e| ParseError::Json(e.to_string()))?;
    Ok(value)
}

/// A failed read with its path, as the offending field's pointer and what is wrong with it.
fn tracked_error(e: serde_path_to_error::Error<serde_json::Error>) -> ParseError {
    let pointer = pointer_of(e.path());
    let inner = e.into_inner();
    if inner.is_syntax() || inner.is_eof() {
        ParseError::Json(inner.to_string())
    } else {
        ParseError::Invalid { pointer, message: strip_position(&inner.to_string()) }
    }
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
            ParseError::Invalid { pointer, message } => {
                assert_eq!(pointer, "/items/1/n");
                assert!(message.starts_with("invalid type"), "{message}");
                assert!(!message.contains("line"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn objects_only() {
        assert_eq!(parse_object::<Outer>(br#"[[]]"#).unwrap_err(), ParseError::invalid("", "expected a JSON object"));
        assert!(matches!(parse_object::<Outer>(b"[1"), Err(ParseError::Json(_))));
        assert!(parse_object::<Outer>(br#" {"items": []}"#).is_ok());
    }

    #[test]
    fn syntax_errors_are_json_errors() {
        assert!(matches!(parse::<Outer>(b"{\"items\":"), Err(ParseError::Json(_))));
        assert!(matches!(parse::<Outer>(br#"{"items":[]} x"#), Err(ParseError::Json(_))));
    }
}
