//! Why a body could not be translated, and how the gateway should answer for it.

use a2a_core::A2aError;
use a2a_model::ParseError;

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

impl From<ParseError> for TranslateError {
    fn from(error: ParseError) -> TranslateError {
        match error {
            ParseError::Json(message) => TranslateError::Json(message),
            ParseError::Invalid { pointer, message } => TranslateError::Invalid { pointer, message },
        }
    }
}

/// [`a2a_model::parse_object`], failing as a [`TranslateError`].
pub(crate) fn parse_object<T: serde::de::DeserializeOwned>(json: &[u8]) -> Result<T, TranslateError> {
    Ok(a2a_model::parse_object(json)?)
}

/// [`a2a_model::parse`], failing as a [`TranslateError`].
pub(crate) fn parse<T: serde::de::DeserializeOwned>(json: &[u8]) -> Result<T, TranslateError> {
    Ok(a2a_model::parse(json)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_errors_keep_their_pointer() {
        assert_eq!(
            parse_object::<serde_json::Value>(b"[]").unwrap_err(),
            TranslateError::invalid("", "expected a JSON object")
        );
        assert!(matches!(parse::<serde_json::Value>(b"{"), Err(TranslateError::Json(_))));
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
