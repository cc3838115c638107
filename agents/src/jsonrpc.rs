//! The JSON-RPC 2.0 binding at `POST /a2a/jsonrpc`: 1.0 method names (the gRPC ones), errors
//! always with HTTP 200, streams as SSE whose every event is a full JSON-RPC response carrying
//! the request's id.

use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::StreamExt;
use http::{HeaderMap, Method, Uri, header};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::App;
use crate::error::{A2aError, JsonRpcErrorObject};
use crate::operation::{Operation, Reply};
use crate::recorder::{Binding, Recording};
use crate::requests::{self, SendMessageRequest, decode};
use crate::{sse, version};

/// The 1.0 methods; anything else is "Method not found".
const METHODS: [&str; 11] = [
    "SendMessage",
    "SendStreamingMessage",
    "GetTask",
    "ListTasks",
    "CancelTask",
    "SubscribeToTask",
    "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs",
    "DeleteTaskPushNotificationConfig",
    "GetExtendedAgentCard",
];

/// `POST /a2a/jsonrpc`
pub async fn handle(
    State(app): State<Arc<App>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut recording = Recording::new(Binding::JsonRpc);
    let decoded = decode_request(&headers, &body, &mut recording);
    app.recorder.record(&method, &uri, &headers, recording);
    let (id, operation) = match decoded {
        Ok(decoded) => decoded,
        Err((id, error)) => return failure(&id, &error),
    };
    match app.agent.execute(operation).await {
        Ok(Reply::Unary(result)) => json(&Success::new(&result, &id)),
        Ok(Reply::Stream(events)) => {
            let frames = events.map(move |event| sse::frame(&Success::new(&event, &id)));
            sse::response(frames.boxed())
        }
        Err(error) => failure(&id, &error),
    }
}

/// Envelope, then method, then `A2A-Version`, then params: the order the SDK checks them in.
fn decode_request(
    headers: &HeaderMap,
    body: &[u8],
    recording: &mut Recording,
) -> Result<(Value, Operation), (Value, A2aError)> {
    let request: Value = serde_json::from_slice(body).map_err(|e| (Value::Null, A2aError::Parse(e.to_string())))?;
    let Value::Object(mut request) = request else {
        return Err((
            Value::Null,
            A2aError::InvalidRequest("the request must be a JSON object; batches are not supported".into()),
        ));
    };
    let id = request.remove("id").unwrap_or(Value::Null);
    if !matches!(id, Value::Null | Value::String(_) | Value::Number(_)) {
        return Err((Value::Null, invalid_request("id must be a string, a number or null")));
    }
    recording.jsonrpc_id = Some(id.clone());
    if request.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err((id, invalid_request("jsonrpc must be \"2.0\"")));
    }
    let Some(Value::String(method)) = request.remove("method") else {
        return Err((id, invalid_request("method must be a string")));
    };
    recording.operation = Some(method.clone());
    let params = request.remove("params").unwrap_or_else(|| Value::Object(Map::new()));
    recording.task_id = requests::task_id_hint(&params);
    if !METHODS.contains(&method.as_str()) {
        return Err((id, A2aError::MethodNotFound));
    }
    if let Err(error) = version::require_v1(headers) {
        return Err((id, error));
    }
    if !params.is_object() {
        return Err((id, A2aError::InvalidParams("params must be an object".into())));
    }
    match operation(&method, params) {
        Ok(operation) => Ok((id, operation)),
        Err(error) => Err((id, error)),
    }
}

fn operation(method: &str, params: Value) -> Result<Operation, A2aError> {
    Ok(match method {
        "SendMessage" => Operation::SendMessage(SendMessageRequest::decode(params)?),
        "SendStreamingMessage" => Operation::SendStreamingMessage(SendMessageRequest::decode(params)?),
        "GetTask" => Operation::GetTask(decode(params)?),
        "ListTasks" => Operation::ListTasks(decode(params)?),
        "CancelTask" => Operation::CancelTask(decode(params)?),
        "SubscribeToTask" => Operation::SubscribeToTask(decode(params)?),
        "GetExtendedAgentCard" => Operation::GetExtendedAgentCard,
        method if method.contains("PushNotificationConfig") => Operation::PushNotificationConfig,
        _ => return Err(A2aError::MethodNotFound),
    })
}

fn invalid_request(message: &str) -> A2aError {
    A2aError::InvalidRequest(message.to_owned())
}

/// A JSON-RPC success response (also one stream event), fields in the SDK's order.
#[derive(Serialize)]
struct Success<'a, T> {
    result: &'a T,
    id: &'a Value,
    jsonrpc: &'static str,
}

impl<'a, T> Success<'a, T> {
    fn new(result: &'a T, id: &'a Value) -> Self {
        Self { result, id, jsonrpc: "2.0" }
    }
}

#[derive(Serialize)]
struct Failure<'a> {
    error: JsonRpcErrorObject,
    id: &'a Value,
    jsonrpc: &'static str,
}

/// JSON-RPC errors travel with HTTP 200 and a plain JSON body, streams included.
fn failure(id: &Value, error: &A2aError) -> Response {
    json(&Failure { error: error.jsonrpc_object(), id, jsonrpc: "2.0" })
}

fn json(body: &impl Serialize) -> Response {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    ([(header::CONTENT_TYPE, "application/json")], bytes).into_response()
}
