//! Agents that speak gRPC: the checked request written as the method's protobuf message, and the
//! agent's messages read back into the 1.0 answer of the call's binding (a JSON body, an SSE event),
//! so that the relay's tap, the observers and the caller's binding see what they see for JSON agents.

use a2a_core::{A2aCall, A2aError, Binding};
use bytes::Bytes;
use serde_json::Value;
use serde_json::value::RawValue;

use super::Method;
use crate::protocol::translate::jsonrpc;
use a2a_model::Request;

/// The call's method and its request message for the agent: the checked request (never the caller's
/// bytes), with the tenant the agent's gRPC interface names.
pub fn request_message(request: &Request, tenant: Option<&str>) -> Result<(Method, Vec<u8>), A2aError> {
    let method = Method::of(request.operation());
    let mut params = serde_json::to_value(request).map_err(|_| A2aError::Internal)?;
    if let (Value::Object(map), Some(tenant)) = (&mut params, tenant) {
        map.insert("tenant".into(), Value::String(tenant.to_owned()));
    }
    let json = serde_json::to_vec(&params).map_err(|_| A2aError::Internal)?;
    let message = super::from_json(&method.input, &json).map_err(|error| {
        tracing::warn!(%error, "a checked request did not convert to gRPC");
        A2aError::Internal
    })?;
    Ok((method, message))
}

/// The agent's answer message as ProtoJSON, or why it is no valid answer.
fn answer_json(
    method: &Method,
    descriptor: &prost_reflect::MessageDescriptor,
    message: &[u8],
) -> Result<Vec<u8>, A2aError> {
    super::to_json(descriptor, message)
        .map_err(|error| A2aError::InvalidAgentResponse(format!("the agent's {} answer is {error}", method.operation)))
}

/// Wraps a result in the call's binding: a JSON-RPC success under the call's id, or the bare object.
fn in_binding(call: &A2aCall, json: Vec<u8>) -> Result<Vec<u8>, A2aError> {
    match call.binding {
        Binding::Rest => Ok(json),
        Binding::JsonRpc => {
            let raw = RawValue::from_string(String::from_utf8(json).map_err(|_| A2aError::Internal)?)
                .map_err(|_| A2aError::Internal)?;
            Ok(jsonrpc::success(call.rpc_id.as_ref().unwrap_or(&Value::Null), &raw))
        }
    }
}

/// A unary answer message as the 1.0 answer body in the call's binding.
pub fn unary_answer(call: &A2aCall, method: &Method, message: &[u8]) -> Result<Vec<u8>, A2aError> {
    in_binding(call, answer_json(method, &method.output, message)?)
}

/// One streamed message (a StreamResponse) as the data of the 1.0 event of the call's binding.
pub fn stream_event(call: &A2aCall, method: &Method, message: &[u8]) -> Result<Bytes, A2aError> {
    Ok(Bytes::from(in_binding(call, answer_json(method, &method.output, message)?)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_core::Operation;

    #[test]
    fn the_checked_request_goes_out_with_the_agents_tenant_and_answers_come_back_in_the_callers_binding() {
        let mut call = A2aCall::new(Binding::JsonRpc, Operation::GetTask);
        call.rpc_id = Some(Value::from("r1"));
        let request =
            Request::GetTask(a2a_model::GetTaskRequest { tenant: None, id: "t1".into(), history_length: Some(1) });
        let (method, message) = request_message(&request, Some("inner")).unwrap();
        let json: Value = serde_json::from_slice(&super::super::to_json(&method.input, &message).unwrap()).unwrap();
        assert_eq!(json, serde_json::json!({"tenant":"inner","id":"t1","historyLength":1}));
        let task = super::super::from_json(&method.output, br#"{"id":"t1","status":{"state":"TASK_STATE_COMPLETED"}}"#)
            .unwrap();
        let answer: Value = serde_json::from_slice(&unary_answer(&call, &method, &task).unwrap()).unwrap();
        assert_eq!(answer["id"], "r1");
        assert_eq!(answer["result"]["status"]["state"], "TASK_STATE_COMPLETED");
        let rest = A2aCall { binding: Binding::Rest, ..call.clone() };
        let answer: Value = serde_json::from_slice(&unary_answer(&rest, &method, &task).unwrap()).unwrap();
        assert_eq!(answer["id"], "t1");
        assert!(matches!(unary_answer(&call, &method, &[0xff]), Err(A2aError::InvalidAgentResponse(_))));
    }

    #[test]
    fn stream_messages_become_sse_events() {
        let mut call = A2aCall::new(Binding::Rest, Operation::SubscribeToTask);
        call.task_id = Some("t".into());
        let method = Method::of(Operation::SubscribeToTask);
        let message = super::super::from_json(
            &method.output,
            br#"{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}"#,
        )
        .unwrap();
        let event = stream_event(&call, &method, &message).unwrap();
        assert!(event.starts_with(b"{\"statusUpdate\":"), "{event:?}");
        assert!(event.ends_with(b"}"), "the data alone, unframed: {event:?}");
    }
}
