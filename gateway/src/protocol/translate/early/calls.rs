//! The early dialect's calls — `POST /tasks/send`, `POST /tasks/sendSubscribe`, `GET /tasks/{id}`,
//! `POST /tasks/{id}/cancel`, `POST /tasks/{id}/send` (continue) and the card at
//! `/.well-known/agent.json` — read from a caller's method + path + body and made 1.0 requests, and
//! the 1.0 answers made early answers.
//!
//! Task ids are the client's: they must be UUIDs (hyphenated form) wherever they appear. Not carried
//! early → 1.0: the task id of a new task (1.0 agents choose their own: map the caller's id to the
//! agent's).

use a2a_core::Operation;
use http::Method;

use super::{CancelTaskRequest, SendTaskRequest, Task};
use crate::protocol::translate::TranslateError;
use crate::protocol::translate::error::parse_object;
use a2a_model::{self as model, Request, SendMessageResponse};

pub(crate) const DIALECT: &str = "the early A2A REST dialect";

/// Where the early card lives.
pub const CARD_PATH: &str = "/.well-known/agent.json";

/// Which call a method and path name, before the body is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    Card,
    Send,
    SendSubscribe,
    Get(String),
    Cancel(String),
    Continue(String),
}

impl Route {
    /// The route of `method path` (path below the agent's base, query excluded).
    pub fn of(method: &Method, path: &str) -> Option<Route> {
        if path == CARD_PATH {
            return (method == Method::GET).then_some(Route::Card);
        }
        let rest = path.strip_prefix("/tasks/")?;
        let route = match (method, rest.split_once('/')) {
            (&Method::POST, None) if rest == "send" => Route::Send,
            (&Method::POST, None) if rest == "sendSubscribe" => Route::SendSubscribe,
            (&Method::GET, None) if !rest.is_empty() => Route::Get(rest.to_owned()),
            (&Method::POST, Some((id, "cancel"))) if !id.is_empty() => Route::Cancel(id.to_owned()),
            (&Method::POST, Some((id, "send"))) if !id.is_empty() => Route::Continue(id.to_owned()),
            _ => return None,
        };
        Some(route)
    }

    /// The 1.0 operation this call performs (`None` for the card, which is not an operation).
    pub fn operation(&self) -> Option<Operation> {
        match self {
            Route::Card => None,
            Route::Send | Route::Continue(_) => Some(Operation::SendMessage),
            Route::SendSubscribe => Some(Operation::SendStreamingMessage),
            Route::Get(_) => Some(Operation::GetTask),
            Route::Cancel(_) => Some(Operation::CancelTask),
        }
    }
}

/// A decoded early call.
#[derive(Debug, Clone, PartialEq)]
pub enum Call {
    Card,
    Send(SendTaskRequest),
    SendSubscribe(SendTaskRequest),
    Get { id: String, history_length: Option<i32> },
    Cancel { id: String, request: CancelTaskRequest },
    Continue(SendTaskRequest),
}

/// Checks that `id` is a UUID in its hyphenated form, as early task ids must be.
pub fn check_task_id(id: &str, pointer: &str) -> Result<(), TranslateError> {
    if id.len() == 36 && uuid::Uuid::try_parse(id).is_ok() {
        Ok(())
    } else {
        Err(TranslateError::invalid(pointer, "a task id must be a UUID like 4f5c0e9a-8d2b-4c1e-9f3a-2b6d7e8f9a0b"))
    }
}

fn history_length(query: Option<&str>) -> Result<Option<i32>, TranslateError> {
    let Some(query) = query else { return Ok(None) };
    for pair in query.split('&') {
        if let Some(value) = pair.strip_prefix("historyLength=") {
            let n = value.parse::<i32>().ok().filter(|n| *n >= 0);
            return n.map(Some).ok_or_else(|| {
                TranslateError::invalid("/historyLength", "historyLength must be a whole number of 0 or more")
            });
        }
    }
    Ok(None)
}

impl Call {
    /// Reads a call from its method, path (below the agent's base), query and body.
    pub fn parse(method: &Method, path: &str, query: Option<&str>, body: &[u8]) -> Result<Call, TranslateError> {
        let route = Route::of(method, path)
            .ok_or_else(|| TranslateError::UnknownOperation(format!("no early A2A call is {method} {path}")))?;
        let send_body = |body: &[u8]| -> Result<SendTaskRequest, TranslateError> { parse_object(body) };
        Ok(match route {
            Route::Card => Call::Card,
            Route::Send | Route::SendSubscribe => {
                let request = send_body(body)?;
                check_task_id(&request.id, "/id")?;
                if route == Route::Send { Call::Send(request) } else { Call::SendSubscribe(request) }
            }
            Route::Get(id) => {
                check_task_id(&id, "")?;
                Call::Get { id, history_length: history_length(query)? }
            }
            Route::Cancel(id) => {
                check_task_id(&id, "")?;
                let empty = body.iter().all(u8::is_ascii_whitespace);
                let request = if empty { CancelTaskRequest::default() } else { parse_object(body)? };
                Call::Cancel { id, request }
            }
            Route::Continue(id) => {
                check_task_id(&id, "")?;
                let mut request = send_body(body)?;
                if request.id.is_empty() {
                    request.id = id;
                } else if request.id != id {
                    return Err(TranslateError::invalid("/id", "the body's id differs from the task id in the path"));
                }
                Call::Continue(request)
            }
        })
    }

