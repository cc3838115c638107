//! The checked request written out again: the body (and, for HTTP+JSON, the path) that reaches the
//! agent.

use super::*;

/// The checked request written for a 1.0 agent in the call's binding: a JSON-RPC request under the
/// caller's id, or an HTTP+JSON body with its path (below the binding's base, with the query).
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    pub body: bytes::Bytes,
    /// The HTTP+JSON path; `None` for JSON-RPC, which has one endpoint.
    pub rest_path: Option<String>,
}

/// Writes the checked request as a 1.0 agent in the call's binding gets it: the one writer of
/// that body, used once per forward by the native leg, from the request as it was judged.
pub fn encode(call: &A2aCall, request: &Request) -> Written {
    match call.binding {
        Binding::JsonRpc => {
            let id = call.rpc_id.clone().unwrap_or(Value::Null);
            let body = jsonrpc::request(&id, request.operation().method_name(), Some(request));
            Written { body: body.into(), rest_path: None }
        }
        Binding::Rest => {
            let (path, body) = rest_form(request);
            Written { body: body.into(), rest_path: Some(path) }
        }
    }
}

/// A 1.0 request in the HTTP+JSON binding: its path (below the binding's base, with the query) and
/// its body (empty for calls without one).
pub fn rest_form(request: &Request) -> (String, Vec<u8>) {
    let json = || {
        a2a_model::passes::write();
        serde_json::to_vec(request).unwrap_or_default()
    };
    let configs = |task: &str| format!("/tasks/{}/pushNotificationConfigs", segment(task));
    match request {
        Request::SendMessage(_) => ("/message:send".to_owned(), json()),
        Request::SendStreamingMessage(_) => ("/message:stream".to_owned(), json()),
        Request::GetTask(r) => {
            let query = Query::default().int("historyLength", r.history_length);
            (format!("/tasks/{}{}", segment(&r.id), query.0), Vec::new())
        }
        Request::ListTasks(r) => {
            let query = Query::default()
                .text("contextId", r.context_id.as_deref())
                .text("status", r.status.map(|s| s.as_str()))
                .int("pageSize", r.page_size)
                .text("pageToken", r.page_token.as_deref())
                .int("historyLength", r.history_length)
                .text("statusTimestampAfter", r.status_timestamp_after.as_deref())
                .text("includeArtifacts", r.include_artifacts.map(|b| if b { "true" } else { "false" }));
            (format!("/tasks{}", query.0), Vec::new())
        }
        Request::CancelTask(r) => (format!("/tasks/{}:cancel", segment(&r.id)), json()),
        Request::SubscribeToTask(r) => (format!("/tasks/{}:subscribe", segment(&r.id)), Vec::new()),
        Request::CreateTaskPushNotificationConfig(r) => (configs(r.task_id.as_deref().unwrap_or("")), json()),
        Request::GetTaskPushNotificationConfig(r) | Request::DeleteTaskPushNotificationConfig(r) => {
            (format!("{}/{}", configs(&r.task_id), segment(r.id.as_deref().unwrap_or(""))), Vec::new())
        }
        Request::ListTaskPushNotificationConfigs(r) => {
            let query = Query::default().int("pageSize", r.page_size).text("pageToken", r.page_token.as_deref());
            (format!("{}{}", configs(&r.task_id), query.0), Vec::new())
        }
        Request::GetExtendedAgentCard(_) => ("/extendedAgentCard".to_owned(), Vec::new()),
    }
}

/// A query string built from typed values, every value percent-encoded.
#[derive(Default)]
struct Query(String);

impl Query {
    fn text(mut self, name: &str, value: Option<&str>) -> Query {
        if let Some(value) = value {
            self.0.push(if self.0.is_empty() { '?' } else { '&' });
            self.0.push_str(name);
            self.0.push('=');
            self.0.push_str(&segment(value));
        }
        self
    }

    fn int(self, name: &str, value: Option<i32>) -> Query {
        let value = value.map(|n| n.to_string());
        self.text(name, value.as_deref())
    }
}
