//! Events the gateway writes into a relayed stream itself, in the caller's binding: the terminal
//! status update that ends a stream whose backend died (or that the gateway must close), and the
//! error event for a stream that broke before it named its task.

use a2a_core::{A2aError, Binding, Dialect, TaskState};

use super::errors::Refusal;
use bytes::Bytes;
use serde_json::{Value, json};

pub use super::sse::frame;

/// Wraps a StreamResponse in the binding's envelope.
fn envelope(binding: Binding, rpc_id: Option<&Value>, stream_response: Value) -> Value {
    match binding {
        Binding::JsonRpc => {
            json!({"result": stream_response, "id": rpc_id.cloned().unwrap_or(Value::Null), "jsonrpc": "2.0"})
        }
        Binding::Rest => stream_response,
    }
}

/// A `statusUpdate` putting the task in `state`, with an agent message saying why.
pub fn status_event(
    binding: Binding,
    rpc_id: Option<&Value>,
    task_id: &str,
    context_id: Option<&str>,
    state: TaskState,
    text: &str,
) -> Bytes {
    frame(&status_data(binding, rpc_id, task_id, context_id, state, text))
}

/// The data of [`status_event`].
pub fn status_data(
    binding: Binding,
    rpc_id: Option<&Value>,
    task_id: &str,
    context_id: Option<&str>,
    state: TaskState,
    text: &str,
) -> Vec<u8> {
    let mut message = json!({
        "messageId": uuid::Uuid::new_v4().to_string(),
        "taskId": task_id,
        "role": "ROLE_AGENT",
        "parts": [{"text": text}],
    });
    let mut update = json!({
        "taskId": task_id,
        "status": {"state": state.as_str(), "message": Value::Null, "timestamp": crate::time::now_rfc3339()},
    });
    if let Some(context_id) = context_id {
        message["contextId"] = json!(context_id);
        update["contextId"] = json!(context_id);
    }
    update["status"]["message"] = message;
    serde_json::to_vec(&envelope(binding, rpc_id, json!({ "statusUpdate": update }))).unwrap_or_default()
}

/// An error event, for a stream that broke before naming its task (the reference SDK tags JSON-RPC
/// error events `event: error`).
pub fn error_event(binding: Binding, rpc_id: Option<&Value>, error: A2aError) -> Bytes {
    let rendered = Refusal::new(error, Dialect::V1, binding, rpc_id.cloned()).rendered();
    let mut out = match binding {
        Binding::JsonRpc => b"event: error\r\n".to_vec(),
        Binding::Rest => Vec::new(),
    };
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(&rendered.body);
    out.extend_from_slice(b"\r\n\r\n");
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::observe::fact_in;
    use crate::protocol::sse::SseParser;

    fn data_of(bytes: &[u8]) -> Vec<u8> {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        parser.feed(bytes, &mut |d| out = d.to_vec());
        out
    }

    #[test]
    fn status_events_read_back_as_the_state_they_announce() {
        for binding in [Binding::JsonRpc, Binding::Rest] {
            let bytes = status_event(binding, Some(&json!("r1")), "t1", Some("c1"), TaskState::Failed, "agent gone");
            assert!(bytes.ends_with(b"\r\n\r\n"));
            let fact = fact_in(binding, &data_of(&bytes), false).unwrap();
            assert_eq!(fact.task_id.as_deref(), Some("t1"));
            assert_eq!(fact.context_id.as_deref(), Some("c1"));
            assert_eq!(fact.state, Some(TaskState::Failed));
        }
        let v: Value = serde_json::from_slice(&data_of(&status_event(
            Binding::JsonRpc,
            Some(&json!(3)),
            "t",
            None,
            TaskState::Canceled,
            "x",
        )))
        .unwrap();
        assert_eq!(v["id"], 3);
        assert_eq!(v["result"]["statusUpdate"]["status"]["message"]["parts"][0]["text"], "x");
    }

    #[test]
    fn error_events_carry_the_error_in_the_binding() {
        let error = A2aError::BackendUnavailable("gone".into());
        let bytes = error_event(Binding::JsonRpc, Some(&json!("r")), error);
        assert!(bytes.starts_with(b"event: error\r\n"));
        let v: Value = serde_json::from_slice(&data_of(&bytes)).unwrap();
        assert_eq!((v["id"].clone(), v["error"]["code"].clone()), (json!("r"), json!(-32603)));
    }
}
