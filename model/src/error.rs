//! Errors in the internal model: the A2A 1.0 JSON-RPC error object, and the kinds of error the
//! specification names, with their code, HTTP status and ErrorInfo reason in every dialect's terms.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// An error the specification names (or another JSON-RPC code, kept as is).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    Parse,
    InvalidRequest,
    MethodNotFound,
    InvalidParams,
    Internal,
    TaskNotFound,
    TaskNotCancelable,
    PushNotificationNotSupported,
    UnsupportedOperation,
    ContentTypeNotSupported,
    InvalidAgentResponse,
    ExtendedAgentCardNotConfigured,
    ExtensionSupportRequired,
    VersionNotSupported,
    /// A code outside the specification (an agent's own, or a gateway policy's).
    Other(i64),
}

/// code, HTTP status (HTTP+JSON and the early dialect), ErrorInfo reason, the SDK's default message.
const TABLE: &[(ErrorKind, i64, u16, &str, &str)] = &[
    (ErrorKind::Parse, -32700, 400, "PARSE_ERROR", "Invalid JSON payload"),
    (ErrorKind::InvalidRequest, -32600, 400, "INVALID_REQUEST", "Request payload validation error"),
    (ErrorKind::MethodNotFound, -32601, 404, "METHOD_NOT_FOUND", "Method not found"),
    (ErrorKind::InvalidParams, -32602, 400, "INVALID_PARAMS", "Invalid parameters"),
    (ErrorKind::Internal, -32603, 500, "INTERNAL_ERROR", "Internal error"),
    (ErrorKind::TaskNotFound, -32001, 404, "TASK_NOT_FOUND", "Task not found"),
    (ErrorKind::TaskNotCancelable, -32002, 400, "TASK_NOT_CANCELABLE", "Task cannot be canceled"),
    (
        ErrorKind::PushNotificationNotSupported,
        -32003,
        400,
        "PUSH_NOTIFICATION_NOT_SUPPORTED",
        "Push Notification is not supported",
    ),
    (ErrorKind::UnsupportedOperation, -32004, 400, "UNSUPPORTED_OPERATION", "This operation is not supported"),
    (ErrorKind::ContentTypeNotSupported, -32005, 400, "CONTENT_TYPE_NOT_SUPPORTED", "Incompatible content types"),
    (ErrorKind::InvalidAgentResponse, -32006, 500, "INVALID_AGENT_RESPONSE", "Invalid agent response"),
    (
        ErrorKind::ExtendedAgentCardNotConfigured,
        -32007,
        400,
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
        "Extended Agent Card is not configured",
    ),
    (ErrorKind::ExtensionSupportRequired, -32008, 400, "EXTENSION_SUPPORT_REQUIRED", "Extension support required"),
    (ErrorKind::VersionNotSupported, -32009, 400, "VERSION_NOT_SUPPORTED", "Version not supported"),
];

impl ErrorKind {
    fn row(self) -> Option<&'static (ErrorKind, i64, u16, &'static str, &'static str)> {
        TABLE.iter().find(|row| row.0 == self)
    }

    pub fn from_code(code: i64) -> ErrorKind {
        TABLE.iter().find(|row| row.1 == code).map_or(ErrorKind::Other(code), |row| row.0)
    }

    /// The kind an ErrorInfo reason names.
    pub fn from_reason(reason: &str) -> Option<ErrorKind> {
        TABLE.iter().find(|row| row.3 == reason).map(|row| row.0)
    }

    pub fn code(self) -> i64 {
        match self {
            ErrorKind::Other(code) => code,
            kind => kind.row().map_or(-32603, |row| row.1),
        }
    }

    /// The HTTP status of this error on a REST binding.
    pub fn http_status(self) -> u16 {
        match self {
            // The JSON-RPC server-error range is the implementation's own; treat it as a server fault.
            ErrorKind::Other(_) => 500,
            kind => kind.row().map_or(500, |row| row.2),
        }
    }

    pub fn reason(self) -> Option<&'static str> {
        self.row().map(|row| row.3)
    }

    pub fn default_message(self) -> &'static str {
        self.row().map_or("Error", |row| row.4)
    }

    /// Whether A2A 0.3 defines this error (it lacks the two added in 1.0).
    pub fn known_to_v03(self) -> bool {
        !matches!(self, ErrorKind::ExtensionSupportRequired | ErrorKind::VersionNotSupported | ErrorKind::Other(_))
    }
}

/// A JSON-RPC 2.0 error object as A2A 1.0 writes it: `data` is a list of google.rpc detail objects,
/// the first an ErrorInfo naming the reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    pub code: i64,
    #[serde(default)]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error of `kind` in the 1.0 shape, with its ErrorInfo.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> ErrorObject {
        let data = kind.reason().map(|reason| {
            json!([{
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": reason,
                "domain": "a2a-protocol.org",
                "metadata": {},
            }])
        });
        ErrorObject { code: kind.code(), message: message.into(), data }
    }

    pub fn kind(&self) -> ErrorKind {
        ErrorKind::from_code(self.code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_sdk_capture() {
        // jsonrpc-1.0-20-error-GetTask-not-found.txt
        let expected = json!({"code": -32001, "message": "Task not found", "data": [{
            "@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND",
            "domain": "a2a-protocol.org", "metadata": {}}]});
        let error = ErrorObject::new(ErrorKind::TaskNotFound, ErrorKind::TaskNotFound.default_message());
        assert_eq!(serde_json::to_value(&error).ok(), Some(expected));
    }

    #[test]
    fn every_kind_round_trips_through_its_code_and_reason() {
        for row in TABLE {
            assert_eq!(ErrorKind::from_code(row.0.code()), row.0);
            assert_eq!(ErrorKind::from_reason(row.3), Some(row.0));
        }
        assert_eq!(ErrorKind::from_code(-32040), ErrorKind::Other(-32040));
        assert_eq!(ErrorKind::Other(-32040).code(), -32040);
        assert_eq!(ErrorKind::TaskNotFound.http_status(), 404);
        assert!(!ErrorKind::VersionNotSupported.known_to_v03());
        assert!(ErrorKind::ExtendedAgentCardNotConfigured.known_to_v03());
    }
}
