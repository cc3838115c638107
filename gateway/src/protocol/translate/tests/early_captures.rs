//! The early dialect against real bodies: the golden exchanges of the Rust early agent
//! (`tests/fixtures/dialects/`, shaped like the seed's server) translated to 1.0 and compared with the
//! reference SDK's 1.0 captures of the same conversations (echo "hello gateway", the clarify turns),
//! and the SDK's 1.0 captures (including whole streams) translated to the early shape and compared
//! with the early agent's answers — and with the SDK's own stored task at the end of a stream.

use a2a_core::Operation;
use serde_json::{Value, json};

use crate::protocol::translate::early;
use a2a_model::{ErrorKind, ErrorObject, Response, StreamResponse};

fn fixture(name: &str) -> Value {
    let path = a2a_e2e::repo_root().join("tests/fixtures/dialects").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("fixture JSON")
}

fn capture(name: &str) -> Value {
    serde_json::from_slice(&a2a_e2e::capture_body(name)).expect("a JSON response")
}

fn capture_events(name: &str) -> Vec<StreamResponse> {
    a2a_e2e::sse_data(&a2a_e2e::capture_body(name))
        .iter()
        .map(|data| {
            let envelope: Value = serde_json::from_str(data).expect("event JSON");
            serde_json::from_value(envelope["result"].clone()).expect("a 1.0 event")
        })
        .collect()
}

fn bytes(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).expect("json")
}

fn to_value(value: &impl serde::Serialize) -> Value {
    serde_json::to_value(value).expect("json")
}

const ID_KEYS: &[&str] = &["id", "messageId", "taskId", "contextId", "artifactId", "sessionId"];

