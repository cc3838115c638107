//! proptest strategies for canonical A2A 1.0 values: what a 1.0 agent could send, in the form the
//! model reads it back (ProtoJSON: no empty optional strings, no `null` data).

use proptest::collection::{btree_map, vec};
use proptest::option;
use proptest::prelude::*;
use serde_json::{Map, Value};

use a2a_model::*;

pub fn id() -> impl Strategy<Value = String> {
    "[a-z0-9][a-z0-9-]{0,11}"
}

pub fn uuid() -> impl Strategy<Value = String> {
    any::<u128>().prop_map(|n| uuid::Uuid::from_u128(n).hyphenated().to_string())
}

/// Any text, unicode and empty included.
pub fn text() -> impl Strategy<Value = String> {
    "\\PC{0,16}"
}

pub fn opt_text() -> impl Strategy<Value = Option<String>> {
    option::of("\\PC{1,12}")
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(Value::from),
        (-1.0e6f64..1.0e6).prop_map(Value::from),
        text().prop_map(Value::String),
    ]
}

pub fn json() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(2, 12, 3, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..3).prop_map(Value::Array),
            btree_map("[a-z]{1,6}", inner, 0..3).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Metadata; `data_part_compat` is the 0.3 wrapper's marker, reserved.
pub fn metadata() -> impl Strategy<Value = Option<Struct>> {
    option::of(btree_map("[a-z][a-zA-Z]{0,7}", json(), 0..3).prop_map(|m| m.into_iter().collect::<Map<_, _>>()))
}

pub fn part() -> impl Strategy<Value = Part> {
    let content = prop_oneof![
        text().prop_map(PartContent::Text),
        "[A-Za-z0-9+/]{0,12}={0,2}".prop_map(PartContent::Raw),
        "https://[a-z]{1,8}\\.example/[a-z]{0,8}".prop_map(PartContent::Url),
        json().prop_filter("null data reads as absent", |v| !v.is_null()).prop_map(PartContent::Data),
    ];
    (content, metadata(), opt_text(), option::of("[a-z]{1,5}/[a-z]{1,5}"))
        .prop_map(|(content, metadata, filename, media_type)| Part { content, metadata, filename, media_type })
}

pub fn role() -> impl Strategy<Value = Role> {
    prop_oneof![Just(Role::Unspecified), Just(Role::User), Just(Role::Agent)]
}

pub fn state() -> impl Strategy<Value = TaskState> {
    proptest::sample::select(TaskState::ALL)
}

pub fn message() -> impl Strategy<Value = Message> {
    (id(), option::of(id()), option::of(id()), role(), vec(part(), 0..3), metadata(), vec(id(), 0..2), vec(id(), 0..2))
        .prop_map(|(message_id, context_id, task_id, role, parts, metadata, extensions, reference_task_ids)| Message {
            message_id,
            context_id,
            task_id,
            role,
            parts,
            metadata,
            extensions,
            reference_task_ids,
        })
}

pub fn timestamp() -> impl Strategy<Value = Option<String>> {
    option::of("2026-1[0-2]-[0-2][1-9]T[0-2][0-9]:[0-5][0-9]:[0-5][0-9]\\.[0-9]{6}Z")
}

pub fn status() -> impl Strategy<Value = TaskStatus> {
    (state(), option::of(message()), timestamp()).prop_map(|(state, message, timestamp)| TaskStatus {
        state,
        message,
        timestamp,
    })
}

pub fn artifact() -> impl Strategy<Value = Artifact> {
    (id(), opt_text(), opt_text(), vec(part(), 0..3), metadata(), vec(id(), 0..2)).prop_map(
        |(artifact_id, name, description, parts, metadata, extensions)| Artifact {
            artifact_id,
            name,
            description,
            parts,
            metadata,
            extensions,
        },
    )
}

pub fn task() -> impl Strategy<Value = Task> {
    (id(), id(), status(), vec(artifact(), 0..3), vec(message(), 0..3), metadata()).prop_map(
        |(id, context_id, status, artifacts, history, metadata)| Task {
            id,
            context_id,
            status,
            artifacts,
            history,
            metadata,
        },
    )
}

pub fn stream_response() -> impl Strategy<Value = StreamResponse> {
    prop_oneof![
        task().prop_map(StreamResponse::Task),
        message().prop_map(StreamResponse::Message),
        (id(), id(), status(), metadata()).prop_map(|(task_id, context_id, status, metadata)| {
            StreamResponse::StatusUpdate(TaskStatusUpdateEvent { task_id, context_id, status, metadata })
        }),
        (id(), id(), artifact(), any::<bool>(), any::<bool>(), metadata()).prop_map(
            |(task_id, context_id, artifact, append, last_chunk, metadata)| {
                StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                    task_id,
                    context_id,
                    artifact,
                    append,
                    last_chunk,
                    metadata,
                })
            }
        ),
    ]
}

pub fn push_config() -> impl Strategy<Value = TaskPushNotificationConfig> {
    let authentication = option::of((prop_oneof![Just(String::new()), "[A-Z][a-z]{2,6}"], opt_text()))
        .prop_map(|a| a.map(|(scheme, credentials)| AuthenticationInfo { scheme, credentials }));
    (
        option::of(id()),
        option::of(id()),
        option::of(id()),
        "https://[a-z]{1,8}\\.example/hook",
        opt_text(),
        authentication,
    )
        .prop_map(|(tenant, id, task_id, url, token, authentication)| TaskPushNotificationConfig {
            tenant,
            id,
            task_id,
            url,
            token,
            authentication,
        })
}

pub fn configuration() -> impl Strategy<Value = SendMessageConfiguration> {
    (vec("[a-z]{1,5}/[a-z]{1,5}", 0..2), option::of(push_config()), option::of(-1i32..5), any::<bool>()).prop_map(
        |(accepted_output_modes, task_push_notification_config, history_length, return_immediately)| {
            SendMessageConfiguration {
                accepted_output_modes,
                task_push_notification_config,
                history_length,
                return_immediately,
            }
        },
    )
}

pub fn send_request(task_id: BoxedStrategy<Option<String>>) -> impl Strategy<Value = SendMessageRequest> {
    (option::of(id()), message(), task_id, option::of(configuration()), metadata()).prop_map(
        |(tenant, mut message, task_id, configuration, metadata)| {
            message.task_id = task_id;
            SendMessageRequest { tenant, message, configuration, metadata }
        },
    )
}
