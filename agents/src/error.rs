//! The A2A errors these agents answer with, and their two encodings: the JSON-RPC error object
//! (`code`, `message`, `data: [google.rpc.ErrorInfo]`) and the HTTP+JSON google.rpc.Status body
//! (`{"error": {code, status, message, details}}`) with its HTTP status.
//!
//! Codes, statuses and reasons follow the reference SDK's tables (see `shared/a2a/SDK-NOTES.md`).

use a2a_model::ErrorKind;
use axum::response::{IntoResponse, Response};
use http::{StatusCode, header};
use serde::Serialize;
use serde_json::Value;

/// Every error an agent can answer with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum A2aError {
    /// The body is not JSON.
    #[error("{0}")]
    Parse(String),
    /// The JSON-RPC envelope is malformed (not an object, wrong `jsonrpc`, no `method`).
    #[error("{0}")]
    InvalidRequest(String),
    #[error("Method not found")]
    MethodNotFound,
    #[error("{0}")]
    InvalidParams(String),
    #[error("{0}")]
    Internal(String),
    #[error("Task not found")]
    TaskNotFound,
    #[error("Task cannot be canceled")]
    TaskNotCancelable,
    #[error("Push Notification is not supported")]
    PushNotificationNotSupported,
    #[error("{0}")]
    UnsupportedOperation(String),
    #[error("Authenticated Extended Card is not configured")]
    ExtendedAgentCardNotConfigured,
    /// Carries the version the caller asked for (`0.3` when the header is missing).
    #[error("A2A version '{0}' is not supported by this handler. Expected version '1.0'.")]
    VersionNotSupported(String),
}

impl A2aError {
    /// The specification's kind of this error, whose table (a2a_model's) gives code, HTTP status and
    /// reason.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Parse(_) => ErrorKind::Parse,
            Self::InvalidRequest(_) => ErrorKind::InvalidRequest,
            Self::MethodNotFound => ErrorKind::MethodNotFound,
            Self::InvalidParams(_) => ErrorKind::InvalidParams,
            Self::Internal(_) => ErrorKind::Internal,
            Self::TaskNotFound => ErrorKind::TaskNotFound,
            Self::TaskNotCancelable => ErrorKind::TaskNotCancelable,
            Self::PushNotificationNotSupported => ErrorKind::PushNotificationNotSupported,
            Self::UnsupportedOperation(_) => ErrorKind::UnsupportedOperation,
            Self::ExtendedAgentCardNotConfigured => ErrorKind::ExtendedAgentCardNotConfigured,
            Self::VersionNotSupported(_) => ErrorKind::VersionNotSupported,
        }
    }

    /// The JSON-RPC error code.
    pub fn code(&self) -> i64 {
        self.kind().code()
    }

    /// HTTP status and google.rpc status name of the HTTP+JSON binding.
    pub fn http_status(&self) -> (StatusCode, &'static str) {
        let status = StatusCode::from_u16(self.kind().http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let name = match self {
            Self::Parse(_) | Self::InvalidRequest(_) | Self::InvalidParams(_) => "INVALID_ARGUMENT",
            Self::MethodNotFound | Self::TaskNotFound => "NOT_FOUND",
            Self::Internal(_) => "INTERNAL",
            Self::TaskNotCancelable
            | Self::PushNotificationNotSupported
            | Self::UnsupportedOperation(_)
            | Self::ExtendedAgentCardNotConfigured
            | Self::VersionNotSupported(_) => "FAILED_PRECONDITION",
        };
        (status, name)
    }

    /// The `google.rpc.ErrorInfo.reason`.
    pub fn reason(&self) -> &'static str {
        match self {
            // The SDK's REST handler reports unreadable JSON as an invalid request.
            Self::Parse(_) => "INVALID_REQUEST",
            other => other.kind().reason().unwrap_or("INTERNAL_ERROR"),
        }
    }

    /// JSON-RPC protocol-level errors carry no ErrorInfo in the SDK; A2A errors do.
    fn has_error_info_in_jsonrpc(&self) -> bool {
        !matches!(self, Self::Parse(_) | Self::InvalidRequest(_) | Self::MethodNotFound)
    }

    fn error_info(&self) -> [ErrorInfo; 1] {
        [ErrorInfo {
            type_url: "type.googleapis.com/google.rpc.ErrorInfo",
            reason: self.reason(),
            domain: "a2a-protocol.org",
            metadata: serde_json::Map::new(),
        }]
    }

    /// The `error` member of a JSON-RPC response.
    pub fn jsonrpc_object(&self) -> JsonRpcErrorObject {
        JsonRpcErrorObject {
            code: self.code(),
            message: self.to_string(),
            data: self.has_error_info_in_jsonrpc().then(|| self.error_info()),
        }
    }

    /// The google.rpc.Status body of the HTTP+JSON binding.
    pub fn rest_body(&self) -> RestErrorBody {
        let (status, name) = self.http_status();
        let message = match self {
            Self::Parse(detail) => format!("Failed to load JSON: {detail}"),
            other => other.to_string(),
        };
        RestErrorBody { error: RestStatus { code: status.as_u16(), status: name, message, details: self.error_info() } }
    }
}

