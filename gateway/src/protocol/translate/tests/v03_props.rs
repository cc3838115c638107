//! 1.0 → 0.3 → 1.0 through the wire form (0.3 JSON bytes) keeps every field 0.3 can carry.

use a2a_core::Operation;
use proptest::option;
use proptest::prelude::*;
use serde::Serialize;

use super::strategies::*;
use crate::protocol::translate::v03;
use a2a_model::*;

fn wire(value: &impl Serialize) -> Vec<u8> {
    serde_json::to_vec(value).expect("serialises")
}

/// A part as it comes back from 0.3: text and data parts lose `filename` and `mediaType`; a data
/// part that is not an object (wrapped, with a marker in its metadata) loses an empty `metadata: {}`.
pub fn carry_part(mut part: Part) -> Part {
    if matches!(part.content, PartContent::Text(_) | PartContent::Data(_)) {
        part.filename = None;
        part.media_type = None;
    }
    if matches!(&part.content, PartContent::Data(data) if !data.is_object()) {
        part.metadata = part.metadata.filter(|m| !m.is_empty());
    }
    part
}

/// A message as it comes back from 0.3: no unspecified role.
pub fn carry_message(mut m: Message) -> Message {
    if m.role == Role::Unspecified {
        m.role = Role::Agent;
    }
    m.parts = m.parts.into_iter().map(carry_part).collect();
    m
}

fn carry_status(mut s: TaskStatus) -> TaskStatus {
    s.message = s.message.map(carry_message);
    s
}

fn carry_artifact(mut a: Artifact) -> Artifact {
    a.parts = a.parts.into_iter().map(carry_part).collect();
    a
}

pub fn carry_task(mut t: Task) -> Task {
    t.status = carry_status(t.status);
    t.artifacts = t.artifacts.into_iter().map(carry_artifact).collect();
    t.history = t.history.into_iter().map(carry_message).collect();
    t
}

fn carry_event(event: StreamResponse) -> StreamResponse {
    match event {
        StreamResponse::Task(t) => StreamResponse::Task(carry_task(t)),
        StreamResponse::Message(m) => StreamResponse::Message(carry_message(m)),
        StreamResponse::StatusUpdate(mut u) => {
            u.status = carry_status(u.status);
            StreamResponse::StatusUpdate(u)
        }
        StreamResponse::ArtifactUpdate(mut u) => {
            u.artifact = carry_artifact(u.artifact);
            StreamResponse::ArtifactUpdate(u)
        }
    }
}

/// Push configs in 0.3: no tenant; the task id only where the 0.3 object has one.
fn carry_push_config(mut c: TaskPushNotificationConfig, keeps_task_id: bool) -> TaskPushNotificationConfig {
    c.tenant = None;
    if !keeps_task_id {
        c.task_id = None;
    }
    c
}

fn carry_request(request: Request) -> Request {
    let positive = |n: Option<i32>| n.filter(|n| *n > 0);
    match request {
        Request::SendMessage(r) => Request::SendMessage(carry_send(r)),
        Request::SendStreamingMessage(r) => Request::SendStreamingMessage(carry_send(r)),
        Request::GetTask(r) => {
            Request::GetTask(GetTaskRequest { tenant: None, id: r.id, history_length: positive(r.history_length) })
        }
        Request::CancelTask(r) => Request::CancelTask(CancelTaskRequest { tenant: None, ..r }),
        Request::SubscribeToTask(r) => Request::SubscribeToTask(SubscribeToTaskRequest { tenant: None, ..r }),
        Request::CreateTaskPushNotificationConfig(c) => {
            Request::CreateTaskPushNotificationConfig(carry_push_config(c, true))
        }
        Request::GetTaskPushNotificationConfig(r) => {
            Request::GetTaskPushNotificationConfig(TaskPushNotificationConfigRef { tenant: None, ..r })
        }
        Request::DeleteTaskPushNotificationConfig(r) => {
            Request::DeleteTaskPushNotificationConfig(TaskPushNotificationConfigRef { tenant: None, ..r })
        }
        Request::ListTaskPushNotificationConfigs(r) => {
            Request::ListTaskPushNotificationConfigs(ListTaskPushNotificationConfigsRequest {
                task_id: r.task_id,
                ..Default::default()
            })
        }
        Request::GetExtendedAgentCard(_) => Request::GetExtendedAgentCard(GetExtendedAgentCardRequest::default()),
        other @ Request::ListTasks(_) => other,
    }
}

fn carry_send(r: SendMessageRequest) -> SendMessageRequest {
    SendMessageRequest {
        tenant: None,
        message: carry_message(r.message),
        configuration: r.configuration.map(|c| SendMessageConfiguration {
            history_length: c.history_length.filter(|n| *n > 0),
            task_push_notification_config: c.task_push_notification_config.map(|p| carry_push_config(p, false)),
            ..c
        }),
        metadata: r.metadata,
    }
}

