//! Errors in the 0.3 HTTP+JSON binding: the HTTP status of a 0.3 JSON-RPC error code and back.

use a2a_core::Operation;

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