/// `google.rpc.ErrorInfo` as ProtoJSON renders an `Any`.
#[derive(Debug, Serialize)]
pub struct ErrorInfo {
    #[serde(rename = "@type")]
    type_url: &'static str,
    reason: &'static str,
    domain: &'static str,
    metadata: serde_json::Map<String, Value>,
}

/// The JSON-RPC `error` object, fields in the SDK's order.
#[derive(Debug, Serialize)]
pub struct JsonRpcErrorObject {
    code: i64,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<[ErrorInfo; 1]>,
}

/// The HTTP+JSON error body.
#[derive(Debug, Serialize)]
pub struct RestErrorBody {
    error: RestStatus,
}

#[derive(Debug, Serialize)]
struct RestStatus {
    code: u16,
    status: &'static str,
    message: String,
    details: [ErrorInfo; 1],
}

/// An [`A2aError`] answered in the HTTP+JSON dialect.
pub struct RestError(pub A2aError);

impl IntoResponse for RestError {
    fn into_response(self) -> Response {
        let (status, _) = self.0.http_status();
        let body = serde_json::to_vec(&self.0.rest_body()).unwrap_or_default();
        // The SDK sends errors as plain application/json, successes as application/a2a+json.
        (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
    }
}

impl From<A2aError> for RestError {
    fn from(error: A2aError) -> Self {
        Self(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn value(item: impl Serialize) -> Value {
        serde_json::to_value(item).unwrap_or_default()
    }

    #[test]
    fn jsonrpc_task_not_found_matches_capture() {
        let text = serde_json::to_string(&A2aError::TaskNotFound.jsonrpc_object()).unwrap_or_default();
        assert_eq!(
            text,
            r#"{"code":-32001,"message":"Task not found","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{}}]}"#
        );
    }

    #[test]
    fn protocol_errors_have_no_data() {
        assert_eq!(
            value(A2aError::MethodNotFound.jsonrpc_object()),
            json!({"code": -32601, "message": "Method not found"})
        );
        assert!(value(A2aError::Parse("x".into()).jsonrpc_object()).get("data").is_none());
    }

    #[test]
    fn rest_not_cancelable_matches_capture() {
        let text = serde_json::to_string(&A2aError::TaskNotCancelable.rest_body()).unwrap_or_default();
        assert_eq!(
            text,
            r#"{"error":{"code":400,"status":"FAILED_PRECONDITION","message":"Task cannot be canceled","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_CANCELABLE","domain":"a2a-protocol.org","metadata":{}}]}}"#
        );
    }

    #[test]
    fn rest_version_error_matches_capture() {
        let body = value(A2aError::VersionNotSupported("0.3".into()).rest_body());
        assert_eq!(body["error"]["code"], 400);
        assert_eq!(body["error"]["status"], "FAILED_PRECONDITION");
        assert_eq!(
            body["error"]["message"],
            "A2A version '0.3' is not supported by this handler. Expected version '1.0'."
        );
        assert_eq!(body["error"]["details"][0]["reason"], "VERSION_NOT_SUPPORTED");
    }

    /// Codes, statuses and reasons are the model's table, but for a bad body's reason (the SDK's).
    #[test]
    fn codes_statuses_and_reasons() {
        let rows = [
            (A2aError::Parse("x".into()), -32700, 400, "INVALID_REQUEST"),
            (A2aError::InvalidRequest("x".into()), -32600, 400, "INVALID_REQUEST"),
            (A2aError::MethodNotFound, -32601, 404, "METHOD_NOT_FOUND"),
            (A2aError::InvalidParams("x".into()), -32602, 400, "INVALID_PARAMS"),
            (A2aError::Internal("x".into()), -32603, 500, "INTERNAL_ERROR"),
            (A2aError::TaskNotFound, -32001, 404, "TASK_NOT_FOUND"),
            (A2aError::TaskNotCancelable, -32002, 400, "TASK_NOT_CANCELABLE"),
            (A2aError::PushNotificationNotSupported, -32003, 400, "PUSH_NOTIFICATION_NOT_SUPPORTED"),
            (A2aError::UnsupportedOperation("x".into()), -32004, 400, "UNSUPPORTED_OPERATION"),
            (A2aError::ExtendedAgentCardNotConfigured, -32007, 400, "EXTENDED_AGENT_CARD_NOT_CONFIGURED"),
            (A2aError::VersionNotSupported("0.3".into()), -32009, 400, "VERSION_NOT_SUPPORTED"),
        ];
        for (error, code, status, reason) in rows {
            assert_eq!(
                (error.code(), error.http_status().0.as_u16(), error.reason()),
                (code, status, reason),
                "{error:?}"
            );
        }
    }

    #[test]
    fn rest_bad_json_is_invalid_request() {
        let body = value(A2aError::Parse("EOF".into()).rest_body());
        assert_eq!(body["error"]["status"], "INVALID_ARGUMENT");
        assert_eq!(body["error"]["message"], "Failed to load JSON: EOF");
        assert_eq!(body["error"]["details"][0]["reason"], "INVALID_REQUEST");
    }
}
