//! ListTasks: the gateway lists, from each backend in question, only the tasks it has routed to that
//! backend, and merges the lists. On a per-agent path the one agent's pagination passes through; on
//! the unified endpoint the merged list is one page.

use std::sync::Arc;

use a2a_policies::{A2aCall, A2aError, Binding, Caller};
use axum::body::Body;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Response, header};
use serde_json::{Value, json};

use crate::directory::TaskDirectory;
use crate::protocol::A2A_JSON;
use crate::proxy::Forwarder;
use crate::registry::{Backend, Snapshot};

/// Lists the tasks of `owner` (see [`crate::routing::owner_key`]).
#[allow(clippy::too_many_arguments)]
pub async fn list_tasks(
    forwarder: &Forwarder,
    directory: &dyn TaskDirectory,
    snapshot: &Snapshot,
    owner: Option<&Arc<str>>,
    caller: Option<&Caller>,
    call: &A2aCall,
    method: &Method,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<Response<Body>, A2aError> {
    let targets: Vec<Arc<Backend>> = match &call.agent {
        Some(agent) => {
            let backend = snapshot.backend(agent).ok_or_else(|| A2aError::AgentNotFound(agent.clone()))?;
            if !backend.healthy {
                return Err(A2aError::BackendUnavailable(format!("the agent '{agent}' is unavailable")));
            }
            vec![backend.clone()]
        }
        None => {
            if page_token(call, &body).is_some_and(|t| !t.is_empty()) {
                return Err(A2aError::invalid_params(
                    "pageToken is not supported on the unified endpoint; list one agent's tasks at /agents/{name}/",
                ));
            }
            // Only 1.0 agents can list tasks (0.3 and the early dialect have no such call).
            let has_binding = |b: &&Arc<Backend>| {
                b.dialect == a2a_policies::Dialect::V1
                    && match call.binding {
                        Binding::JsonRpc => b.jsonrpc_url.is_some(),
                        Binding::Rest => b.rest_url.is_some(),
                    }
            };
            snapshot.backends.iter().filter(|b| b.healthy).filter(has_binding).cloned().collect()
        }
    };
    let answers = futures::future::join_all(
        targets.iter().map(|backend| forwarder.unary(backend, caller, call, method, headers, body.clone())),
    )
    .await;
    let mut tasks = Vec::new();
    let mut next_page_token = String::new();
    for (backend, answer) in targets.iter().zip(answers) {
        let answer = answer?;
        let listed = listed(call.binding, &answer.body);
        let Some(listed) = listed.filter(|_| answer.status.is_success()) else {
            if targets.len() == 1 {
                // One agent's own refusal is the answer, in its own words.
                let mut response = Response::new(Body::from(answer.body));
                *response.status_mut() = answer.status;
                if let Some(ct) = answer.headers.get(header::CONTENT_TYPE) {
                    response.headers_mut().insert(header::CONTENT_TYPE, ct.clone());
                }
                return Ok(response);
            }
            tracing::warn!(backend = %backend.name, status = %answer.status, "ListTasks failed at a backend");
            return Err(A2aError::BackendUnavailable(format!(
                "could not list the tasks of the agent '{}'",
                backend.name
            )));
        };
        if targets.len() == 1 {
            next_page_token = listed.next_page_token;
        }
        for task in listed.tasks {
            let Some(id) = task.get("id").and_then(Value::as_str) else { continue };
            if directory.task(id).await.is_some_and(|e| e.backend == backend.name && e.owner.as_ref() == owner) {
                tasks.push(task);
            }
        }
    }
    if targets.len() > 1 {
        // Newest first across agents, as each agent orders its own list.
        tasks.sort_by(|a, b| timestamp(b).cmp(timestamp(a)));
    }
    let result = json!({
        "tasks": tasks,
        "nextPageToken": next_page_token,
        "pageSize": tasks.len(),
        "totalSize": tasks.len(),
    });
    Ok(match call.binding {
        Binding::JsonRpc => {
            json_response(&json!({"result": result, "id": call.rpc_id, "jsonrpc": "2.0"}), "application/json")
        }
        Binding::Rest => json_response(&result, A2A_JSON),
    })
}

struct Listed {
    tasks: Vec<Value>,
    next_page_token: String,
}

fn listed(binding: Binding, body: &[u8]) -> Option<Listed> {
    let mut value: Value = serde_json::from_slice(body).ok()?;
    let mut result = match binding {
        Binding::JsonRpc => value.get_mut("result")?.take(),
        Binding::Rest => value,
    };
    let tasks = match result.get_mut("tasks").map(Value::take) {
        Some(Value::Array(tasks)) => tasks,
        None | Some(Value::Null) => Vec::new(),
        Some(_) => return None,
    };
    let next_page_token = result.get("nextPageToken").and_then(Value::as_str).unwrap_or("").to_string();
    Some(Listed { tasks, next_page_token })
}

fn page_token(call: &A2aCall, body: &[u8]) -> Option<String> {
    match call.binding {
        Binding::Rest => {
            let query = call.rest_path.as_deref()?.split_once('?')?.1;
            query.split('&').find_map(|pair| pair.strip_prefix("pageToken=")).map(str::to_string)
        }
        Binding::JsonRpc => {
            let value: Value = serde_json::from_slice(body).ok()?;
            value.get("params")?.get("pageToken")?.as_str().map(str::to_string)
        }
    }
}

fn timestamp(task: &Value) -> &str {
    task.get("status").and_then(|s| s.get("timestamp")).and_then(Value::as_str).unwrap_or("")
}

fn json_response(value: &Value, content_type: &'static str) -> Response<Body> {
    let mut response = Response::new(Body::from(serde_json::to_vec(value).unwrap_or_default()));
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}
