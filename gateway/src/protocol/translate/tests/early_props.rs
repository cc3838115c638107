//! 1.0 → early → 1.0 keeps every field the early dialect can carry; the stream converters turn a 1.0
//! stream into whole-Task snapshots and back without changing any snapshot.

use http::Method;
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use serde_json::Value;

use super::strategies::*;
use super::v03_props::carry_part;
use crate::protocol::translate::early;
use a2a_model::*;

/// Message ids the early dialect cannot carry are made up on the way back: fresh UUIDs.
fn blank_message_id(mut m: Message) -> Message {
    assert!(uuid::Uuid::parse_str(&m.message_id).is_ok(), "a fresh UUID, not {:?}", m.message_id);
    m.message_id.clear();
    m
}

/// A message as it comes back from the early dialect, inside task `task_id` of `context_id`.
fn carry_message(m: Message, task_id: Option<&str>, context_id: Option<&str>) -> Message {
    Message {
        message_id: String::new(),
        context_id: context_id.map(str::to_owned),
        task_id: task_id.map(str::to_owned),
        role: if m.role == Role::User { Role::User } else { Role::Agent },
        parts: m.parts.into_iter().map(carry_part).collect(),
        metadata: m.metadata,
        extensions: Vec::new(),
        reference_task_ids: Vec::new(),
    }
}

fn carry_state(state: TaskState) -> TaskState {
    match state {
        TaskState::Rejected => TaskState::Failed,
        TaskState::AuthRequired => TaskState::InputRequired,
        other => other,
    }
}

fn carry_task(t: Task) -> Task {
    let (task_id, context_id) = (t.id.clone(), t.context_id.clone());
    let (id, context) = (Some(task_id.as_str()), Some(context_id.as_str()));
    Task {
        status: TaskStatus {
            state: carry_state(t.status.state),
            message: t.status.message.map(|m| carry_message(m, id, context)),
            timestamp: t.status.timestamp,
        },
        artifacts: t
            .artifacts
            .into_iter()
            .enumerate()
            .map(|(i, a)| Artifact {
                artifact_id: early::artifact_id(i),
                extensions: Vec::new(),
                parts: a.parts.into_iter().map(carry_part).collect(),
                ..a
            })
            .collect(),
        history: t.history.into_iter().map(|m| carry_message(m, id, context)).collect(),
        id: t.id,
        context_id: t.context_id,
        metadata: t.metadata,
    }
}

fn blank_ids(mut t: Task) -> Task {
    t.status.message = t.status.message.map(blank_message_id);
    t.history = t.history.into_iter().map(blank_message_id).collect();
    t
}

/// The events of one task's stream: a first snapshot, working updates and artifact chunks, an end.
fn stream() -> impl Strategy<Value = Vec<StreamResponse>> {
    let step = prop_oneof![
        (status(), "\\PC{0,8}").prop_map(|(status, text)| (Some((status, text)), None)),
        (artifact(), any::<bool>(), 0usize..3)
            .prop_map(|(artifact, append, which)| (None, Some((artifact, append, which)))),
    ];
    (task(), vec(step, 0..6), proptest::sample::select(TaskState::ALL), timestamp()).prop_map(
        |(mut first, steps, last, at)| {
            first.status.state = TaskState::Submitted;
            let (task_id, context_id) = (first.id.clone(), first.context_id.clone());
            let mut events = vec![StreamResponse::Task(first)];
            for (n, (status, artifact)) in steps.into_iter().enumerate() {
                if let Some((mut status, text)) = status {
                    // Distinct status messages: an early snapshot cannot show two equal ones apart.
                    status.state = TaskState::Working;
                    let message = status.message.get_or_insert_with(Message::default);
                    message.parts.push(Part::text(format!("{n}:{text}")));
                    events.push(StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                        task_id: task_id.clone(),
                        context_id: context_id.clone(),
                        status,
                        metadata: None,
                    }));
                }
                if let Some((mut artifact, append, which)) = artifact {
                    artifact.artifact_id = format!("a{which}");
                    events.push(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                        task_id: task_id.clone(),
                        context_id: context_id.clone(),
                        artifact,
                        append,
                        last_chunk: false,
                        metadata: None,
                    }));
                }
            }
            let end = TaskStatus {
                state: if last.ends_stream() { last } else { TaskState::Completed },
                message: Some(Message { role: Role::Agent, parts: vec![Part::text("the end")], ..Default::default() }),
                timestamp: at,
            };
            events.push(StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id,
                context_id,
                status: end,
                metadata: None,
            }));
            events
        },
    )
}

fn early_request() -> impl Strategy<Value = Request> {
    prop_oneof![
        send_request(option::of(uuid()).boxed()).prop_map(Request::SendMessage),
        send_request(Just(None).boxed()).prop_map(Request::SendStreamingMessage),
        (uuid(), option::of(-1i32..5)).prop_map(|(id, history_length)| Request::GetTask(GetTaskRequest {
            tenant: None,
            id,
            history_length
        })),
        (uuid(), metadata()).prop_map(|(id, metadata)| Request::CancelTask(CancelTaskRequest {
            tenant: None,
            id,
            metadata
        })),
    ]
}