fn request() -> impl Strategy<Value = Request> {
    let reference = || {
        (option::of(id()), id(), option::of(id())).prop_map(|(tenant, task_id, id)| TaskPushNotificationConfigRef {
            tenant,
            task_id,
            id,
        })
    };
    prop_oneof![
        send_request(option::of(id()).boxed()).prop_map(Request::SendMessage),
        send_request(option::of(id()).boxed()).prop_map(Request::SendStreamingMessage),
        (option::of(id()), id(), option::of(-1i32..5))
            .prop_map(|(tenant, id, history_length)| Request::GetTask(GetTaskRequest { tenant, id, history_length })),
        (option::of(id()), id(), metadata())
            .prop_map(|(tenant, id, metadata)| Request::CancelTask(CancelTaskRequest { tenant, id, metadata })),
        (option::of(id()), id())
            .prop_map(|(tenant, id)| Request::SubscribeToTask(SubscribeToTaskRequest { tenant, id })),
        push_config().prop_map(Request::CreateTaskPushNotificationConfig),
        reference().prop_map(Request::GetTaskPushNotificationConfig),
        reference().prop_map(Request::DeleteTaskPushNotificationConfig),
        (option::of(id()), id(), option::of(1i32..50), option::of(id())).prop_map(
            |(tenant, task_id, page_size, page_token)| {
                Request::ListTaskPushNotificationConfigs(ListTaskPushNotificationConfigsRequest {
                    tenant,
                    task_id,
                    page_size,
                    page_token,
                })
            }
        ),
        option::of(id()).prop_map(|tenant| Request::GetExtendedAgentCard(GetExtendedAgentCardRequest { tenant })),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn tasks_survive_0_3(task in task()) {
        let json = wire(&v03::Task::from(task.clone()));
        let back = v03::result_to_v1(Operation::GetTask, &json).expect("0.3 task reads back");
        prop_assert_eq!(back, Response::Task(carry_task(task)));
    }

    #[test]
    fn stream_events_survive_0_3(event in stream_response()) {
        let json = wire(&v03::event_from_v1(event.clone()));
        let back = v03::event_to_v1(&json).expect("0.3 event reads back");
        prop_assert_eq!(back, carry_event(event));
    }

    #[test]
    fn send_results_survive_0_3(event in stream_response()) {
        let response = match event {
            StreamResponse::Task(t) => Response::Send(SendMessageResponse::Task(t)),
            StreamResponse::Message(m) => Response::Send(SendMessageResponse::Message(m)),
            _ => return Ok(()),
        };
        let json = wire(&v03::result_from_v1(response.clone()).expect("to 0.3"));
        let back = v03::result_to_v1(Operation::SendMessage, &json).expect("reads back");
        let want = match response {
            Response::Send(SendMessageResponse::Task(t)) => Response::Send(SendMessageResponse::Task(carry_task(t))),
            Response::Send(SendMessageResponse::Message(m)) => {
                Response::Send(SendMessageResponse::Message(carry_message(m)))
            }
            other => other,
        };
        prop_assert_eq!(back, want);
    }

    #[test]
    fn requests_survive_0_3(request in request()) {
        let (method, params) = v03::request_from_v1(request.clone()).expect("0.3 has the method");
        let json = (!params.is_none()).then(|| wire(&params));
        let back = v03::request_to_v1(method, json.as_deref()).expect("0.3 request reads back");
        prop_assert_eq!(back, carry_request(request));
    }

    #[test]
    fn push_config_results_survive_0_3(config in push_config(), more in proptest::collection::vec(push_config(), 0..3)) {
        let json = wire(&v03::result_from_v1(Response::PushConfig(config.clone())).expect("to 0.3"));
        let back = v03::result_to_v1(Operation::GetTaskPushNotificationConfig, &json).expect("reads back");
        prop_assert_eq!(back, Response::PushConfig(carry_push_config(config, true)));
        let list = ListTaskPushNotificationConfigsResponse { configs: more.clone(), next_page_token: Some("p".into()) };
        let json = wire(&v03::result_from_v1(Response::PushConfigs(list)).expect("to 0.3"));
        let back = v03::result_to_v1(Operation::ListTaskPushNotificationConfigs, &json).expect("reads back");
        let configs = more.into_iter().map(|c| carry_push_config(c, true)).collect();
        prop_assert_eq!(back, Response::PushConfigs(ListTaskPushNotificationConfigsResponse { configs, next_page_token: None }));
    }

    #[test]
    fn errors_survive_0_3(code in prop_oneof![-32700i64..=-32600, -32009i64..=-32001, -32099i64..=-32000], message in "\\PC{1,20}") {
        let v1 = ErrorObject::new(ErrorKind::from_code(code), message.clone());
        let json = wire(&v03::error_from_v1(v1.clone()));
        let back = v03::error_to_v1(serde_json::from_slice(&json).expect("0.3 error"));
        let want = if v1.kind().known_to_v03() { v1 } else { ErrorObject::new(ErrorKind::Internal, message) };
        prop_assert_eq!(back, want);
    }
}
