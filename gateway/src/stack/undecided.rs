//! The answer to a message that names no skill and fits several ([`A2aError::SkillUndecided`]): a
//! task the gateway rejects at once (`TASK_STATE_REJECTED`), whose status message says how to name a
//! skill and lists the candidates (a text part, and a data part `{"availableSkills": [{id,
//! description}]}`). A protocol answer rather than an invalid-params error: the request is well
//! formed, and clients show a task's status message to their user, where a malformed-request error
//! reads as a bug. The task is not recorded (nothing ran; GetTask of it is TaskNotFound). Written
//! as the 1.0 answer of the caller's binding (an SSE stream of that one task for a streaming send),
//! so the caller's dialect is reached the way every answer's is.

use a2a_core::{A2aError, Binding, Operation};
use axum::body::Body;
use http::{HeaderValue, Response, header};
use serde_json::{Value, json};

/// The rejected task answering `error`, or `None` when `error` is not an undecided skill or the call
/// is not a send.
pub(super) fn answer(
    error: &A2aError,
    operation: Operation,
    binding: Binding,
    rpc_id: Option<&Value>,
    context_id: Option<&str>,
) -> Option<Response<Body>> {
    let A2aError::SkillUndecided { message, candidates } = error else { return None };
    if !operation.is_send() {
        return None;
    }
    let task = rejected_task(message, candidates, context_id);
    let result = json!({ "task": task });
    let (body, content_type) = match (binding, operation.is_streaming()) {
        (Binding::JsonRpc, streaming) => {
            let envelope = json!({"result": result, "id": rpc_id.cloned().unwrap_or(Value::Null), "jsonrpc": "2.0"});
            (envelope, if streaming { "text/event-stream" } else { "application/json" })
        }
        (Binding::Rest, true) => (result, "text/event-stream"),
        (Binding::Rest, false) => (result, "application/json"),
    };
    let bytes = serde_json::to_vec(&body).unwrap_or_default();
    let body = match content_type {
        "text/event-stream" => crate::protocol::sse::frame(&bytes),
        _ => bytes.into(),
    };
    let mut response = Response::new(Body::from(body));
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    Some(response)
}

fn rejected_task(message: &str, candidates: &[(String, String)], context_id: Option<&str>) -> Value {
    let task_id = uuid::Uuid::new_v4().to_string();
    let context_id = context_id.map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned);
    let skills: Vec<Value> =
        candidates.iter().map(|(id, description)| json!({"id": id, "description": description})).collect();
    let timestamp = crate::time::now_rfc3339();
    json!({
        "id": task_id,
        "contextId": context_id,
        "status": {
            "state": "TASK_STATE_REJECTED",
            "timestamp": timestamp,
            "message": {
                "messageId": uuid::Uuid::new_v4().to_string(),
                "role": "ROLE_AGENT",
                "taskId": task_id,
                "contextId": context_id,
                "parts": [
                    {"text": message},
                    {"data": {"availableSkills": skills}, "mediaType": "application/json"},
                ],
            },
        },
    })
}
