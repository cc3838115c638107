//! A2A 0.3 JSON-RPC results and stream events (the wire model's `a2a_model::v03::{Event, Result03}`)
//! read into and written from the 1.0 [`Response`] and [`StreamResponse`]. A 0.3 result names its
//! kind (`task`, `message`, `status-update`, `artifact-update`); one without a `kind` is read by its
//! fields, as the SDK's union does.
//!
//! Not carried 1.0 → 0.3: ListTasks results (no 0.3 method); push-config list paging
//! (`nextPageToken`).

use a2a_core::Operation;
use serde::Deserialize;

use super::{DIALECT, Event, Result03, Task, TaskPushNotificationConfig};
use crate::protocol::translate::TranslateError;
use crate::protocol::translate::error::{parse, parse_object};
use a2a_model::{self as model, Response, SendMessageResponse, StreamResponse};

/// Just enough of an event to know its kind, read without allocating.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Peek<'a> {
    #[serde(borrow)]
    kind: Option<&'a str>,
    #[serde(rename = "final")]
    is_final: Option<serde::de::IgnoredAny>,
    artifact: Option<serde::de::IgnoredAny>,
    message_id: Option<serde::de::IgnoredAny>,
    role: Option<serde::de::IgnoredAny>,
}

/// Parses a 0.3 result object by its `kind` (or, when it has none, by its fields).
pub fn parse_event(json: &[u8]) -> Result<Event, TranslateError> {
    let peek: Peek = parse_peek(json)?;
    let kind = match peek.kind {
        Some(kind) => kind,
        None if peek.artifact.is_some() => "artifact-update",
        None if peek.is_final.is_some() => "status-update",
        None if peek.message_id.is_some() && peek.role.is_some() => "message",
        None => "task",
    };
    Ok(match kind {
        "task" => Event::Task(parse_object(json)?),
        "message" => Event::Message(parse(json)?),
        "status-update" => Event::StatusUpdate(parse(json)?),
        "artifact-update" => Event::ArtifactUpdate(parse(json)?),
        other => {
            return Err(TranslateError::invalid(
                "/kind",
                format!("unknown kind '{other}': expected task, message, status-update or artifact-update"),
            ));
        }
    })
}

fn parse_peek(json: &[u8]) -> Result<Peek<'_>, TranslateError> {
    serde_json::from_slice(json).map_err(|e| {
        if e.is_syntax() || e.is_eof() {
            TranslateError::Json(e.to_string())
        } else {
            TranslateError::invalid("", "a result must be an object with a string 'kind'")
        }
    })
}

/// A 0.3 stream event (the `result` of one SSE event) as a 1.0 StreamResponse.
pub fn event_to_v1(json: &[u8]) -> Result<StreamResponse, TranslateError> {
    parse_event(json).map(StreamResponse::from)
}

/// A 1.0 stream event as the 0.3 `result` of an SSE event.
pub fn event_from_v1(event: StreamResponse) -> Event {
    event.into()
}

/// A 0.3 unary `result` as the 1.0 result of `operation`.
pub fn result_to_v1(operation: Operation, json: &[u8]) -> Result<Response, TranslateError> {
    Ok(match operation {
        Operation::SendMessage => match parse_event(json)? {
            Event::Task(t) => Response::Send(SendMessageResponse::Task(t.into())),
            Event::Message(m) => Response::Send(SendMessageResponse::Message(m.into())),
            _ => return Err(TranslateError::invalid("/kind", "message/send answers with a task or a message")),
        },
        Operation::GetTask | Operation::CancelTask => Response::Task(parse_object::<Task>(json)?.into()),
        Operation::CreateTaskPushNotificationConfig | Operation::GetTaskPushNotificationConfig => {
            Response::PushConfig(parse_object::<TaskPushNotificationConfig>(json)?.into())
        }
        Operation::ListTaskPushNotificationConfigs => {
            let configs: Vec<TaskPushNotificationConfig> = parse(json)?;
            Response::PushConfigs(model::ListTaskPushNotificationConfigsResponse {
                configs: configs.into_iter().map(Into::into).collect(),
                next_page_token: None,
            })
        }
        Operation::DeleteTaskPushNotificationConfig => Response::Deleted(None),
        Operation::GetExtendedAgentCard => Response::Card(Box::new(super::card_to_v1(parse_object(json)?))),
        Operation::ListTasks => return Err(TranslateError::Unsupported { operation: "ListTasks", dialect: DIALECT }),
        Operation::SendStreamingMessage | Operation::SubscribeToTask => {
            return Err(TranslateError::invalid("", format!("{operation} answers with a stream of events")));
        }
    })
}

/// A 1.0 unary result as the 0.3 result.
pub fn result_from_v1(response: Response) -> Result<Result03, TranslateError> {
    Ok(match response {
        Response::Send(SendMessageResponse::Task(t)) | Response::Task(t) => Result03::Event(Event::Task(t.into())),
        Response::Send(SendMessageResponse::Message(m)) => Result03::Event(Event::Message(m.into())),
        Response::PushConfig(c) => Result03::PushConfig(c.into()),
        Response::PushConfigs(list) => Result03::PushConfigs(list.configs.into_iter().map(Into::into).collect()),
        Response::Deleted(_) => Result03::Deleted(None),
        Response::Card(card) => Result03::Card(Box::new(super::card_from_v1(*card))),
        Response::ListTasks(_) => {
            return Err(TranslateError::Unsupported { operation: "ListTasks", dialect: DIALECT });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn bytes(v: Value) -> Vec<u8> {
        serde_json::to_vec(&v).expect("json")
    }

    #[test]
    fn events_are_read_by_kind_or_shape() {
        let update = json!({"taskId": "t", "contextId": "c", "final": true, "status": {"state": "completed"}});
        assert!(matches!(parse_event(&bytes(update)), Ok(Event::StatusUpdate(_))));
        let message = json!({"messageId": "m", "role": "agent", "parts": []});
        assert!(matches!(parse_event(&bytes(message)), Ok(Event::Message(_))));
        let bad = json!({"kind": "status", "taskId": "t"});
        assert!(matches!(parse_event(&bytes(bad)), Err(TranslateError::Invalid { .. })));
        assert!(matches!(parse_event(b"[1]"), Err(TranslateError::Invalid { .. })));
        assert!(matches!(parse_event(b"{"), Err(TranslateError::Json(_))));
    }
}
