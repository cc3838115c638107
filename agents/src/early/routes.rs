//! The early agent's HTTP surface, shaped like the seed's FastAPI server: JSON bodies, errors as
//! `{"detail": …}` with a real status — 404 unknown task, 409 a task id already used, 400 cancel of a
//! task that is not submitted / working / input-required or continue of a task not waiting for input,
//! 422 a body that does not fit (FastAPI's validation answer: `detail` lists `loc` / `msg` / `type`).

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::StreamExt;
use http::{HeaderMap, Method, StatusCode, Uri};
use serde::Deserialize;
use serde_json::{Value, json};

use super::EarlyApp;
use super::model::{Message, Role, SendParams, Task, TaskState, TaskStatus};
use super::skills::{self, Outcome};
use crate::recorder::{Binding, Recording};
use crate::sse;
use crate::time::now_rfc3339;

/// An error answer.
pub struct Refusal {
    status: StatusCode,
    detail: Value,
}

impl Refusal {
    fn new(status: StatusCode, detail: impl Into<String>) -> Refusal {
        Refusal { status, detail: Value::String(detail.into()) }
    }

    /// FastAPI's 422: where in the body, and what is wrong there.
    fn invalid(loc: Vec<Value>, msg: impl Into<String>) -> Refusal {
        let mut path = vec![json!("body")];
        path.extend(loc);
        Refusal {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            detail: json!([{"loc": path, "msg": msg.into(), "type": "value_error"}]),
        }
    }

    fn not_found(id: &str) -> Refusal {
        Refusal::new(StatusCode::NOT_FOUND, format!("Task {id} not found"))
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        (self.status, Json(json!({"detail": self.detail}))).into_response()
    }
}

fn record(app: &EarlyApp, method: &Method, uri: &Uri, headers: &HeaderMap, operation: &str, task_id: Option<&str>) {
    let binding = if operation == "GetAgentCard" { Binding::Card } else { Binding::Rest };
    let recording =
        Recording { operation: Some(operation.into()), task_id: task_id.map(str::to_owned), ..Recording::new(binding) };
    app.recorder.record(method, uri, headers, recording);
}

/// Reads a send body, naming the offending field like FastAPI does.
fn parse_send(body: &[u8]) -> Result<SendParams, Refusal> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let params: SendParams = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let loc = e
            .path()
            .iter()
            .filter_map(|segment| match segment {
                serde_path_to_error::Segment::Seq { index } => Some(json!(index)),
                serde_path_to_error::Segment::Map { key } => Some(json!(key)),
                serde_path_to_error::Segment::Enum { variant } => Some(json!(variant)),
                serde_path_to_error::Segment::Unknown => None,
            })
            .collect();
        let message = e.into_inner().to_string();
        let message = message.split(" at line ").next().unwrap_or_default().to_owned();
        Refusal::invalid(loc, message)
    })?;
    de.end().map_err(|e| Refusal::invalid(vec![], format!("trailing characters after the JSON body: {e}")))?;
    if params.message.role != Role::User {
        return Err(Refusal::invalid(vec![json!("message"), json!("role")], "a client sends user messages"));
    }
    Ok(params)
}

/// A client-generated task id: a UUID in its hyphenated form.
fn check_id(id: Option<&str>) -> Result<String, Refusal> {
    let loc = || vec![json!("id")];
    let id = id.ok_or_else(|| Refusal::invalid(loc(), "field required"))?;
    if id.len() != 36 || uuid::Uuid::try_parse(id).is_err() {
        return Err(Refusal::invalid(loc(), "value is not a valid uuid"));
    }
    Ok(id.to_owned())
}

fn skill_of(params: &SendParams) -> Result<&'static str, Refusal> {
    match params.skill_id() {
        None => Ok(skills::ECHO),
        Some(wanted) => skills::SKILLS.into_iter().find(|s| *s == wanted).ok_or_else(|| {
            Refusal::invalid(
                vec![json!("metadata"), json!("skillId")],
                format!("unknown skill '{wanted}': this agent has {}", skills::SKILLS.join(", ")),
            )
        }),
    }
}