/// A request as the early dialect brings it back.
fn carry_request(request: Request) -> Request {
    let send = |r: SendMessageRequest| {
        let configuration = r.configuration.unwrap_or_default();
        let task_id = r.message.task_id.clone();
        let context_id = r.message.context_id.clone();
        SendMessageRequest {
            tenant: None,
            message: carry_message(r.message, task_id.as_deref(), context_id.as_deref()),
            configuration: (configuration.history_length.is_some() || !configuration.accepted_output_modes.is_empty())
                .then(|| SendMessageConfiguration {
                    accepted_output_modes: configuration.accepted_output_modes,
                    history_length: configuration.history_length,
                    ..Default::default()
                }),
            metadata: r.metadata,
        }
    };
    match request {
        Request::SendMessage(r) => Request::SendMessage(send(r)),
        // A streamed continuation goes as a plain continue; a new one stays a stream.
        Request::SendStreamingMessage(r) if r.message.task_id.is_some() => Request::SendMessage(send(r)),
        Request::SendStreamingMessage(r) => Request::SendStreamingMessage(send(r)),
        Request::GetTask(r) => {
            Request::GetTask(GetTaskRequest { history_length: r.history_length.map(|n| n.max(0)), ..r })
        }
        other => other,
    }
}

fn blank_request_ids(request: Request) -> Request {
    match request {
        Request::SendMessage(mut r) => {
            r.message = blank_message_id(r.message);
            Request::SendMessage(r)
        }
        Request::SendStreamingMessage(mut r) => {
            r.message = blank_message_id(r.message);
            Request::SendStreamingMessage(r)
        }
        other => other,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn tasks_survive_the_early_dialect(task in task()) {
        let json = serde_json::to_vec(&early::Task::from_v1(task.clone(), None)).expect("json");
        let early: early::Task = serde_json::from_slice(&json).expect("reads back");
        prop_assert_eq!(blank_ids(early.into_v1()), carry_task(task));
    }

    #[test]
    fn the_borrowed_view_writes_what_the_conversion_writes(task in task(), id in uuid()) {
        let view = serde_json::to_value(early::TaskView { task: &task, id: &id }).expect("view");
        let owned = serde_json::to_value(early::Task::from_v1(task, Some(&id))).expect("owned");
        prop_assert_eq!(view, owned);
    }

    #[test]
    fn requests_survive_the_early_dialect(request in early_request(), new_id in uuid()) {
        let http = early::request_from_v1(request.clone(), &new_id).expect("an early call");
        let (path, query) = match http.path.split_once('?') {
            Some((path, query)) => (path.to_owned(), Some(query.to_owned())),
            None => (http.path.clone(), None),
        };
        let call = early::Call::parse(&http.method, &path, query.as_deref(), http.body.as_deref().unwrap_or_default())
            .expect("the early call parses");
        let is_new_send = matches!(&call, early::Call::Send(_) | early::Call::SendSubscribe(_));
        prop_assert_eq!(call.task_id().map(str::to_owned), Some(match &request {
            Request::SendMessage(r) | Request::SendStreamingMessage(r) => r.message.task_id.clone().unwrap_or(new_id),
            Request::GetTask(r) => r.id.clone(),
            Request::CancelTask(r) => r.id.clone(),
            _ => unreachable!(),
        }));
        prop_assert!(is_new_send == matches!(&request,
            Request::SendMessage(r) | Request::SendStreamingMessage(r) if r.message.task_id.is_none()));
        let back = call.into_v1(None).expect("an operation");
        prop_assert_eq!(blank_request_ids(back), carry_request(request));
    }

    #[test]
    fn streams_survive_whole_task_snapshots(events in stream(), id in uuid()) {
        // 1.0 agent → early caller: each event becomes a whole task …
        let mut builder = early::SnapshotBuilder::new(id.clone());
        let mut snapshots: Vec<Value> = Vec::new();
        for event in events {
            let view = builder.push(event).expect("a snapshot per event until the end");
            snapshots.push(serde_json::to_value(view).expect("json"));
        }
        prop_assert!(builder.is_finished());
        // … and an early agent sending those snapshots gives a 1.0 caller the same task at every step.
        let mut differ = early::SnapshotDiffer::new();
        let mut rebuilt = early::SnapshotBuilder::new(id.clone());
        for snapshot in &snapshots {
            let task: early::Task = serde_json::from_value(snapshot.clone()).expect("an early task");
            for event in differ.push(task) {
                prop_assert!(!rebuilt.is_finished(), "nothing after the end");
                rebuilt.push(event);
            }
            prop_assert_eq!(&serde_json::to_value(rebuilt.snapshot()).expect("json"), snapshot);
        }
        prop_assert!(differ.is_finished() && rebuilt.is_finished());
        prop_assert_eq!(rebuilt.task().id.as_str(), id.as_str());
    }
}

#[test]
fn methods_of_the_early_calls() {
    let id = "6b0f3c52-5a55-4a7e-9d1b-0c8f2e4a9b10";
    let get = early::request_from_v1(Request::GetTask(GetTaskRequest { id: id.into(), ..Default::default() }), "")
        .expect("get");
    assert_eq!(get.method, Method::GET);
}
