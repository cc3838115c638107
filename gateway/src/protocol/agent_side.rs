//! The agent side of bridging: a call in its 1.0 form (what the stack inside the decode layer works
//! on) sent to a backend that speaks A2A 0.3 JSON-RPC or the early REST dialect, and the backend's
//! answer — unary result, every stream event, every error — turned back into 1.0 in the caller's
//! binding, before the relay's tap and the observers read it (they only read 1.0).

use a2a_core::{A2aCall, A2aError, Binding, Dialect, Operation};
use bytes::Bytes;
use http::{Method, StatusCode};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::errors;
use super::sse::frame;
use super::translate::early::{self, SnapshotDiffer};
use super::translate::{TranslateError, jsonrpc, v03};
use a2a_model::{self as model, ErrorKind, ErrorObject, Request, StreamResponse};

/// One request to a non-1.0 agent.
#[derive(Debug)]
pub struct AgentCall {
    pub method: Method,
    /// Below the agent's early base (`None`: the 0.3 JSON-RPC endpoint).
    pub path: Option<String>,
    pub body: Vec<u8>,
    /// The agent answers with an SSE stream.
    pub streams: bool,
}

/// The request to an agent of `dialect` (0.3 or early). A new task for an early agent gets a fresh
/// UUID, which the agent then answers with: the id needs no mapping.
pub fn agent_call(dialect: Dialect, request: Request, rpc_id: Option<&Value>) -> Result<AgentCall, A2aError> {
    let streaming = request.operation().is_streaming();
    match dialect {
        Dialect::Early => {
            let new_id = uuid::Uuid::new_v4().to_string();
            let http = early::request_from_v1(request, &new_id).map_err(TranslateError::into_request_error)?;
            Ok(AgentCall {
                method: http.method,
                path: Some(http.path),
                body: http.body.unwrap_or_default(),
                streams: http.streams,
            })
        }
        _ => {
            let (method, params) = v03::request_from_v1(request).map_err(TranslateError::into_request_error)?;
            let id = rpc_id.cloned().unwrap_or_else(|| json!(uuid::Uuid::new_v4().to_string()));
            let body = jsonrpc::request(&id, method, (!params.is_none()).then_some(&params));
            Ok(AgentCall { method: Method::POST, path: None, body, streams: streaming })
        }
    }
}

/// The request to a 0.3 agent that offers only HTTP+JSON: the 0.3 JSON-RPC params of the request,
/// written as the 0.3 binding's method, path (under `/v1`) and ProtoJSON body.
pub fn agent_call_v03_rest(request: Request) -> Result<AgentCall, A2aError> {
    let operation = request.operation();
    let (_, params) = v03::request_from_v1(request).map_err(TranslateError::into_request_error)?;
    let params = serde_json::to_value(params).map_err(|_| A2aError::Internal)?;
    let (method, path, body) =
        v03::rest::request_to_rest(operation, params).map_err(TranslateError::into_request_error)?;
    let body = body.map(|b| serde_json::to_vec(&b).unwrap_or_default()).unwrap_or_default();
    Ok(AgentCall { method, path: Some(path), body, streams: operation.is_streaming() })
}

/// A 0.3 HTTP+JSON agent's unary answer as the 1.0 answer in the caller's binding.
pub fn unary_v03_rest_to_v1(call: &A2aCall, status: StatusCode, body: &[u8]) -> (StatusCode, Vec<u8>) {
    let (binding, id, op) = (call.binding, call.rpc_id.as_ref(), call.operation);
    let answer = if status.is_success() {
        serde_json::from_slice::<Value>(body)
            .map_err(|e| TranslateError::Json(e.to_string()))
            .and_then(|value| v03::rest::result_to_rpc(op, value))
            .and_then(|result| serde_json::to_vec(&result).map_err(|e| TranslateError::Json(e.to_string())))
            .and_then(|result| match op {
                Operation::DeleteTaskPushNotificationConfig => Ok(model::Response::Deleted(None)),
                _ => v03::result_to_v1(op, &result),
            })
            .map_err(invalid_answer)
    } else {
        Err(v03_rest_error(op, status, body))
    };
    match answer {
        Ok(response) => (StatusCode::OK, success(binding, id, &response)),
        Err(error) => failure(binding, id, error),
    }
}

