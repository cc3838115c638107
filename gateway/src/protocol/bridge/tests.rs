use super::*;
use crate::protocol::early_ids::MemoryEarlyIds;
use futures::StreamExt;
use serde_json::json;

fn v03(operation: Operation) -> Answering {
    Answering {
        dialect: Dialect::V03,
        binding: Binding::JsonRpc,
        operation,
        rpc_id: Some(json!("r1")),
        early_id: None,
        new_task: false,
        early_ids: None,
        early_scope: None,
    }
}

fn json_of(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).expect("json")
}

#[test]
fn unary_results_and_errors_become_0_3() {
    let task = json!({"jsonrpc": "2.0", "id": "r1", "result": {"task": {"id": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_COMPLETED"}}}});
    let out = json_of(&unary_v03(&v03(Operation::SendMessage), &serde_json::to_vec(&task).unwrap()));
    assert_eq!(out["result"]["kind"], "task");
    assert_eq!(out["result"]["status"]["state"], "completed");
    assert_eq!(out["id"], "r1");
    let error = json!({"jsonrpc": "2.0", "id": "r1", "error": {"code": -32001, "message": "Task not found",
            "data": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND"}]}});
    let out = json_of(&unary_v03(&v03(Operation::GetTask), &serde_json::to_vec(&error).unwrap()));
    assert_eq!(out["error"], json!({"code": -32001, "message": "Task not found", "data": null}));
    let out = json_of(&unary_v03(&v03(Operation::GetTask), b"<html>"));
    assert_eq!(out["error"]["code"], -32006);
    assert_eq!(out["error"]["data"], Value::Null);
}

#[tokio::test]
async fn stream_events_become_0_3_even_when_split_across_chunks() {
    let update = json!({"jsonrpc": "2.0", "id": "r1", "result": {"statusUpdate": {"taskId": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_COMPLETED"}}}});
    let event = format!("data: {update}\r\n\r\n");
    let (a, b) = event.as_bytes().split_at(20);
    let chunks: Vec<Result<Bytes, axum::Error>> =
        vec![Ok(Bytes::from_static(b": ka\r\n\r\n")), Ok(Bytes::copy_from_slice(a)), Ok(Bytes::copy_from_slice(b))];
    let body = Body::from_stream(futures::stream::iter(chunks));
    let map = CallerStream::new(body.into_data_stream(), Converter::V03(v03(Operation::SendStreamingMessage)));
    let out: Vec<Bytes> = map.map(|c| c.expect("chunk")).collect().await;
    assert_eq!(out.len(), 2);
    assert_eq!(&out[0][..], b": ka\r\n\r\n");
    let text = std::str::from_utf8(&out[1]).unwrap();
    let data = text.strip_prefix("data: ").and_then(|t| t.strip_suffix("\r\n\r\n")).expect("framed");
    let v = json_of(data.as_bytes());
    assert_eq!(v["result"]["kind"], "status-update");
    assert_eq!(v["result"]["final"], true);
    assert_eq!(v["result"]["status"]["state"], "completed");
}

fn early(operation: Operation, ids: &Arc<MemoryEarlyIds>) -> Answering {
    Answering {
        dialect: Dialect::Early,
        binding: Binding::Rest,
        operation,
        rpc_id: None,
        early_id: Some("e-1".into()),
        new_task: true,
        early_ids: Some(ids.clone() as Arc<dyn EarlyIds>),
        early_scope: Some(Arc::from("alice")),
    }
}

#[test]
fn early_callers_get_whole_tasks_under_their_id_and_the_agent_id_is_remembered() {
    let ids = Arc::new(MemoryEarlyIds::new(std::time::Duration::from_secs(60)));
    let answer = json!({"task": {"id": "agent-1", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}});
    let (status, out) =
        unary_early(&early(Operation::SendMessage, &ids), http::StatusCode::OK, &serde_json::to_vec(&answer).unwrap());
    assert_eq!(status, http::StatusCode::OK);
    let out = json_of(&out);
    assert_eq!(
        (&out["id"], &out["sessionId"], &out["status"]["state"]),
        (&json!("e-1"), &json!("c"), &json!("completed"))
    );
    assert_eq!(ids.find("alice", "e-1").map(|t| t.task_id), Some("agent-1".into()));
    let error = br#"{"error":{"code":404,"status":"NOT_FOUND","message":"Task not found"}}"#;
    let (status, out) = unary_early(&early(Operation::GetTask, &ids), http::StatusCode::NOT_FOUND, error);
    assert_eq!((status, json_of(&out)), (http::StatusCode::NOT_FOUND, json!({"detail": "Task not found"})));
}

#[test]
fn an_early_stream_cut_before_its_task_ends_gets_a_last_failed_task() {
    let ids = Arc::new(MemoryEarlyIds::new(std::time::Duration::from_secs(60)));
    let answering = early(Operation::SendStreamingMessage, &ids);
    let mut converter = Converter::Early(answering.clone(), Box::new(SnapshotBuilder::new("e-1")));
    let working = br#"{"statusUpdate":{"taskId":"agent-2","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}"#;
    let first = converter.event(working).expect("snapshot");
    assert!(std::str::from_utf8(&first).unwrap().contains(r#""id":"e-1""#));
    assert_eq!(ids.find("alice", "e-1").map(|t| t.task_id), Some("agent-2".into()));
    let last = converter.end().expect("a failed task");
    let text = std::str::from_utf8(&last).unwrap();
    assert!(text.contains(r#""state":"failed""#), "{text}");
    let mut done = Converter::Early(answering, Box::new(SnapshotBuilder::new("e-1")));
    let completed =
        br#"{"statusUpdate":{"taskId":"agent-2","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}"#;
    assert!(done.event(completed).is_some());
    assert!(done.end().is_none(), "a finished stream ends as it is");
}
