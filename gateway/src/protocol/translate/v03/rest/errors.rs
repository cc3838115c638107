//! Errors in the 0.3 HTTP+JSON binding: the HTTP status of a 0.3 JSON-RPC error code and back.

use a2a_core::Operation;
use serde_json::{Value, json};

/// The body of a 0.3 HTTP+JSON error: `{"message"}`, as the 0.3 SDK's server writes it, and `type`,
/// the name of the A2A error, which the 1.x SDK's 0.3 HTTP+JSON transport reads to raise the error
/// it is (without it, that client reads every 404 as "method not found"; the 0.3 SDK's client reads
/// only the status).
pub fn error_body(code: i64, message: &str) -> Value {
    let mut body = json!({ "message": message });
    if let Some(name) = error_type(code) {
        body["type"] = json!(name);
    }
    body
}

/// The SDK's class name of the A2A error with JSON-RPC `code`.
fn error_type(code: i64) -> Option<&'static str> {
    Some(match code {
        -32001 => "TaskNotFoundError",
        -32002 => "TaskNotCancelableError",
        -32003 => "PushNotificationNotSupportedError",
        -32004 => "UnsupportedOperationError",
        -32005 => "ContentTypeNotSupportedError",
        -32006 => "InvalidAgentResponseError",
        -32007 => "ExtendedAgentCardNotConfiguredError",
        -32009 => "VersionNotSupportedError",
        -32600 => "InvalidRequestError",
        -32601 => "MethodNotFoundError",
        -32602 => "InvalidParamsError",
        _ => return None,
    })
}

/// The HTTP status of a 0.3 JSON-RPC error code in this binding (the SDK's table).
pub fn status_of(code: i64) -> u16 {
    match code {
        -32700 | -32600 => 400,
        -32601 | -32001 => 404,
        -32602 => 422,
        -32002 => 409,
        -32003 | -32004 => 501,
        -32005 => 415,
        -32006 => 502,
        _ => 500,
    }
}

/// The 0.3 JSON-RPC error code an HTTP status of this binding stands for (for an operation: a 404
/// of a task operation is an unknown task).
pub fn code_of(status: u16, operation: Operation) -> i64 {
    match status {
        400 => -32600,
        404 if operation == Operation::SendMessage || operation == Operation::SendStreamingMessage => -32601,
        404 => -32001,
        409 => -32002,
        422 => -32602,
        415 => -32005,
        501 if matches!(
            operation,
            Operation::CreateTaskPushNotificationConfig
                | Operation::GetTaskPushNotificationConfig
                | Operation::ListTaskPushNotificationConfigs
                | Operation::DeleteTaskPushNotificationConfig
        ) =>
        {
            -32003
        }
        501 => -32004,
        502 => -32006,
        _ => -32603,
    }
}