fn status(state: TaskState, message: Option<Message>) -> TaskStatus {
    TaskStatus { state, message, timestamp: now_rfc3339() }
}

/// Validates a new task's request and stores the task, submitted.
fn create(app: &EarlyApp, body: &[u8]) -> Result<(Task, &'static str, Option<usize>), Refusal> {
    let params = parse_send(body)?;
    let id = check_id(params.id.as_deref())?;
    let skill = skill_of(&params)?;
    let task = Task {
        id: id.clone(),
        session_id: params.session_id,
        status: status(TaskState::Submitted, None),
        artifacts: Vec::new(),
        history: vec![params.message],
        // The request's metadata (e.g. the skill) is about the call, not kept on the task.
        metadata: None,
    };
    app.store.create(task.clone(), skill).map_err(|_| {
        Refusal::new(StatusCode::CONFLICT, format!("Task {id} already exists; continue it with POST /tasks/{id}/send"))
    })?;
    Ok((task, skill, params.history_length))
}

/// Runs the turn of a working task and records its outcome; `None` if the task is gone.
fn finish_turn(app: &EarlyApp, id: &str, skill: &'static str, history: &[Message]) -> Option<Task> {
    let Outcome { state, message, artifacts } = skills::run(skill, history);
    app.store.update(id, |stored| {
        // A cancel that got in first wins: the task stays canceled.
        if stored.task.status.state == TaskState::Working {
            stored.task.artifacts.extend(artifacts);
            stored.task.status = status(state, message);
        }
        stored.task.clone()
    })
}

fn set_working(app: &EarlyApp, id: &str) -> Option<Task> {
    app.store.update(id, |stored| {
        stored.task.status = status(TaskState::Working, None);
        stored.task.clone()
    })
}

/// `POST /tasks/send`: runs the task to its end (completed, or input-required) and answers with it.
pub async fn send(
    State(app): State<Arc<EarlyApp>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    record(&app, &method, &uri, &headers, "tasks/send", None);
    let (task, skill, history_length) = match create(&app, &body) {
        Ok(created) => created,
        Err(refusal) => return refusal.into_response(),
    };
    set_working(&app, &task.id);
    match finish_turn(&app, &task.id, skill, &task.history) {
        Some(done) => Json(done.with_history_length(history_length)).into_response(),
        None => Refusal::not_found(&task.id).into_response(),
    }
}

