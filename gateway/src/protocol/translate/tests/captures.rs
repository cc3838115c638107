//! The reference SDK's own exchanges (`tests/fixtures/wire-samples`): each 0.3 JSON-RPC body is
//! translated to 1.0 and compared, field by field, with the 1.0 body of the same exchange against the
//! same agent — and each 1.0 body translated to 0.3 and compared with the 0.3 capture. Ids, timestamps
//! (and, where the two runs sent different words, texts) differ between runs, so those are masked;
//! everything else — every key, state, role, kind, flag, name, data payload — must match.

use a2a_core::Operation;
use serde_json::{Value, json};

use crate::protocol::translate::jsonrpc::Envelope;
use crate::protocol::translate::v03;
use a2a_model as model;
use a2a_model::{ErrorObject, Request, Response, StreamResponse};

/// A capture's request body (the one line before curl's `[request body: …]` note).
fn request_body(name: &str) -> Vec<u8> {
    let path = a2a_e2e::repo_root().join("tests/fixtures/wire-samples").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let at = text.find("\n[request body:").unwrap_or_else(|| panic!("{name}: no request body"));
    let body = text[..at].lines().last().expect("a body line");
    body.as_bytes().to_vec()
}

fn response(name: &str) -> Value {
    serde_json::from_slice(&a2a_e2e::capture_body(name)).expect("a JSON response")
}

/// The JSON-RPC envelopes of an SSE capture.
fn events(name: &str) -> Vec<Value> {
    a2a_e2e::sse_data(&a2a_e2e::capture_body(name))
        .iter()
        .map(|data| serde_json::from_str(data).expect("event JSON"))
        .collect()
}

fn bytes(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).expect("json")
}

fn to_value(value: &impl serde::Serialize) -> Value {
    serde_json::to_value(value).expect("json")
}