/// A 0.3 HTTP+JSON error answer (a status and `{"message"}`) as the 1.0 error object.
fn v03_rest_error(operation: Operation, status: StatusCode, body: &[u8]) -> ErrorObject {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let message = parsed.as_ref().and_then(|v| v["message"].as_str()).unwrap_or("").to_owned();
    let code = v03::rest::code_of(status.as_u16(), operation);
    v03::error_to_v1(v03::Error03 { code, message, data: None })
}

/// A 1.0 success in the caller's binding.
fn success(binding: Binding, rpc_id: Option<&Value>, value: &impl Serialize) -> Vec<u8> {
    match binding {
        Binding::JsonRpc => jsonrpc::success(rpc_id.unwrap_or(&Value::Null), value),
        Binding::Rest => serde_json::to_vec(value).unwrap_or_default(),
    }
}

/// A 1.0 error in the caller's binding: (HTTP status, body).
fn failure(binding: Binding, rpc_id: Option<&Value>, error: ErrorObject) -> (StatusCode, Vec<u8>) {
    match binding {
        Binding::JsonRpc => (StatusCode::OK, jsonrpc::failure(rpc_id.unwrap_or(&Value::Null), &error)),
        Binding::Rest => {
            let kind = error.kind();
            let status = kind.http_status();
            let details = rest_details(kind, error.data);
            let body =
                errors::rest_error_body(status, errors::status_name(status), Value::String(error.message), details);
            (StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), body)
        }
    }
}

/// The google.rpc details of an agent's error for an HTTP+JSON caller: the agent's own list when it
/// names a reason, else the ErrorInfo of its kind. A JSON-RPC agent that answers `{code, message}`
/// alone (the 0.3 SDK's shape, and most hand-written agents') would otherwise reach the caller as an
/// HTTP+JSON error that names no reason, which is no A2A error at all: the screen takes it for the
/// agent failing (502) instead of, say, the task not found (404).
fn rest_details(kind: ErrorKind, data: Option<Value>) -> Value {
    match data {
        Some(Value::Array(list)) if list.iter().any(|detail| detail.get("reason").is_some_and(Value::is_string)) => {
            Value::Array(list)
        }
        _ => ErrorObject::new(kind, "").data.unwrap_or_else(|| json!([])),
    }
}

fn invalid_answer(error: TranslateError) -> ErrorObject {
    let message = error.into_response_error().to_string();
    ErrorObject::new(ErrorKind::InvalidAgentResponse, message)
}

/// A 1.0 HTTP+JSON error answer (google.rpc.Status) as the error object: the kind from its ErrorInfo
/// reason, else from the status.
fn rest_error(status: StatusCode, body: &[u8]) -> ErrorObject {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    let message = error.and_then(|e| e["message"].as_str()).unwrap_or("the agent failed").to_owned();
    let reason = error.and_then(|e| e["details"].as_array()?.iter().find_map(|d| d["reason"].as_str()));
    let kind = reason
        .and_then(ErrorKind::from_reason)
        .or_else(|| super::agent_errors::kind_of_bare_status(status))
        .unwrap_or(ErrorKind::Internal);
    let mut object = ErrorObject::new(kind, message);
    if let Some(details) = error.and_then(|e| e.get("details")).filter(|d| d.is_array()) {
        object.data = Some(details.clone());
    }
    object
}

