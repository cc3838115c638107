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
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::directory::TaskEntry;
use crate::gateway::Gateway;
use crate::observers::Exchange;
use crate::protocol::A2A_JSON;
use crate::registry::Snapshot;
use a2a_model::{ListTasksRequest, TaskState};

const DEFAULT_PAGE_SIZE: usize = 50;
const MAX_PAGE_SIZE: usize = 100;
/// Tasks fetched from agents at most by one ListTasks call that filters by state or status time.
const MAX_EXAMINED: usize = 4 * MAX_PAGE_SIZE;

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
        // As the specification's bounds and the reference SDK: a size past them is refused, not cut.
        Some(n) => usize::try_from(n)
            .ok()
            .filter(|n| (1..=MAX_PAGE_SIZE).contains(n))
            .ok_or_else(|| A2aError::invalid_params("pageSize must be between 1 and 100"))?,
    };
    if request.history_length.is_some_and(|n| n < 0) {
        return Err(A2aError::invalid_params("historyLength must not be negative"));
    }
    let updated_after =
        request.status_timestamp_after.as_deref().filter(|t| !t.is_empty()).map(parse_timestamp).transpose()?;
    // The token is bound to the caller and to everything that selects the list.
    let owner_key = owner.map_or("", |o| &**o);
    let query = [
        call.agent.as_deref().unwrap_or(""),
        request.context_id.as_deref().unwrap_or(""),
        request.status.map_or("", TaskState::as_str),
        request.status_timestamp_after.as_deref().unwrap_or(""),
    ];
    let cursor = match request.page_token.as_deref() {
        None => u64::MAX,
        Some(token) => gateway
            .shared
            .page_tokens
            .open(token, owner_key, &query)
            .ok_or_else(|| A2aError::invalid_params("the pageToken is not valid for this query"))?,
    };
    let state = request.status.filter(|s| *s != TaskState::Unspecified);
    // The gateway's records decide agent and context. The state they hold is the last one the
    // gateway saw: final when terminal, but a task it saw working may have finished since without
    // anyone asking; so only a terminal state rules a task out here, and the agent's answer decides.
    let wanted = |entry: &TaskEntry| {
        call.agent.as_deref().is_none_or(|agent| *entry.backend == *agent)
            && request.context_id.as_deref().is_none_or(|c| entry.context_id.as_deref() == Some(c))
            && state.is_none_or(|s| entry.state.is_none_or(|seen| !seen.is_terminal() || seen == s))
    };
    let passes = |task: &Value| {
        state.is_none_or(|s| task_state(task) == Some(s))
            && updated_after.is_none_or(|after| status_time(task).is_some_and(|at| at >= after))
    };
    let filtered = state.is_some() || updated_after.is_some();
    let matching: Vec<(u64, String, TaskEntry)> =
        gateway.directory().tasks_of(owner).await?.into_iter().filter(|(_, _, entry)| wanted(entry)).collect();
    let total = matching.len();
    let after_cursor: Vec<&(u64, String, TaskEntry)> = matching.iter().filter(|(seq, _, _)| *seq < cursor).collect();
    // Newest first, a page at a time. Without a state or time filter the page is the next
    // `page_size` tasks. With one, only the agent knows a task's state and status time for sure, so
    // the walk fetches a page's worth at a time until the page is full — at most `MAX_EXAMINED` per
    // call, so that one call cannot make the gateway ask agents for every task a caller has; a short
    // page then carries a token that goes on from the last task examined.
    let limit = after_cursor.len().min(if filtered { MAX_EXAMINED } else { page_size });
    let mut tasks: Vec<Value> = Vec::with_capacity(page_size);
    let mut examined = 0;
    while tasks.len() < page_size && examined < limit {
        let chunk = &after_cursor[examined..limit.min(examined + page_size)];
        let fetched = futures::future::join_all(
            chunk
                .iter()
                .map(|(_, id, entry)| get_task(gateway, snapshot, owner, caller, id, entry, request.history_length)),
        )
        .await;
        for task in fetched {
            examined += 1;
            // An agent that cannot say (it forgot the task, or is unavailable): the page goes on
            // without it.
            let Some(task) = task else { continue };
            if passes(&task) {
                tasks.push(task);
                if tasks.len() == page_size {
                    break;
                }
            }
        }
    }
    // The directory orders tasks by the updates the gateway saw; an agent may have updated one since
    // with nobody asking. When the agents date every task of the page, the page follows their dates.
    if tasks.iter().all(|task| status_time(task).is_some()) {
        tasks.sort_by_cached_key(|task| std::cmp::Reverse(status_time(task)));
    }
    if request.include_artifacts != Some(true) {
        for task in &mut tasks {
            if let Some(object) = task.as_object_mut() {
                object.remove("artifacts");
            }
        }
    }
    let next_page_token = match after_cursor.get(examined.wrapping_sub(1)) {
        Some((seq, _, _)) if examined < after_cursor.len() => gateway.shared.page_tokens.seal(owner_key, &query, *seq),
        _ => String::new(),
    };
    let result = json!({
        "tasks": tasks,
        "nextPageToken": next_page_token,
        // The page size used (as the reference SDK answers), not the count of this page's tasks.
        "pageSize": page_size,
        // What the gateway's own records select; with a state or time filter, an upper bound (how
        // many pass is known only by asking the agents about every task).
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

/// `statusTimestampAfter` as the instant it names (RFC 3339: any offset, any fraction).
fn parse_timestamp(text: &str) -> Result<OffsetDateTime, A2aError> {
    OffsetDateTime::parse(text, &Rfc3339).map_err(|_| {
        A2aError::invalid_params("statusTimestampAfter must be an RFC 3339 timestamp such as 2026-12-06T10:00:00Z")
    })
}

/// The task's state as its agent answered it.
fn task_state(task: &Value) -> Option<TaskState> {
    TaskState::from_name(task.get("status")?.get("state")?.as_str()?)
}

/// When a task's status last changed, if its agent says so in a form that can be read.
fn status_time(task: &Value) -> Option<OffsetDateTime> {
    let text = task.get("status")?.get("timestamp")?.as_str()?;
    OffsetDateTime::parse(text, &Rfc3339).ok()
}

fn json_response(value: &Value, content_type: &'static str) -> Response<Body> {
    let mut response = Response::new(Body::from(serde_json::to_vec(value).unwrap_or_default()));
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}
