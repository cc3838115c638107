//! Errors in the early dialect: a real HTTP status with a FastAPI-style body `{"detail": "…"}`, as the
//! seed's server sends them (404 unknown task, 400 cancel of a finished task, 409 reused task id, 422 /
//! 400 a body that does not fit).
//!
//! Not carried 1.0 → early: the JSON-RPC code beyond what the status says (several codes share 400) and
//! the ErrorInfo details. Early → 1.0: the kind is inferred from status and operation.

use crate::Operation;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{ErrorKind, ErrorObject};

/// The body of an early error answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EarlyError {
    /// A message, or (FastAPI validation errors) a list of problems.
    pub detail: Value,
}

impl EarlyError {
    pub fn new(detail: impl Into<String>) -> EarlyError {
        EarlyError { detail: Value::String(detail.into()) }
    }
}

/// A 1.0 error as the early answer: (HTTP status, body).
pub fn error_from_v1(error: ErrorObject) -> (u16, EarlyError) {
    let status = error.kind().http_status();
    (status, EarlyError { detail: Value::String(error.message) })
}

/// An early error answer as the 1.0 error: `status` and `operation` tell the kind (a 404 on a call
/// about a task means the task is unknown; a 400 on a cancel that it cannot be canceled).
pub fn error_to_v1(operation: Option<Operation>, status: u16, body: &[u8]) -> ErrorObject {
    let task_call = matches!(
        operation,
        Some(Operation::GetTask | Operation::CancelTask | Operation::SendMessage | Operation::SendStreamingMessage)
    );
    let kind = match status {
        404 if task_call => ErrorKind::TaskNotFound,
        404 | 405 => ErrorKind::MethodNotFound,
        400 if operation == Some(Operation::CancelTask) => ErrorKind::TaskNotCancelable,
        400 | 409 | 422 => ErrorKind::InvalidParams,
        415 => ErrorKind::ContentTypeNotSupported,
        501 => ErrorKind::UnsupportedOperation,
        _ => ErrorKind::Internal,
    };
    ErrorObject::new(kind, detail_text(body).unwrap_or_else(|| kind.default_message().to_owned()))
}

/// The message of an error body: `detail` as a string, the first `msg` of a validation list, or a
/// short plain-text body.
fn detail_text(body: &[u8]) -> Option<String> {
    let Ok(parsed) = serde_json::from_slice::<EarlyError>(body) else {
        let text = std::str::from_utf8(body).ok()?.trim();
        return (!text.is_empty() && text.len() <= 500 && !text.starts_with('<')).then(|| text.to_owned());
    };
    match parsed.detail {
        Value::String(text) => Some(text),
        Value::Array(items) => {
            items.first().and_then(|item| item.get("msg")).and_then(Value::as_str).map(str::to_owned)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_and_operation_tell_the_kind() {
        let kind = |op, status, body: &[u8]| error_to_v1(op, status, body).kind();
        assert_eq!(kind(Some(Operation::GetTask), 404, br#"{"detail":"Task not found"}"#), ErrorKind::TaskNotFound);
        assert_eq!(kind(Some(Operation::CancelTask), 400, b"{}"), ErrorKind::TaskNotCancelable);
        assert_eq!(kind(Some(Operation::SendMessage), 409, b""), ErrorKind::InvalidParams);
        assert_eq!(kind(Some(Operation::SendMessage), 502, b"<html>"), ErrorKind::Internal);
        assert_eq!(kind(None, 404, b""), ErrorKind::MethodNotFound);
    }

    #[test]
    fn keeps_the_agents_message() {
        let e = error_to_v1(Some(Operation::GetTask), 404, br#"{"detail":"no task 42"}"#);
        assert_eq!(e.message, "no task 42");
        let fastapi = br#"{"detail":[{"loc":["body","id"],"msg":"field required","type":"value_error.missing"}]}"#;
        assert_eq!(error_to_v1(Some(Operation::SendMessage), 422, fastapi).message, "field required");
        assert_eq!(error_to_v1(Some(Operation::GetTask), 500, b"").message, "Internal error");
    }

    #[test]
    fn one_0_errors_get_their_http_status() {
        let (status, body) = error_from_v1(ErrorObject::new(ErrorKind::TaskNotFound, "Task not found"));
        assert_eq!((status, body), (404, EarlyError::new("Task not found")));
        let (status, _) = error_from_v1(ErrorObject::new(ErrorKind::TaskNotCancelable, "no"));
        assert_eq!(status, 400);
    }
}
