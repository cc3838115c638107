use super::*;
use serde_json::{Value, json};

#[test]
fn reads_and_writes_the_seed_shapes() {
    let task = json!({"id": "9b1c1d1e-0000-4000-8000-000000000001", "sessionId": "s",
            "status": {"state": "input-required", "timestamp": "2026-12-02T10:21:24.310624Z",
                "message": {"role": "agent", "parts": [{"type": "text", "text": "Which environment?"}]}},
            "artifacts": [{"name": "a", "parts": [{"type": "data", "data": {"k": 1}},
                {"type": "file", "file": {"name": "f.txt", "mimeType": "text/plain", "bytes": "aGk="}}]}],
            "history": [{"role": "user", "parts": [{"type": "text", "text": "deploy"}]}]});
    let parsed: Task = serde_json::from_value(task.clone()).expect("task");
    assert_eq!(serde_json::to_value(&parsed).ok(), Some(task));
}

#[test]
fn later_states_keep_their_meaning_in_and_degrade_out() {
    let status: TaskStatus = serde_json::from_value(json!({"state": "rejected"})).expect("status");
    assert_eq!(status.state, model::TaskState::Rejected);
    assert_eq!(serde_json::to_value(&status).ok(), Some(json!({"state": "failed"})));
    let auth = TaskStatus { state: model::TaskState::AuthRequired, message: None, timestamp: None };
    assert_eq!(serde_json::to_value(&auth).ok(), Some(json!({"state": "input-required"})));
    let odd: TaskStatus = serde_json::from_value(json!({"state": "paused"})).expect("status");
    assert_eq!(odd.state, model::TaskState::Unspecified);
}

#[test]
fn made_up_ids_in_1_0() {
    let task: Task = serde_json::from_value(json!({"id": "t", "status": {"state": "completed",
            "message": {"role": "agent", "parts": [{"type": "text", "text": "done"}]}},
            "artifacts": [{"parts": []}, {"index": 5, "parts": []}],
            "history": [{"role": "user", "parts": [{"type": "text", "text": "hi"}]}]}))
    .expect("task");
    let v1 = task.into_v1();
    assert_eq!(v1.context_id, "t");
    assert_eq!(v1.artifacts.iter().map(|a| a.artifact_id.as_str()).collect::<Vec<_>>(), ["artifact-0", "artifact-5"]);
    let question = v1.status.message.expect("message");
    assert_eq!((question.task_id.as_deref(), question.context_id.as_deref()), (Some("t"), Some("t")));
    assert!(uuid::Uuid::parse_str(&question.message_id).is_ok());
    assert_eq!(v1.history[0].role, model::Role::User);
}

#[test]
fn the_caller_keeps_its_own_id() {
    let v1 = model::Task { id: "server-id".into(), context_id: "ctx".into(), ..Default::default() };
    let early = Task::from_v1(v1, Some("caller-id"));
    assert_eq!((early.id.as_str(), early.session_id.as_deref()), ("caller-id", Some("ctx")));
    let json = serde_json::to_value(&early).expect("json");
    assert_eq!(json["artifacts"], Value::Array(vec![]), "the seed always lists artifacts");
}
