//! ListTasks, answered by the gateway: the caller's tasks come from the task directory (which knows
//! whose each task is), their content from each owning agent (GetTask). Pages and page tokens are
//! the gateway's own (see [`PageTokens`]): a page never holds another caller's task, and a token
//! cannot be turned into a way to walk another caller's list. Agents of every dialect can be listed
//! this way, not only those that have ListTasks.

use std::sync::Arc;

use a2a_core::{A2aCall, A2aError, Binding, Caller};
use axum::body::Body;
use http::{HeaderValue, Response, header};
use serde_json::{Value, json};

use crate::directory::TaskEntry;
use crate::gateway::Gateway;
use crate::observers::Exchange;
use crate::protocol::A2A_JSON;
use crate::registry::Snapshot;
use a2a_model::{ListTasksRequest, TaskState};

const DEFAULT_PAGE_SIZE: usize = 50;
const MAX_PAGE_SIZE: usize = 100;

/// Lists the tasks of `owner` (see [`crate::routing::owner_key`]) that `request` asks for.
pub async fn list_tasks(
    gateway: &Gateway,
    snapshot: &Snapshot,
    owner: Option<&Arc<str>>,
    caller: Option<&Caller>,
    call: &A2aCall,
    request: &ListTasksRequest,
) -> Result<Response<Body>, A2aError> {
    if let Some(agent) = &call.agent
        && snapshot.backend(agent).is_none()
    {
        return Err(A2aError::AgentNotFound(agent.clone()));
    }
    let page_size = match request.page_size {
        None | Some(0) => DEFAULT_PAGE_SIZE,
        Some(n) if n < 0 => return Err(A2aError::invalid_params("pageSize must not be negative")),
        Some(n) => usize::try_from(n).unwrap_or(MAX_PAGE_SIZE).min(MAX_PAGE_SIZE),
    };
    if request.history_length.is_some_and(|n| n < 0) {
        return Err(A2aError::invalid_params("historyLength must not be negative"));
    }
    // The token is bound to the caller and to everything that selects the list.
    let owner_key = owner.map_or("", |o| &**o);
    let query = format!(
        "{}|{}|{}|{}",
        call.agent.as_deref().unwrap_or(""),
        request.context_id.as_deref().unwrap_or(""),
        request.status.map_or("", TaskState::as_str),
        request.status_timestamp_after.as_deref().unwrap_or("")
    );
    let cursor = match request.page_token.as_deref() {
        None => u64::MAX,
        Some(token) => gateway
            .shared
            .page_tokens
            .open(token, owner_key, &query)
            .ok_or_else(|| A2aError::invalid_params("the pageToken is not valid for this query"))?,
    };
    let wanted = |entry: &TaskEntry| {
        call.agent.as_deref().is_none_or(|agent| *entry.backend == *agent)
            && request.context_id.as_deref().is_none_or(|c| entry.context_id.as_deref() == Some(c))
            && request
                .status
                .is_none_or(|s| s == TaskState::Unspecified || entry.state.map(|e| e.as_str()) == Some(s.as_str()))
    };
    let matching: Vec<(u64, String, TaskEntry)> =
        gateway.directory().tasks_of(owner).await?.into_iter().filter(|(_, _, entry)| wanted(entry)).collect();
    let total = matching.len();
    let after_cursor: Vec<&(u64, String, TaskEntry)> = matching.iter().filter(|(seq, _, _)| *seq < cursor).collect();
    let page = &after_cursor[..after_cursor.len().min(page_size)];
    let fetched = futures::future::join_all(
        page.iter().map(|(_, id, entry)| get_task(gateway, snapshot, owner, caller, id, entry, request.history_length)),
    )
    .await;
    let mut tasks: Vec<Value> = fetched.into_iter().flatten().collect();
    if request.include_artifacts != Some(true) {
        for task in &mut tasks {
            if let Some(object) = task.as_object_mut() {
                object.remove("artifacts");
            }
        }
    }
    if let Some(after) = request.status_timestamp_after.as_deref() {
        tasks.retain(|task| timestamp(task) > after);
    }
    let next_page_token = match page.last() {
        Some((seq, _, _)) if after_cursor.len() > page.len() => {
            gateway.shared.page_tokens.seal(owner_key, &query, *seq)
        }
        _ => String::new(),
    };
    let result = json!({
        "tasks": tasks,
        "nextPageToken": next_page_token,
        "pageSize": tasks.len(),
        "totalSize": total,
    });
    Ok(match call.binding {
        Binding::JsonRpc => {
            json_response(&json!({"result": result, "id": call.rpc_id, "jsonrpc": "2.0"}), "application/json")
        }
        Binding::Rest => json_response(&result, A2A_JSON),
    })
}

/// One task as its agent has it now; `None` when the agent cannot say (it forgot the task, or is
/// unavailable): the page then goes on without it.
async fn get_task(
    gateway: &Gateway,
    snapshot: &Snapshot,
    owner: Option<&Arc<str>>,
    caller: Option<&Caller>,
    task_id: &str,
    entry: &TaskEntry,
    history_length: Option<i32>,
) -> Option<Value> {
    let backend = snapshot.backend(&entry.backend).filter(|b| b.healthy)?;
    let exchange = Exchange {
        backend: backend.name.clone(),
        binding: Binding::JsonRpc,
        caller: caller.cloned(),
        owner: owner.cloned(),
        request_id: Arc::from("list"),
        skill: entry.skill.clone(),
    };
    gateway.forwarder.get_task(backend, exchange, task_id, history_length).await
}

fn timestamp(task: &Value) -> &str {
    task.get("status").and_then(|s| s.get("timestamp")).and_then(Value::as_str).unwrap_or("")
}

fn json_response(value: &Value, content_type: &'static str) -> Response<Body> {
    let mut response = Response::new(Body::from(serde_json::to_vec(value).unwrap_or_default()));
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}