/// Masks what differs between runs and dialects: every id, every timestamp.
fn mask(value: &Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().map(mask).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| {
                    let masked = match k.as_str() {
                        key if ID_KEYS.contains(&key) => json!("<id>"),
                        "timestamp" => json!("<ts>"),
                        _ => mask(v),
                    };
                    (k.clone(), masked)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

fn assert_same(left: &Value, right: &Value, what: &str) {
    let (l, r) = (mask(left), mask(right));
    assert_eq!(l, r, "{what}\nleft:  {l:#}\nright: {r:#}");
}

/// (early fixture, 1.0 capture whose result is the same conversation, operation)
const SAME_CONVERSATION: &[(&str, &str, Operation)] = &[
    ("early-01-send-echo.json", "jsonrpc-1.0-01-SendMessage-blocking.txt", Operation::SendMessage),
    ("early-04-clarify-turn1.json", "jsonrpc-1.0-10-multiturn-turn1-input-required.txt", Operation::SendMessage),
    ("early-05-clarify-turn2.json", "jsonrpc-1.0-11-multiturn-turn2-completed.txt", Operation::SendMessage),
];

#[test]
fn early_answers_read_as_the_sdks_1_0_answers() {
    for (early_name, v1_name, operation) in SAME_CONVERSATION {
        let early_body = &fixture(early_name)["response"]["body"];
        let v1 = early::result_to_v1(*operation, &bytes(early_body)).unwrap_or_else(|e| panic!("{early_name}: {e}"));
        assert_same(&to_value(&v1), &capture(v1_name)["result"], early_name);
    }
    // A read of the echo task is that task.
    let read = early::result_to_v1(Operation::GetTask, &bytes(&fixture("early-02-get.json")["response"]["body"]))
        .expect("task");
    assert_same(&to_value(&read), &capture("jsonrpc-1.0-01-SendMessage-blocking.txt")["result"]["task"], "early-02");
}

#[test]
fn the_sdks_1_0_answers_read_as_the_early_agents() {
    for (early_name, v1_name, operation) in SAME_CONVERSATION {
        let raw = serde_json::value::RawValue::from_string(capture(v1_name)["result"].to_string()).expect("raw");
        let response = Response::parse(*operation, &raw).expect("1.0 result");
        let task = early::result_from_v1(response, "6b0f3c52-5a55-4a7e-9d1b-0c8f2e4a9b10").expect("early task");
        assert_same(&to_value(&task), &fixture(early_name)["response"]["body"], v1_name);
    }
}

#[test]
fn an_early_stream_reads_as_1_0_events() {
    let events: Vec<early::Task> =
        serde_json::from_value(fixture("early-06-sendSubscribe-clarify.json")["events"].clone()).expect("tasks");
    let mut differ = early::SnapshotDiffer::new();
    let v1: Vec<StreamResponse> = events.into_iter().flat_map(|task| differ.push(task)).collect();
    assert!(differ.is_finished());
    let sdk = capture_events("jsonrpc-1.0-12-multiturn-stream-turn1.txt");
    assert_eq!(v1.len(), sdk.len(), "a snapshot, then the question");
    assert!(matches!(v1[0], StreamResponse::Task(_)));
    // The early agent starts at `working` where the SDK starts at `submitted`; the question is the same event.
    assert_same(&to_value(&v1[1]), &to_value(&sdk[1]), "the input-required update");

    let echo: Vec<early::Task> =
        serde_json::from_value(fixture("early-03-sendSubscribe-echo.json")["events"].clone()).expect("tasks");
    let mut differ = early::SnapshotDiffer::new();
    let v1: Vec<Value> = echo.into_iter().flat_map(|task| differ.push(task)).map(|e| to_value(&e)).collect();
    let kinds: Vec<&str> = v1.iter().filter_map(|e| e.as_object()?.keys().next().map(String::as_str)).collect();
    assert_eq!(kinds, ["task", "artifactUpdate", "statusUpdate"]);
    assert_eq!(v1[1]["artifactUpdate"]["lastChunk"], true, "the artifact came with the last snapshot");
    assert_eq!(v1[2]["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED");
}

/// (1.0 stream capture, 1.0 capture of the same task read afterwards)
const STREAM_THEN_TASK: &[(&str, &str)] = &[
    ("jsonrpc-1.0-02-SendStreamingMessage-sse.txt", "jsonrpc-1.0-03-GetTask.txt"),
    ("jsonrpc-1.0-07-SubscribeToTask-sse-then-cancel.txt", "jsonrpc-1.0-08-CancelTask.txt"),
];

#[test]
fn a_1_0_stream_builds_the_task_the_sdk_stored() {
    for (stream_name, task_name) in STREAM_THEN_TASK {
        let id = "6b0f3c52-5a55-4a7e-9d1b-0c8f2e4a9b10";
        let mut builder = early::SnapshotBuilder::new(id);
        let mut snapshots = Vec::new();
        for event in capture_events(stream_name) {
            snapshots.push(to_value(&builder.push(event).expect("a snapshot per event")));
        }
        assert!(builder.is_finished(), "{stream_name} ends the stream");
        let raw = serde_json::value::RawValue::from_string(capture(task_name)["result"].to_string()).expect("raw");
        let stored = early::result_from_v1(Response::parse(Operation::GetTask, &raw).expect("task"), id).expect("task");
        assert_eq!(snapshots.last(), Some(&to_value(&stored)), "{stream_name}: the last snapshot is {task_name}");

        // And the snapshots, sent by an early agent, give a 1.0 caller the SDK's events again (but
        // for `lastChunk`, which whole tasks cannot carry).
        let mut differ = early::SnapshotDiffer::new();
        let again: Vec<Value> = snapshots
            .into_iter()
            .flat_map(|s| differ.push(serde_json::from_value(s).expect("an early task")))
            .map(|e| to_value(&e))
            .collect();
        let sdk: Vec<Value> = capture_events(stream_name).iter().map(to_value).collect();
        let without_last_chunk = |mut v: Value| {
            if let Some(update) = v.get_mut("artifactUpdate").and_then(Value::as_object_mut) {
                update.remove("lastChunk");
            }
            v
        };
        assert_eq!(again.len(), sdk.len(), "{stream_name}");
        for (n, (ours, theirs)) in again.into_iter().zip(sdk).enumerate() {
            assert_same(&without_last_chunk(ours), &without_last_chunk(theirs), &format!("{stream_name} event {n}"));
        }
    }
}

#[test]
fn the_1_0_clarify_stream_ends_as_the_early_stream_ends() {
    let mut builder = early::SnapshotBuilder::new("6b0f3c52-5a55-4a7e-9d1b-0c8f2e4a9b10");
    let last = capture_events("jsonrpc-1.0-12-multiturn-stream-turn1.txt")
        .into_iter()
        .filter_map(|e| builder.push(e).map(|v| to_value(&v)))
        .last()
        .expect("snapshots");
    let early_events = fixture("early-06-sendSubscribe-clarify.json")["events"].clone();
    assert_same(&last, &early_events[1], "the input-required snapshot");
}

#[test]
fn early_errors_read_as_1_0_errors() {
    let cases: &[(&str, Operation, ErrorKind, Option<&str>)] = &[
        (
            "early-20-error-get-not-found.json",
            Operation::GetTask,
            ErrorKind::TaskNotFound,
            Some("jsonrpc-1.0-20-error-GetTask-not-found.txt"),
        ),
        (
            "early-21-error-cancel-completed.json",
            Operation::CancelTask,
            ErrorKind::TaskNotCancelable,
            Some("jsonrpc-1.0-09-CancelTask-already-canceled.txt"),
        ),
        ("early-22-error-duplicate-id.json", Operation::SendMessage, ErrorKind::InvalidParams, None),
        ("early-23-error-bad-part.json", Operation::SendMessage, ErrorKind::InvalidParams, None),
    ];
    for (name, operation, kind, sdk) in cases {
        let exchange = fixture(name);
        let status = exchange["response"]["status"].as_u64().and_then(|s| u16::try_from(s).ok()).expect("status");
        let error = early::error_to_v1(Some(*operation), status, &bytes(&exchange["response"]["body"]));
        assert_eq!(error.kind(), *kind, "{name}");
        assert!(!error.message.is_empty());
        if let Some(sdk) = sdk {
            let theirs: ErrorObject = serde_json::from_value(capture(sdk)["error"].clone()).expect("1.0 error");
            assert_eq!((error.code, &error.data), (theirs.code, &theirs.data), "{name}: the same code and ErrorInfo");
            let (back_status, _) = early::error_from_v1(theirs);
            assert_eq!(back_status, status, "{sdk} in the early dialect is the early agent's status");
        }
    }
    let bad_part = early::error_to_v1(
        Some(Operation::SendMessage),
        422,
        &bytes(&fixture("early-23-error-bad-part.json")["response"]["body"]),
    );
    assert_eq!(bad_part.message, "missing field `type`", "FastAPI's first msg");
}

#[test]
fn the_early_card_reads_as_a_1_0_card() {
    let card: early::AgentCard =
        serde_json::from_value(fixture("early-00-card.json")["response"]["body"].clone()).expect("card");
    let url = card.url.clone();
    let v1 = early::card_to_v1(card.clone());
    assert_eq!(v1.supported_interfaces[0].url, url);
    assert_eq!(v1.skills.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), ["early-echo", "early-clarify"]);
    assert_eq!(v1.skills[0].extra["inputSchema"], json!({"type": "object"}), "the seed's schema stays on the skill");
    assert_eq!(v1.capabilities.streaming, Some(true));
    let mut back = early::card_from_v1(v1);
    assert_eq!(back.capabilities.state_transition_history, None);
    back.capabilities.state_transition_history = card.capabilities.state_transition_history;
    assert_eq!(back.authentication, None, "no schemes");
    back.authentication = card.authentication.clone();
    assert_eq!(back, card);
}