    /// The 1.0 operation of the call (`None` for the card).
    pub fn operation(&self) -> Option<Operation> {
        match self {
            Call::Card => None,
            Call::Send(_) | Call::Continue(_) => Some(Operation::SendMessage),
            Call::SendSubscribe(_) => Some(Operation::SendStreamingMessage),
            Call::Get { .. } => Some(Operation::GetTask),
            Call::Cancel { .. } => Some(Operation::CancelTask),
        }
    }

    /// The caller's task id.
    pub fn task_id(&self) -> Option<&str> {
        match self {
            Call::Card => None,
            Call::Send(r) | Call::SendSubscribe(r) | Call::Continue(r) => Some(&r.id),
            Call::Get { id, .. } | Call::Cancel { id, .. } => Some(id),
        }
    }

    /// The 1.0 request that performs this call. `backend` is the agent's task (its id and context)
    /// for calls on an existing task, when the agent knows it under another id than the caller's;
    /// `None` uses the caller's id. A new task's id is the agent's to choose, so it is not sent.
    pub fn into_v1(self, backend: Option<TaskRef<'_>>) -> Option<Request> {
        let task_id = |own: String| backend.map_or(own, |b| b.task_id.to_owned());
        Some(match self {
            Call::Card => return None,
            Call::Send(r) => Request::SendMessage(send_to_v1(r, None)),
            Call::SendSubscribe(r) => Request::SendStreamingMessage(send_to_v1(r, None)),
            Call::Continue(r) => {
                let own = TaskRef { task_id: &r.id, context_id: r.session_id.as_deref() };
                let target = backend.unwrap_or(own);
                let (id, context) = (target.task_id.to_owned(), target.context_id.map(str::to_owned));
                Request::SendMessage(send_to_v1(r, Some((id, context))))
            }
            Call::Get { id, history_length } => {
                Request::GetTask(model::GetTaskRequest { tenant: None, id: task_id(id), history_length })
            }
            Call::Cancel { id, request } => Request::CancelTask(model::CancelTaskRequest {
                tenant: None,
                id: task_id(id),
                metadata: request.metadata,
            }),
        })
    }
}

/// An agent's task: its id and context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskRef<'a> {
    pub task_id: &'a str,
    pub context_id: Option<&'a str>,
}

/// An early send as a 1.0 SendMessage; `task` = (task id, context id) when it continues a task.
fn send_to_v1(r: SendTaskRequest, task: Option<(String, Option<String>)>) -> model::SendMessageRequest {
    let (task_id, context_id) = match task {
        Some((id, context)) => (Some(id), context.or(r.session_id)),
        None => (None, r.session_id),
    };
    let configuration =
        (r.history_length.is_some() || !r.accepted_output_modes.is_empty()).then(|| model::SendMessageConfiguration {
            accepted_output_modes: r.accepted_output_modes,
            history_length: r.history_length,
            ..Default::default()
        });
    model::SendMessageRequest {
        tenant: None,
        message: r.message.into_v1(task_id.as_deref(), context_id.as_deref()),
        configuration,
        metadata: r.metadata,
    }
}

/// A 1.0 unary result as the early answer: the task, known to the caller as `early_id`. A message
/// answer (no task) becomes a completed task whose status message it is.
pub fn result_from_v1(response: model::Response, early_id: &str) -> Result<Task, TranslateError> {
    match response {
        model::Response::Send(SendMessageResponse::Task(task)) | model::Response::Task(task) => {
            Ok(Task::from_v1(task, Some(early_id)))
        }
        model::Response::Send(SendMessageResponse::Message(message)) => Ok(task_of_message(message, early_id)),
        _ => Err(TranslateError::invalid("", "an early agent answers only with tasks")),
    }
}