/// Masks what differs between two runs: UUIDs, timestamps and, with `texts`, the words of text parts.
fn mask(value: &Value, texts: bool) -> Value {
    match value {
        Value::String(s) if uuid::Uuid::try_parse(s).is_ok() => json!("<id>"),
        Value::String(s) if s.len() > 20 && s.starts_with("2026-") && s.ends_with('Z') => json!("<ts>"),
        Value::Array(items) => Value::Array(items.iter().map(|v| mask(v, texts)).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| {
                    let v = if texts && k == "text" { json!("<text>") } else { mask(v, texts) };
                    (k.clone(), v)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

fn assert_same(translated: &Value, captured: &Value, texts: bool, what: &str) {
    let (t, c) = (mask(translated, texts), mask(captured, texts));
    assert_eq!(t, c, "{what}\ntranslated: {t:#}\ncaptured:   {c:#}");
}

/// (0.3 capture, 1.0 capture, operation, texts differ) of the same exchange against the same agent.
const UNARY_PAIRS: &[(&str, &str, Operation, bool)] = &[
    ("jsonrpc-0.3-01-message-send.txt", "jsonrpc-1.0-01-SendMessage-blocking.txt", Operation::SendMessage, true),
    ("jsonrpc-0.3-04-tasks-get.txt", "jsonrpc-1.0-03-GetTask.txt", Operation::GetTask, false),
    (
        "jsonrpc-0.3-05-message-send-nonblocking.txt",
        "jsonrpc-1.0-06-SendMessage-returnImmediately.txt",
        Operation::SendMessage,
        false,
    ),
    ("jsonrpc-0.3-07-tasks-cancel.txt", "jsonrpc-1.0-08-CancelTask.txt", Operation::CancelTask, false),
    (
        "jsonrpc-0.3-08-multiturn-turn1.txt",
        "jsonrpc-1.0-10-multiturn-turn1-input-required.txt",
        Operation::SendMessage,
        false,
    ),
    (
        "jsonrpc-0.3-09-multiturn-turn2.txt",
        "jsonrpc-1.0-11-multiturn-turn2-completed.txt",
        Operation::SendMessage,
        false,
    ),
];

const STREAM_PAIRS: &[(&str, &str)] = &[
    ("jsonrpc-0.3-03-message-stream-sse.txt", "jsonrpc-1.0-02-SendStreamingMessage-sse.txt"),
    ("jsonrpc-0.3-06-tasks-resubscribe-sse-then-cancel.txt", "jsonrpc-1.0-07-SubscribeToTask-sse-then-cancel.txt"),
];

#[test]
fn unary_results_match_in_both_directions() {
    for (v03_name, v1_name, operation, texts) in UNARY_PAIRS {
        let (v03_body, v1_body) = (response(v03_name), response(v1_name));
        let v03_result = bytes(&v03_body["result"]);
        let translated = v03::result_to_v1(*operation, &v03_result).unwrap_or_else(|e| panic!("{v03_name}: {e}"));
        assert_same(&to_value(&translated), &v1_body["result"], *texts, v03_name);

        let v1_result = bytes(&v1_body["result"]);
        let raw = serde_json::value::RawValue::from_string(String::from_utf8(v1_result).expect("utf-8")).expect("raw");
        let parsed = Response::parse(*operation, &raw).unwrap_or_else(|e| panic!("{v1_name}: {e}"));
        let back = v03::result_from_v1(parsed).expect("to 0.3");
        assert_same(&to_value(&back), &v03_body["result"], *texts, v1_name);
    }
}

#[test]
fn every_stream_event_matches_in_both_directions() {
    for (v03_name, v1_name) in STREAM_PAIRS {
        let (v03_events, v1_events) = (events(v03_name), events(v1_name));
        assert_eq!(v03_events.len(), v1_events.len(), "{v03_name}");
        for (n, (v03_event, v1_event)) in v03_events.iter().zip(&v1_events).enumerate() {
            let what = format!("{v03_name} event {n}");
            let translated = v03::event_to_v1(&bytes(&v03_event["result"])).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_same(&to_value(&translated), &v1_event["result"], false, &what);

            let parsed: StreamResponse = serde_json::from_value(v1_event["result"].clone()).expect("1.0 event");
            let back = v03::event_from_v1(parsed);
            assert_same(&to_value(&back), &v03_event["result"], false, &format!("{v1_name} event {n}"));
        }
    }
}

#[test]
fn the_last_0_3_status_update_is_final_and_the_others_not() {
    let v1_events = events("jsonrpc-1.0-02-SendStreamingMessage-sse.txt");
    let finals: Vec<Value> = v1_events
        .iter()
        .map(|e| to_value(&v03::event_from_v1(serde_json::from_value(e["result"].clone()).expect("event"))))
        .filter(|e| e["kind"] == "status-update")
        .map(|e| e["final"].clone())
        .collect();
    assert_eq!(finals, [json!(false), json!(false), json!(false), json!(true)]);
}

/// (0.3 capture, 1.0 capture, texts differ): requests that ask the same thing.
const REQUEST_PAIRS: &[(&str, &str, bool)] = &[
    ("jsonrpc-0.3-01-message-send.txt", "jsonrpc-1.0-01-SendMessage-blocking.txt", true),
    ("jsonrpc-0.3-03-message-stream-sse.txt", "jsonrpc-1.0-02-SendStreamingMessage-sse.txt", false),
    ("jsonrpc-0.3-04-tasks-get.txt", "jsonrpc-1.0-03-GetTask.txt", false),
    ("jsonrpc-0.3-05-message-send-nonblocking.txt", "jsonrpc-1.0-06-SendMessage-returnImmediately.txt", false),
    (
        "jsonrpc-0.3-06-tasks-resubscribe-sse-then-cancel.txt",
        "jsonrpc-1.0-07-SubscribeToTask-sse-then-cancel.txt",
        false,
    ),
    ("jsonrpc-0.3-07-tasks-cancel.txt", "jsonrpc-1.0-08-CancelTask.txt", false),
    ("jsonrpc-0.3-09-multiturn-turn2.txt", "jsonrpc-1.0-11-multiturn-turn2-completed.txt", false),
];

#[test]
fn requests_match_in_both_directions() {
    for (v03_name, v1_name, texts) in REQUEST_PAIRS {
        let (v03_body, v1_body) = (request_body(v03_name), request_body(v1_name));
        let v03_envelope = Envelope::parse(&v03_body).expect("0.3 envelope");
        let v1_envelope = Envelope::parse(&v1_body).expect("1.0 envelope");
        let method = v03_envelope.method.as_deref().expect("a method");
        let params = v03_envelope.params.map(|p| p.get().as_bytes());
        let translated = v03::request_to_v1(method, params).unwrap_or_else(|e| panic!("{v03_name}: {e}"));
        assert_eq!(translated.operation().method_name(), v1_envelope.method.as_deref().expect("1.0 method"));
        let v1_params: Value = serde_json::from_str(v1_envelope.params.expect("params").get()).expect("params");
        assert_same(&to_value(&translated), &v1_params, *texts, v03_name);

        let operation = Operation::from_method_name(v1_envelope.method.as_deref().unwrap_or_default()).expect("1.0 op");
        let parsed = Request::parse(operation, v1_envelope.params).expect("1.0 params");
        let (back_method, back_params) = v03::request_from_v1(parsed).expect("to 0.3");
        assert_eq!(back_method, method, "{v1_name}");
        let v03_params: Value = serde_json::from_str(v03_envelope.params.expect("params").get()).expect("params");
        assert_same(&to_value(&back_params), &v03_params, *texts, v1_name);
    }
}

#[test]
fn errors_match_in_both_directions() {
    let v03_error = response("jsonrpc-0.3-20-error-tasks-get-not-found.txt")["error"].clone();
    let v1_error = response("jsonrpc-1.0-20-error-GetTask-not-found.txt")["error"].clone();
    let translated = v03::error_to_v1(serde_json::from_value(v03_error.clone()).expect("0.3 error"));
    assert_eq!(to_value(&translated), v1_error, "exactly the 1.0 body, ErrorInfo included");
    let back = v03::error_from_v1(serde_json::from_value(v1_error).expect("1.0 error"));
    assert_eq!(to_value(&back), v03_error, "exactly the 0.3 body, data null");

    let not_cancelable: ErrorObject =
        serde_json::from_value(response("jsonrpc-1.0-09-CancelTask-already-canceled.txt")["error"].clone())
            .expect("error");
    assert_eq!(v03::error_from_v1(not_cancelable).code, -32002);
    let version: ErrorObject =
        serde_json::from_value(response("jsonrpc-1.0-25-error-version-2.0.txt")["error"].clone()).expect("error");
    assert_eq!(v03::error_from_v1(version).code, -32603, "0.3 has no VersionNotSupported");
    let mixed = response("jsonrpc-0.3-21-error-0.3-method-with-1.0-header.txt")["error"].clone();
    let mixed = v03::error_to_v1(serde_json::from_value(mixed).expect("0.3 error"));
    assert_eq!(mixed.kind(), model::ErrorKind::Internal);
    assert!(mixed.message.contains("Expected version '0.3'"), "{}", mixed.message);
}

#[test]
fn the_same_task_read_twice_in_0_3_is_the_same_1_0_task() {
    // 0.3-22 reads back (historyLength 1) the task 0.3-01 created.
    let created = response("jsonrpc-0.3-01-message-send.txt")["result"].clone();
    let read = response("jsonrpc-0.3-22-tasks-get-of-1.0-task.txt")["result"].clone();
    let created = v03::result_to_v1(Operation::GetTask, &bytes(&created)).expect("task");
    let read = v03::result_to_v1(Operation::GetTask, &bytes(&read)).expect("task");
    assert_eq!(created, read);
}

#[test]
fn the_sdk_card_in_both_shapes() {
    let captured = response("00-card-get.txt");
    let mut card: model::AgentCard = serde_json::from_value(captured.clone()).expect("a 1.0 card");
    // Derive the 0.3 fields instead of copying them: drop the served ones first.
    for legacy in ["url", "preferredTransport", "protocolVersion", "additionalInterfaces"] {
        assert!(card.extra.remove(legacy).is_some(), "{legacy} is in the capture");
    }
    assert_eq!(v03::hybrid_card(&card), captured, "the SDK's own hybrid card, rebuilt");

    let v03_card = to_value(&v03::card_from_v1(card.clone()));
    for legacy in ["url", "preferredTransport", "protocolVersion", "additionalInterfaces", "name", "skills"] {
        assert_eq!(v03_card[legacy], captured[legacy], "{legacy}");
    }
    assert!(v03_card.get("supportedInterfaces").is_none());

    // Read as a 0.3 card, the capture describes exactly its 0.3 interfaces.
    let as_v03: v03::AgentCard = serde_json::from_value(captured.clone()).expect("a 0.3 card");
    let v1 = v03::card_to_v1(as_v03);
    let legacy: Vec<&Value> = captured["supportedInterfaces"]
        .as_array()
        .expect("interfaces")
        .iter()
        .filter(|i| i["protocolVersion"] == "0.3")
        .collect();
    assert_eq!(to_value(&v1.supported_interfaces), json!(legacy));
    assert_eq!(v1.skills, card.skills);
    assert_eq!(v1.capabilities, card.capabilities);
}