/// A task id as one path segment: everything but unreserved characters percent-encoded.
pub fn segment(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for byte in id.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The request for a 1.0 agent that lacks the caller's binding, in its other binding.
pub fn rebind_call(call: &A2aCall, request: Request) -> Result<AgentCall, A2aError> {
    let op = call.operation;
    match call.binding {
        // JSON-RPC caller → HTTP+JSON agent.
        Binding::JsonRpc => {
            let encoded = serde_json::to_vec(&request).map_err(|_| A2aError::Internal)?;
            let (method, path, body) = match &request {
                Request::SendMessage(_) => (Method::POST, "/message:send".to_owned(), encoded),
                Request::SendStreamingMessage(_) => (Method::POST, "/message:stream".to_owned(), encoded),
                Request::GetTask(r) => {
                    let query = r.history_length.map(|n| format!("?historyLength={n}")).unwrap_or_default();
                    (Method::GET, format!("/tasks/{}{query}", segment(&r.id)), Vec::new())
                }
                Request::CancelTask(r) => (Method::POST, format!("/tasks/{}:cancel", segment(&r.id)), encoded),
                Request::SubscribeToTask(r) => {
                    (Method::POST, format!("/tasks/{}:subscribe", segment(&r.id)), Vec::new())
                }
                _ => {
                    return Err(A2aError::UnsupportedOperation(format!(
                        "{op} is not bridged from JSON-RPC to an HTTP+JSON-only agent"
                    )));
                }
            };
            Ok(AgentCall { method, path: Some(path), body, streams: op.is_streaming() })
        }
        // HTTP+JSON caller → JSON-RPC agent.
        Binding::Rest => {
            let id = json!(uuid::Uuid::new_v4().to_string());
            let body = jsonrpc::request(&id, op.method_name(), Some(&request));
            Ok(AgentCall { method: Method::POST, path: None, body, streams: op.is_streaming() })
        }
    }
}

/// A 1.0 agent's unary answer in its other binding, as the answer in the caller's binding.
pub fn unary_rebound(call: &A2aCall, status: StatusCode, body: &[u8]) -> (StatusCode, Vec<u8>) {
    let (binding, id) = (call.binding, call.rpc_id.as_ref());
    let answer: Result<Vec<u8>, ErrorObject> = match binding {
        // The agent answered in HTTP+JSON.
        Binding::JsonRpc if status.is_success() => match serde_json::from_slice::<&RawValue>(body) {
            Ok(raw) => Ok(jsonrpc::success(id.unwrap_or(&Value::Null), &raw)),
            Err(e) => Err(invalid_answer(TranslateError::Json(e.to_string()))),
        },
        Binding::JsonRpc => Err(rest_error(status, body)),
        // The agent answered in JSON-RPC.
        Binding::Rest => match jsonrpc::Envelope::parse(body) {
            Err(error) => Err(invalid_answer(error)),
            Ok(envelope) => match (envelope.error, envelope.result) {
                (Some(error), _) => Err(serde_json::from_str::<ErrorObject>(error.get())
                    .unwrap_or_else(|e| invalid_answer(TranslateError::Json(e.to_string())))),
                (None, Some(result)) => Ok(result.get().as_bytes().to_vec()),
                (None, None) => Ok(b"{}".to_vec()),
            },
        },
    };
    match answer {
        Ok(bytes) => (StatusCode::OK, bytes),
        Err(error) => failure(binding, id, error),
    }
}

/// An agent's unary answer as the 1.0 answer in the caller's binding.
pub fn unary_to_v1(dialect: Dialect, call: &A2aCall, status: StatusCode, body: &[u8]) -> (StatusCode, Vec<u8>) {
    let (binding, id, op) = (call.binding, call.rpc_id.as_ref(), call.operation);
    let answer: Result<model::Response, ErrorObject> = match dialect {
        Dialect::Early if status.is_success() => early::result_to_v1(op, body).map_err(invalid_answer),
        Dialect::Early => Err(early::error_to_v1(Some(op), status.as_u16(), body)),
        _ => match jsonrpc::Envelope::parse(body) {
            Err(error) => Err(invalid_answer(error)),
            Ok(envelope) => match (envelope.error, envelope.result) {
                (Some(error), _) => match serde_json::from_str::<v03::Error03>(error.get()) {
                    Ok(error) => Err(v03::error_to_v1(error)),
                    Err(e) => Err(invalid_answer(TranslateError::Json(e.to_string()))),
                },
                (None, None) => Ok(model::Response::Deleted(None)),
                (None, Some(result)) => v03::result_to_v1(op, result.get().as_bytes()).map_err(invalid_answer),
            },
        },
    };
    match answer {
        Ok(response) => (StatusCode::OK, success(binding, id, &response)),
        Err(error) => failure(binding, id, error),
    }
}

/// A unary early answer to a streamed continuation, as the 1.0 stream it stands for.
pub fn continuation_stream(call: &A2aCall, status: StatusCode, body: &[u8]) -> Bytes {
    let mut converter = EventConverter::continuing(Dialect::Early, call, SnapshotDiffer::continuing(None));
    if !status.is_success() {
        let error = early::error_to_v1(Some(Operation::SendMessage), status.as_u16(), body);
        return frame(&failure(call.binding, call.rpc_id.as_ref(), error).1);
    }
    let mut out = Vec::new();
    if let Err(unread) = converter.event(body, &mut |data| out.extend_from_slice(&frame(data))) {
        out.extend_from_slice(&frame(&converter.unread_event(unread)));
    }
    Bytes::from(out)
}
/// Response extension: the answer is the agent's own, already in the caller's dialect.
#[derive(Debug, Clone, Copy)]
pub struct PassedThrough;

mod events;
pub use self::events::{Emit, EventConverter, Fault, Unread};

#[cfg(test)]
mod tests;