/// `POST /tasks/sendSubscribe`: the same, as SSE; each event is the whole task (working, then the end).
pub async fn send_subscribe(
    State(app): State<Arc<EarlyApp>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    record(&app, &method, &uri, &headers, "tasks/sendSubscribe", None);
    let (task, skill, history_length) = match create(&app, &body) {
        Ok(created) => created,
        Err(refusal) => return refusal.into_response(),
    };
    let snapshots: Vec<Task> = [set_working(&app, &task.id), finish_turn(&app, &task.id, skill, &task.history)]
        .into_iter()
        .flatten()
        .map(|t| t.with_history_length(history_length))
        .collect();
    let frames: Vec<Bytes> = snapshots.iter().map(sse::frame).collect();
    sse::response(futures::stream::iter(frames).boxed())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetQuery {
    history_length: Option<usize>,
}

/// `GET /tasks/{id}`
pub async fn get(
    State(app): State<Arc<EarlyApp>>,
    Path(id): Path<String>,
    query: Result<Query<GetQuery>, QueryRejection>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    record(&app, &method, &uri, &headers, "tasks/get", Some(&id));
    let Ok(Query(query)) = query else {
        return Refusal::new(StatusCode::UNPROCESSABLE_ENTITY, "historyLength must be a whole number").into_response();
    };
    match app.store.get(&id) {
        Some(stored) => Json(stored.task.with_history_length(query.history_length)).into_response(),
        None => Refusal::not_found(&id).into_response(),
    }
}

/// `POST /tasks/{id}/cancel`
pub async fn cancel(
    State(app): State<Arc<EarlyApp>>,
    Path(id): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    record(&app, &method, &uri, &headers, "tasks/cancel", Some(&id));
    let outcome = app.store.update(&id, |stored| {
        let state = stored.task.status.state;
        if !state.is_cancelable() {
            return Err(state);
        }
        if let Some(question) = stored.task.status.message.take() {
            stored.task.history.push(question);
        }
        stored.task.status = status(TaskState::Canceled, Some(Message::agent("canceled by request")));
        Ok(stored.task.clone())
    });
    match outcome {
        None => Refusal::not_found(&id).into_response(),
        Some(Err(state)) => {
            let state =
                serde_json::to_value(state).ok().and_then(|s| s.as_str().map(str::to_owned)).unwrap_or_default();
            Refusal::new(StatusCode::BAD_REQUEST, format!("Task {id} cannot be canceled: it is {state}"))
                .into_response()
        }
        Some(Ok(task)) => Json(task).into_response(),
    }
}

/// `POST /tasks/{id}/send`: the caller's answer to a task waiting for input.
pub async fn continue_task(
    State(app): State<Arc<EarlyApp>>,
    Path(id): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    record(&app, &method, &uri, &headers, "tasks/continue", Some(&id));
    let Some(stored) = app.store.get(&id) else {
        return Refusal::not_found(&id).into_response();
    };
    let params = match parse_send(&body) {
        Ok(params) => params,
        Err(refusal) => return refusal.into_response(),
    };
    if params.id.as_deref().is_some_and(|body_id| body_id != id) {
        return Refusal::invalid(vec![json!("id")], "the body's id differs from the task id in the path")
            .into_response();
    }
    let history_length = params.history_length;
    let resumed = app.store.update(&id, |stored| {
        if stored.task.status.state != TaskState::InputRequired {
            return Err(stored.task.status.state);
        }
        if let Some(question) = stored.task.status.message.take() {
            stored.task.history.push(question);
        }
        stored.task.history.push(params.message);
        stored.task.status = status(TaskState::Working, None);
        Ok(stored.task.history.clone())
    });
    let history = match resumed {
        Some(Ok(history)) => history,
        Some(Err(state)) => {
            let state =
                serde_json::to_value(state).ok().and_then(|s| s.as_str().map(str::to_owned)).unwrap_or_default();
            return Refusal::new(StatusCode::BAD_REQUEST, format!("Task {id} is {state}, not waiting for input"))
                .into_response();
        }
        None => return Refusal::not_found(&id).into_response(),
    };
    match finish_turn(&app, &id, stored.skill, &history) {
        Some(done) => Json(done.with_history_length(history_length)).into_response(),
        None => Refusal::not_found(&id).into_response(),
    }
}

/// `GET /.well-known/agent.json`
pub async fn card(State(app): State<Arc<EarlyApp>>, method: Method, uri: Uri, headers: HeaderMap) -> Response {
    record(&app, &method, &uri, &headers, "GetAgentCard", None);
    Json(app.card.clone()).into_response()
}

/// Paths the agent does not have, and methods a path does not take, answered like FastAPI.
pub async fn not_found() -> Response {
    Refusal::new(StatusCode::NOT_FOUND, "Not Found").into_response()
}

pub async fn method_not_allowed() -> Response {
    Refusal::new(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed").into_response()
}

/// `GET /debug/requests`
pub async fn recorded(State(app): State<Arc<EarlyApp>>) -> Response {
    Json(app.recorder.all()).into_response()
}

/// `DELETE /debug/requests`
pub async fn clear_recorded(State(app): State<Arc<EarlyApp>>) -> StatusCode {
    app.recorder.clear();
    StatusCode::NO_CONTENT
}