/// The task an early caller sees when a 1.0 agent answered with a bare message.
pub fn task_of_message(message: model::Message, early_id: &str) -> Task {
    let session_id = message.context_id.clone();
    let status = model::TaskStatus { state: model::TaskState::Completed, message: Some(message), timestamp: None };
    Task {
        id: early_id.to_owned(),
        session_id,
        status: status.into(),
        artifacts: Vec::new(),
        history: Vec::new(),
        metadata: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const ID: &str = "6b0f3c52-5a55-4a7e-9d1b-0c8f2e4a9b10";

    fn body(v: Value) -> Vec<u8> {
        serde_json::to_vec(&v).expect("json")
    }

    fn send_body() -> Vec<u8> {
        body(json!({"id": ID, "sessionId": "s-1", "message": {"role": "user",
            "parts": [{"type": "text", "text": "hello"}]}, "metadata": {"skillId": "early-echo"}}))
    }

    #[test]
    fn routes() {
        let cases = [
            (Method::POST, "/tasks/send", Some(Route::Send)),
            (Method::POST, "/tasks/sendSubscribe", Some(Route::SendSubscribe)),
            (Method::GET, "/tasks/abc", Some(Route::Get("abc".into()))),
            (Method::POST, "/tasks/abc/cancel", Some(Route::Cancel("abc".into()))),
            (Method::POST, "/tasks/abc/send", Some(Route::Continue("abc".into()))),
            (Method::GET, "/.well-known/agent.json", Some(Route::Card)),
            (Method::GET, "/tasks/send/extra/x", None),
            (Method::DELETE, "/tasks/abc", None),
            (Method::POST, "/tasks//cancel", None),
            (Method::POST, "/message:send", None),
        ];
        for (method, path, want) in cases {
            assert_eq!(Route::of(&method, path), want, "{method} {path}");
        }
    }

    #[test]
    fn a_send_becomes_a_1_0_send_without_the_callers_id() {
        let call = Call::parse(&Method::POST, "/tasks/send", None, &send_body()).expect("send");
        assert_eq!(call.task_id(), Some(ID));
        let Some(Request::SendMessage(r)) = call.into_v1(None) else { panic!("not a send") };
        assert_eq!(r.message.task_id, None);
        assert_eq!(r.message.context_id.as_deref(), Some("s-1"));
        assert_eq!(r.message.role, model::Role::User);
        assert_eq!(r.metadata.and_then(|m| m.get("skillId").cloned()), Some(json!("early-echo")));
    }

    #[test]
    fn a_continue_names_the_agents_task() {
        let call = Call::parse(&Method::POST, &format!("/tasks/{ID}/send"), None, &send_body()).expect("continue");
        let backend = TaskRef { task_id: "server-task", context_id: Some("server-ctx") };
        let Some(Request::SendMessage(r)) = call.into_v1(Some(backend)) else { panic!("not a send") };
        assert_eq!(r.message.task_id.as_deref(), Some("server-task"));
        assert_eq!(r.message.context_id.as_deref(), Some("server-ctx"));
        let other = "7c1f3c52-5a55-4a7e-9d1b-0c8f2e4a9b10";
        let err = Call::parse(&Method::POST, &format!("/tasks/{other}/send"), None, &send_body()).unwrap_err();
        assert_eq!(err, TranslateError::invalid("/id", "the body's id differs from the task id in the path"));
    }

    #[test]
    fn ids_must_be_uuids() {
        let bad = body(json!({"id": "task-1", "message": {"role": "user", "parts": []}}));
        assert!(matches!(Call::parse(&Method::POST, "/tasks/send", None, &bad), Err(TranslateError::Invalid { .. })));
        assert!(Call::parse(&Method::GET, "/tasks/not-a-uuid", None, b"").is_err());
        let simple = ID.replace('-', "");
        assert!(check_task_id(&simple, "").is_err(), "the hyphenated form only");
        let get = Call::parse(&Method::GET, &format!("/tasks/{ID}"), Some("historyLength=2"), b"").expect("get");
        assert_eq!(get, Call::Get { id: ID.into(), history_length: Some(2) });
        assert!(Call::parse(&Method::GET, &format!("/tasks/{ID}"), Some("historyLength=-1"), b"").is_err());
    }

    #[test]
    fn cancel_bodies_may_be_empty() {
        let call = Call::parse(&Method::POST, &format!("/tasks/{ID}/cancel"), None, b"").expect("cancel");
        let Some(Request::CancelTask(r)) = call.into_v1(None) else { panic!("not a cancel") };
        assert_eq!(r.id, ID);
    }

    #[test]
    fn a_message_answer_becomes_a_completed_task() {
        let message = model::Message { message_id: "m".into(), context_id: Some("c".into()), ..Default::default() };
        let task = result_from_v1(model::Response::Send(SendMessageResponse::Message(message)), ID).expect("task");
        assert_eq!(task.id, ID);
        assert_eq!(task.status.state, model::TaskState::Completed);
        assert_eq!(task.session_id.as_deref(), Some("c"));
    }
}
