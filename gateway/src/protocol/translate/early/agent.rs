//! Calling an early agent on behalf of a 1.0 request: the HTTP request to make, and its answer (a
//! whole Task) as the 1.0 result.
//!
//! Not carried 1.0 → early: `tenant`; the message's `messageId`, `extensions`, `referenceTaskIds`; a
//! push config in `configuration`; `returnImmediately` (an early send always waits);
//! SubscribeToTask, ListTasks, the push-config operations and the extended card (no early call;
//! refused as unsupported).

use a2a_core::Operation;
use http::Method;
use serde::Serialize;

use super::Task;
use super::calls::{DIALECT, check_task_id};
use super::{CancelTaskRequest, SendTaskRequest};
use crate::protocol::translate::TranslateError;
use crate::protocol::translate::error::parse_object;
use a2a_model::{self as model, Request, SendMessageResponse};

/// One HTTP request to an early agent; `path` is below the agent's base URL.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpRequest {
    pub method: Method,
    pub path: String,
    /// JSON body, if the call has one.
    pub body: Option<Vec<u8>>,
    /// Whether the answer is an SSE stream of whole tasks. A streamed *continuation* is sent as
    /// `POST /tasks/{id}/send` (the seed has no streamed continue): convert its one Task with
    /// [`SnapshotDiffer::continuing`](super::SnapshotDiffer::continuing).
    pub streams: bool,
}

fn json_body(body: &impl Serialize) -> Option<Vec<u8>> {
    Some(serde_json::to_vec(body).unwrap_or_default())
}

/// The early call for a 1.0 request. `new_task_id` names a new task (a UUID the gateway makes up and
/// then answers with as the task id, so no mapping is needed); calls on existing tasks use their id,
/// which must be a UUID.
pub fn request_from_v1(request: Request, new_task_id: &str) -> Result<HttpRequest, TranslateError> {
    let operation = request.operation();
    let unsupported = || TranslateError::Unsupported { operation: operation.method_name(), dialect: DIALECT };
    match request {
        Request::SendMessage(r) | Request::SendStreamingMessage(r) => {
            let streaming = operation == Operation::SendStreamingMessage;
            let existing = r.message.task_id.clone();
            let id = existing.clone().unwrap_or_else(|| new_task_id.to_owned());
            check_task_id(&id, if existing.is_some() { "/message/taskId" } else { "" })?;
            let configuration = r.configuration.unwrap_or_default();
            let body = SendTaskRequest {
                id: id.clone(),
                session_id: r.message.context_id.clone(),
                message: r.message.into(),
                metadata: r.metadata,
                history_length: configuration.history_length,
                accepted_output_modes: configuration.accepted_output_modes,
            };
            let (path, streams) = match (existing, streaming) {
                (Some(id), _) => (format!("/tasks/{id}/send"), false),
                (None, false) => ("/tasks/send".to_owned(), false),
                (None, true) => ("/tasks/sendSubscribe".to_owned(), true),
            };
            Ok(HttpRequest { method: Method::POST, path, body: json_body(&body), streams })
        }
        Request::GetTask(r) => {
            check_task_id(&r.id, "/id")?;
            let query = r.history_length.map(|n| format!("?historyLength={}", n.max(0))).unwrap_or_default();
            Ok(HttpRequest { method: Method::GET, path: format!("/tasks/{}{query}", r.id), body: None, streams: false })
        }
        Request::CancelTask(r) => {
            check_task_id(&r.id, "/id")?;
            let body = CancelTaskRequest { metadata: r.metadata };
            Ok(HttpRequest {
                method: Method::POST,
                path: format!("/tasks/{}/cancel", r.id),
                body: json_body(&body),
                streams: false,
            })
        }
        Request::SubscribeToTask(_)
        | Request::ListTasks(_)
        | Request::CreateTaskPushNotificationConfig(_)
        | Request::GetTaskPushNotificationConfig(_)
        | Request::ListTaskPushNotificationConfigs(_)
        | Request::DeleteTaskPushNotificationConfig(_)
        | Request::GetExtendedAgentCard(_) => Err(unsupported()),
    }
}

/// An early agent's answer (a whole Task) as the 1.0 result of `operation`.
pub fn result_to_v1(operation: Operation, body: &[u8]) -> Result<model::Response, TranslateError> {
    let task = parse_object::<Task>(body)?.into_v1();
    Ok(match operation {
        Operation::SendMessage => model::Response::Send(SendMessageResponse::Task(task)),
        Operation::GetTask | Operation::CancelTask => model::Response::Task(task),
        other => return Err(TranslateError::Unsupported { operation: other.method_name(), dialect: DIALECT }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const ID: &str = "6b0f3c52-5a55-4a7e-9d1b-0c8f2e4a9b10";

    #[test]
    fn one_0_requests_become_early_calls() {
        let send = model::SendMessageRequest {
            tenant: None,
            message: model::Message {
                message_id: "m".into(),
                role: model::Role::User,
                parts: vec![model::Part::text("hi")],
                ..Default::default()
            },
            configuration: None,
            metadata: None,
        };
        let http = request_from_v1(Request::SendStreamingMessage(send.clone()), ID).expect("stream");
        assert_eq!(
            (http.method.clone(), http.path.as_str(), http.streams),
            (Method::POST, "/tasks/sendSubscribe", true)
        );
        let sent: Value = serde_json::from_slice(http.body.as_deref().unwrap_or_default()).expect("json");
        assert_eq!(sent, json!({"id": ID, "message": {"role": "user", "parts": [{"type": "text", "text": "hi"}]}}));
        let mut follow_up = send;
        follow_up.message.task_id = Some(ID.into());
        let http = request_from_v1(Request::SendStreamingMessage(follow_up), "unused").expect("continue");
        assert_eq!((http.path, http.streams), (format!("/tasks/{ID}/send"), false));
        let get = model::GetTaskRequest { tenant: None, id: ID.into(), history_length: Some(0) };
        assert_eq!(
            request_from_v1(Request::GetTask(get), "").expect("get").path,
            format!("/tasks/{ID}?historyLength=0")
        );
        let subscribe = Request::SubscribeToTask(model::SubscribeToTaskRequest { tenant: None, id: ID.into() });
        assert!(matches!(request_from_v1(subscribe, ""), Err(TranslateError::Unsupported { .. })));
        let odd = Request::GetTask(model::GetTaskRequest { id: "../admin".into(), ..Default::default() });
        assert!(matches!(request_from_v1(odd, ""), Err(TranslateError::Invalid { .. })), "ids go into paths");
    }
}
